package cmd

import (
	"context"
	"net"
	"path/filepath"
	"testing"
)

// TestObserveFlagErrors: a bad --metrics-addr, --progress-interval or
// --report-format, and a --metrics-addr already in use, are usage errors
// whose sentence names the flag and the form it wants.
func TestObserveFlagErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().String()
	state := filepath.Join(t.TempDir(), "state")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--metrics-addr", "not-an-address"},
			"bifrost-migrate: --metrics-addr \"not-an-address\": want HOST:PORT such as 127.0.0.1:9464 (or 0.0.0.0:9464 to serve beyond this machine)\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"reverse", "--since", "2026-11-20T14:00:00Z", "--metrics-addr", "127.0.0.1:99999"},
			"bifrost-migrate: --metrics-addr \"127.0.0.1:99999\": want HOST:PORT with a port from 0 to 65535\nRun 'bifrost-migrate reverse --help' for usage.\n"},
		{[]string{"run", "--progress-interval", "0s"},
			"bifrost-migrate: --progress-interval \"0s\": want a positive duration such as 10s or 1m\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"verify", "--report", "r.json", "--report-format", "xml"},
			"bifrost-migrate: --report-format \"xml\": want json or html\nRun 'bifrost-migrate verify --help' for usage.\n"},
		{[]string{"verify", "--report-format", "html"},
			"bifrost-migrate: --report-format needs --report FILE\nRun 'bifrost-migrate verify --help' for usage.\n"},
		{[]string{"run", "--state-dir", state, "--metrics-addr", busy},
			"bifrost-migrate: --metrics-addr " + busy + ": cannot listen there: address already in use\nRun 'bifrost-migrate run --help' for usage.\n"},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage || out.Len() != 0 || errOut.String() != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

// A missing host in --metrics-addr is loopback: nothing is served beyond
// the machine unless a host says so.
func TestMetricsAddrDefaultsToLoopback(t *testing.T) {
	for in, want := range map[string]string{":9464": "127.0.0.1:9464", "0.0.0.0:0": "0.0.0.0:0", "localhost:80": "localhost:80", "[::1]:9": "[::1]:9"} {
		if got, err := metricsAddr(in); err != nil || got != want {
			t.Errorf("metricsAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
