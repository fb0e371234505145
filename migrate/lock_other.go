//go:build !unix

package migrate

import (
	"fmt"
	"os"
	"runtime"
)

// tryLock fails: the state directory is locked with flock(2), which this
// operating system does not have. bifrost-migrate runs on Linux (macOS
// and the BSDs have flock too); rather than run without the guarantee of
// one process per state directory, run and replay refuse to start here.
// Dry runs, which take no lock, still work.
func tryLock(f *os.File) (bool, error) {
	return false, fmt.Errorf("%s has no flock(2) to lock the state directory with; run bifrost-migrate on Linux", runtime.GOOS)
}
