package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds bifrost-migrate into a temporary directory of t and returns
// the binary's path, for tests that run it as a process of its own (to
// kill it, or to signal it).
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bifrost-migrate")
	b := exec.Command("go", "build", "-o", bin, "github.com/bifrost/bifrost-migrate")
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
