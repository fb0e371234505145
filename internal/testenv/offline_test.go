package testenv

import (
	"net"
	"strings"
	"testing"
)

// TestClosedPortRefuses: a connection to the port is refused, and no
// server can take the port while the test holds it.
func TestClosedPortRefuses(t *testing.T) {
	addr := ClosedPort(t)
	if c, err := net.Dial("tcp", addr); err == nil || !strings.Contains(err.Error(), "connection refused") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener took %s", addr)
	}
}
