package cmd

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// scripts/image.sh builds the container image from nothing but its
// context (FROM scratch: nothing is pulled), checks its entry point, user,
// working directory and volume, and runs --version and --help in it. It
// needs buildah or podman (Debian packages), which test.sh does not
// install: without either, the test is skipped. buildah comes first: it
// runs the image with --isolation chroot, which needs nothing more of the
// machine.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	var engine string
	for _, e := range []string{"buildah", "podman"} {
		if _, err := exec.LookPath(e); err == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		t.Skip("neither buildah nor podman is installed (apt-get install buildah podman): the image is not built")
	}
	tag := "localhost/bifrost-migrate:" + strings.ToLower(testenv.Name("test"))
	c := exec.Command("../scripts/image.sh", "--engine", engine, "--tag", tag, "--allow-dirty")
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	t.Cleanup(func() { _ = exec.Command(engine, "rmi", tag).Run() })
	if err != nil {
		t.Fatalf("image.sh --engine %s: %v\n%s%s", engine, err, out.String(), errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "bifrost-migrate v") || !strings.HasPrefix(lines[1], "revision: ") ||
		!strings.HasPrefix(lines[2], "go: ") || !strings.Contains(out.String(), "Move Bifrost's data from Azure Table Storage") {
		t.Errorf("--version and --help in the image printed:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "built with "+engine+"; --version and --help ran in it") {
		t.Errorf("image.sh did not say it checked the image:\n%s", errOut.String())
	}
}
