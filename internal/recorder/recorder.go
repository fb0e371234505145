// Package recorder provides an http.RoundTripper that records the requests
// it carries, so that tests can prove what a command sent: that a second
// `init` wrote nothing, that `verify` read in bulk, that `replay` sent
// If-Match. It records method and URL path only, never headers or bodies,
// so no key or token is kept.
package recorder

import (
	"net/http"
	"sync"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string // URL path, without query string
}

// Transport records every request and passes it to Base. The zero value
// is not usable; call New. It is safe for concurrent use.
type Transport struct {
	base http.RoundTripper

	mu       sync.Mutex
	requests []Request
}

// New returns a Transport that sends requests through base, or through
// http.DefaultTransport when base is nil.
func New(base http.RoundTripper) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base}
}

// RoundTrip records the request and sends it. A request is recorded even
// when sending fails, since it may have reached the server.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.requests = append(t.requests, Request{Method: req.Method, Path: req.URL.Path})
	t.mu.Unlock()
	return t.base.RoundTrip(req)
}

// Requests returns a copy of the recorded requests in the order they were
// sent.
func (t *Transport) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.requests...)
}

// Count returns how many requests used method (e.g. http.MethodPut).
func (t *Transport) Count(method string) int {
	return t.CountPath(method, "")
}

// CountPath returns how many requests used method on path; an empty path
// matches every path.
func (t *Transport) CountPath(method, path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.requests {
		if r.Method == method && (path == "" || r.Path == path) {
			n++
		}
	}
	return n
}

// ByMethod returns the number of requests per method.
func (t *Transport) ByMethod() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[string]int)
	for _, r := range t.requests {
		m[r.Method]++
	}
	return m
}

// Writes returns the recorded requests whose method is not GET, HEAD or
// OPTIONS. Note that Cosmos DB queries are POSTs and count as writes here;
// callers that query filter them by path.
func (t *Transport) Writes() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Request
	for _, r := range t.requests {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets every recorded request.
func (t *Transport) Reset() {
	t.mu.Lock()
	t.requests = nil
	t.mu.Unlock()
}
