//go:build !unix

package testenv

// boundPort returns a port that was free a moment ago: without a bound,
// unlistening socket, another server may take it before the test ends.
func boundPort() (string, func(), error) {
	addr, err := freeAddr()
	return addr, func() {}, err
}
