package testenv

import (
	"errors"
	"net"
	"net/http"
	"testing"
)

// ClosedPort returns 127.0.0.1:PORT where nothing listens (a port that
// was free a moment ago).
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// NoRequests is a transport that fails the test on any request: for a
// command that must answer without one.
type NoRequests struct{ T testing.TB }

// RoundTrip fails the test and the request.
func (n NoRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	n.T.Errorf("a request was sent: %s %s", r.Method, r.URL)
	return nil, errors.New("no request expected")
}
