package cmd

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// emulatorsScript runs scripts/emulators.sh with args, its folder dir
// and its temporary folder tmp, and returns its exit status, stdout and
// stderr.
func emulatorsScript(t *testing.T, dir, tmp string, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, "../scripts/emulators.sh", append(os.Environ(), "BIFROST_EMULATORS_DIR="+dir, "TMPDIR="+tmp), args...)
}

// scripts/emulators.sh run on its own: start leaves the emulators
// running and prints the exports of their settings, env prints them
// again, stop stops them and removes their folder; without a command it
// is a usage error that leaves nothing behind. It installs the emulators
// from npm on first use, as test.sh does, so it runs with the emulators
// (BIFROST_INTEGRATION=1, set by test.sh).
func TestEmulatorsScriptStartEnvStop(t *testing.T) {
	if os.Getenv("BIFROST_INTEGRATION") != "1" {
		t.Skip("needs npm and the emulators' cache: run through ./test.sh")
	}
	tmp := t.TempDir()
	dir := filepath.Join(t.TempDir(), "emulators")

	if code, out, errOut := emulatorsScript(t, dir, tmp); code != 2 || out != "" || !strings.Contains(errOut, "usage: scripts/emulators.sh start|env|stop") {
		t.Errorf("without a command: exit %d, stdout %q, stderr %q; want exit 2 and the usage", code, out, errOut)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("without a command it left %d file(s) in its temporary folder", len(left))
	}
	if code, _, errOut := emulatorsScript(t, dir, tmp, "env"); code != 1 || !strings.Contains(errOut, "no emulators running") {
		t.Errorf("env before start: exit %d, %q; want exit 1 and no emulators running", code, errOut)
	}

	code, started, errOut := emulatorsScript(t, dir, tmp, "start")
	t.Cleanup(func() { emulatorsScript(t, dir, tmp, "stop") })
	if code != 0 {
		t.Fatalf("start: exit %d\n%s", code, errOut)
	}
	exports := regexp.MustCompile(`(?m)^export (BIFROST_TABLES_CONNECTION|CosmosDBConnection|BIFROST_COSMOS_FEED_CONNECTION)='([^']+)'$`).FindAllStringSubmatch(started, -1)
	if len(exports) != 3 || strings.Count(started, "\n") != 3 {
		t.Fatalf("start printed, want the three exports:\n%s", started)
	}
	if !strings.Contains(errOut, "pids, logs and settings in "+dir) {
		t.Errorf("start does not name its folder %s:\n%s", dir, errOut)
	}
	if code, again, _ := emulatorsScript(t, dir, tmp, "env"); code != 0 || again != started {
		t.Errorf("env: exit %d\n%s\nwant what start printed:\n%s", code, again, started)
	}
	addrs := map[string]string{}
	for _, e := range exports {
		addr := regexp.MustCompile(`(?:TableEndpoint|AccountEndpoint)=http://([0-9.:]+)/`).FindStringSubmatch(e[2])
		if addr == nil {
			t.Fatalf("%s has no endpoint on this machine: %s", e[1], e[2])
		}
		addrs[e[1]] = addr[1]
		conn, err := net.Dial("tcp", addr[1])
		if err != nil {
			t.Errorf("%s: nothing listens at %s after start: %v", e[1], addr[1], err)
			continue
		}
		conn.Close()
	}

	if code, _, errOut := emulatorsScript(t, dir, tmp, "stop"); code != 0 || !strings.Contains(errOut, "emulators stopped") {
		t.Errorf("stop: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stop left %s: %v", dir, err)
	}
	for name, addr := range addrs {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			t.Errorf("%s: %s still listens after stop", name, addr)
		}
	}
	if code, _, errOut := emulatorsScript(t, dir, tmp, "env"); code != 1 || !strings.Contains(errOut, "no emulators running") {
		t.Errorf("env after stop: exit %d, %q; want exit 1", code, errOut)
	}
}
