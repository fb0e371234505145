//go:build unix

package testenv

import (
	"fmt"
	"net/netip"
	"syscall"
)

// boundPort binds a TCP socket to a free port of 127.0.0.1 without
// listening, and without SO_REUSEADDR, so no other socket can bind the
// port while it is held and every connection to it is refused.
func boundPort() (string, func(), error) {
	// Close on exec, under the fork lock as the net package does: a
	// command the test starts does not inherit the socket.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return "", nil, fmt.Errorf("a socket to hold a closed port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("binding a closed port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("the closed port's address: %w", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		syscall.Close(fd)
		return "", nil, fmt.Errorf("the closed port's address is %T, not IPv4", sa)
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)).String()
	return addr, func() { syscall.Close(fd) }, nil
}
