package cmd

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/store"
)

// The words of the start-up checks (checkEndpoints): the status line
// while one waits for a busy endpoint, and the sentence when one fails.
// Both are read from the fault (azure.FaultOf), as the retry rule is.

// firstContact is p's retry rule at first contact: until deadline, each
// attempt at most probeTimeout, and each retry said on o (when not nil)
// as a status line, but for a retry for the same reason as the one
// before it.
func (p probe) firstContact(deadline time.Time, o *ui.Output) azure.FirstContact {
	var (
		mu   sync.Mutex
		said string
	)
	return azure.FirstContact{Deadline: deadline, AttemptTimeout: probeTimeout, OnRetry: func(e azure.RetryEvent) {
		line := retryLine(p.service, hostPort(p.endpoint), e.Fault)
		mu.Lock()
		again := line == said
		said = line
		mu.Unlock()
		if o != nil && !again {
			o.Status("%s", line)
		}
	}}
}

// retryLine is the status line of a start-up check of service at
// endpoint (host:port) that tries again after an attempt failed with f.
func retryLine(service, endpoint string, f *store.Fault) string {
	return fmt.Sprintf("%s at %s %s; trying again (up to %s)", service, endpoint, attemptWords(f), roughDuration(startupBudget))
}

// attemptWords says what an endpoint did with an attempt that failed
// with f: "answered 503 Service Unavailable", "gave no answer in time",
// "closed the connection without an answer", "reset the connection", or
// "failed (…)" with the transport's words.
func attemptWords(f *store.Fault) string {
	if f == nil {
		return "failed"
	}
	if f.Status > 0 {
		return fmt.Sprintf("answered %d %s", f.Status, http.StatusText(f.Status))
	}
	t := azure.TransportOf(f)
	switch t.Failure {
	case azure.TimedOut:
		return "gave no answer in time"
	case azure.ConnClosed:
		return "closed the connection without an answer"
	case azure.ConnReset:
		return "reset the connection"
	}
	if t.Words != "" {
		return "failed (" + t.Words + ")"
	}
	return "failed"
}

// failed is the error of p's check, which failed with err: the cause in
// a few words and what to do, read from err's fault.
func (p probe) failed(err error) *EndpointError {
	remedy := "check " + p.settings
	f := azure.FaultOf(err)
	switch {
	case f.TLS == store.TLSUntrusted:
		remedy = "check that the host name in " + p.settings + " is the service's and that this machine trusts its certificate " +
			"(TLS is verified for every endpoint but an emulator's on a loopback address)"
	case f.TLS == store.TLSNotSpoken:
		remedy = "check the endpoint's scheme (http or https) in " + p.settings
	case f.TLS == store.TLSRefused:
		remedy = "check that the endpoint in " + p.settings + " is the service's"
	case f.Kind.RetryableAtFirstContact():
		remedy = "try again later, or check " + p.settings
	}
	return &EndpointError{Service: p.service, Endpoint: hostPort(p.endpoint), Cause: probeCause(err), Remedy: remedy, Err: err}
}

// roughDuration rounds d for people: seconds under 2 minutes, minutes
// under 2 hours, else hours and minutes.
func roughDuration(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(math.Ceil(d.Seconds())))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
	}
	h := int(d.Hours())
	return fmt.Sprintf("%d h %02d min", h, int(math.Round(d.Minutes()))-60*h)
}
