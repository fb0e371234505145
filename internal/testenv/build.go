package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds bifrost-migrate into a temporary directory of t and returns
// the binary's path, for tests that run it as a process of its own (to
// kill it, or to signal it). flags go to go build before the package
// (-ldflags, as a release build sets them).
func Build(t testing.TB, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bifrost-migrate")
	args := append([]string{"build", "-o", bin}, flags...)
	b := exec.Command("go", append(args, "github.com/bifrost/bifrost-migrate")...)
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
