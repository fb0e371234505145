package cmd

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
)

// verboseTransport prints one line per HTTP request on stderr (--verbose):
// method, scheme, host and path, then the status or the error, and the
// time it took. Query strings (which can carry a shared access signature),
// headers and bodies are never printed. It is safe for concurrent use.
type verboseTransport struct {
	next http.RoundTripper // nil: azure.NewTransport()
	w    io.Writer
	now  func() time.Time
	mu   sync.Mutex
	once sync.Once
}

func (v *verboseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v.once.Do(func() {
		if v.next == nil {
			v.next = azure.NewTransport()
		}
	})
	start := v.now()
	resp, err := v.next.RoundTrip(req)
	took := v.now().Sub(start).Round(time.Millisecond)
	where := req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath()
	var outcome string
	if err != nil {
		outcome = "error: " + azure.ScrubError(err).Error()
	} else {
		outcome = resp.Status
	}
	v.mu.Lock()
	fmt.Fprintf(v.w, "http: %s %s → %s (%s)\n", req.Method, where, outcome, took)
	v.mu.Unlock()
	return resp, err
}
