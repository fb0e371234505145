//go:build !unix

package testenv

import "net"

// boundPort returns a port that was free a moment ago: without a bound,
// unlistening socket, another server may take it before the test ends.
func boundPort() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	return addr, func() {}, ln.Close()
}
