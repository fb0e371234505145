package ui

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
)

// VerboseTransport prints one line per HTTP request on stderr (--verbose):
// method, scheme, host and path, then the status or the error, and the
// time it took. Query strings (which can carry a shared access signature),
// headers and bodies are never printed. It is safe for concurrent use.
type VerboseTransport struct {
	// Next carries the requests (nil: azure.NewTransport()); W gets the
	// lines; Now times the requests.
	Next http.RoundTripper
	W    io.Writer
	Now  func() time.Time
	mu   sync.Mutex
	once sync.Once
}

// RoundTrip sends req through Next and prints its line.
func (v *VerboseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v.once.Do(func() {
		if v.Next == nil {
			v.Next = azure.NewTransport()
		}
	})
	start := v.Now()
	resp, err := v.Next.RoundTrip(req)
	took := v.Now().Sub(start).Round(time.Millisecond)
	where := req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath()
	var outcome string
	if err != nil {
		outcome = "error: " + azure.ScrubError(err).Error()
	} else {
		outcome = resp.Status
	}
	v.mu.Lock()
	fmt.Fprintf(v.W, "http: %s %s → %s (%s)\n", req.Method, where, outcome, took)
	v.mu.Unlock()
	return resp, err
}
