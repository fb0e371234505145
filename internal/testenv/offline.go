package testenv

import (
	"errors"
	"net"
	"net/http"
	"testing"
)

// ClosedPort returns 127.0.0.1:PORT where a connection is refused, and
// stays refused for the test: the port is held by a socket that is bound
// but never listens. A port merely freed a moment ago can be taken by any
// server started meanwhile (an emulator, another package's test), which
// then answers instead of refusing.
func ClosedPort(t testing.TB) string {
	t.Helper()
	addr, closeFn, err := boundPort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return addr
}

// FreePort returns 127.0.0.1:PORT where nothing listened a moment ago,
// for a server the test starts to listen on.
func FreePort(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// freeAddr listens on a free port of 127.0.0.1 and closes it.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// NoRequests is a transport that fails the test on any request: for a
// command that must answer without one.
type NoRequests struct{ T testing.TB }

// RoundTrip fails the test and the request.
func (n NoRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	n.T.Errorf("a request was sent: %s %s", r.Method, r.URL)
	return nil, errors.New("no request expected")
}
