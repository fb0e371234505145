package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// scripts/release.sh, run twice, writes the same SHA256SUMS; its binary
// for this platform names the version it was given and migrates the
// fixtures as the built-in one does. Building six platforms takes minutes
// with a cold build cache, so it runs only with BIFROST_RELEASE_TEST=1
// (`BIFROST_RELEASE_TEST=1 ./test.sh -run TestReleaseScript ./cmd/`).
func TestReleaseScript(t *testing.T) {
	if os.Getenv("BIFROST_RELEASE_TEST") != "1" {
		t.Skip("set BIFROST_RELEASE_TEST=1 to build the release binaries (minutes with a cold build cache)")
	}
	e := newRunEnv(t)
	const v = "v0.0.0-releasetest"
	release := func() (dir, sums string) {
		t.Helper()
		dir = t.TempDir()
		// --allow-dirty: the tree under test may have changes that are not
		// committed yet; the bytes must be the same all the same.
		c := exec.Command("../scripts/release.sh", "--allow-dirty", "--out", dir, v)
		var errOut bytes.Buffer
		c.Stderr = &errOut
		if err := c.Run(); err != nil {
			t.Fatalf("release.sh: %v\n%s", err, errOut.String())
		}
		raw, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		return dir, string(raw)
	}
	dir, first := release()
	_, second := release()
	if first != second {
		t.Errorf("two builds differ:\n%s\n%s", first, second)
	}
	if n := strings.Count(first, "\n"); n != 6 {
		t.Errorf("SHA256SUMS lists %d binaries, want 6:\n%s", n, first)
	}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64.exe", "windows_arm64.exe"} {
		if !strings.Contains(first, "  bifrost-migrate_"+v+"_"+p+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", p, first)
		}
	}

	bin := filepath.Join(dir, "bifrost-migrate_"+v+"_"+runtime.GOOS+"_"+runtime.GOARCH)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runBinary(t, bin, e.environ(), args...)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "bifrost-migrate " + v + "\nrevision: " + strings.TrimSpace(string(head)) + " ("
	if code, out, _ := cli("version"); code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("version: exit %d:\n%s\nwant it to start with\n%s", code, out, want)
	}

	// The smoke test: the fixtures migrate and verify (their 6 rows that
	// cannot be migrated aside).
	e.load()
	if code, _, errOut := cli(e.binaryArgs("run", "--execution-ttl", "full")...); code != ExitPartial {
		t.Fatalf("run: exit %d, want 3 (the fixtures' dead letters)\n%s", code, errOut)
	}
	code, out, errOut := cli(e.binaryArgs("verify", "--execution-ttl", "full")...)
	if want := "verify found 6 row(s) not migrated"; code != ExitPartial || !strings.Contains(errOut, want) || !strings.Contains(errOut, "0 missing, 0 different and 0 orphan doc(s)") {
		t.Errorf("verify: exit %d, want 3 and %q with nothing missing, different or orphaned\n%s%s", code, want, out, errOut)
	}
}
