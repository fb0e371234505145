package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// TestSinceLaterThanNowIsRefused: replay and reverse with a --since later
// than now, beyond --skew (a mistyped year, local time typed as UTC),
// exit 2 with one sentence that names now in UTC and the value given,
// before any request: nothing is written, not even the state directory.
func TestSinceLaterThanNowIsRefused(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	const advice = " is later than now (2026-11-24T09:30:00Z, UTC): no change is that recent, so nothing would be read; give a time in the past, in UTC or with its offset\n"
	for _, command := range []string{"replay", "reverse"} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--since", "2027-01-01T00:00:00Z"}, "--since 2027-01-01T00:00:00Z"},
			// Local time (UTC+1) 61 s ahead: beyond the default --skew of 60 s.
			{[]string{"--since", "2026-11-24T10:31:01+01:00"}, "--since 2026-11-24T10:31:01+01:00 (2026-11-24T09:31:01Z)"},
			{[]string{"--since", "2026-11-24T09:40:00.5Z", "--follow", "--skew", "5m"}, "--since 2026-11-24T09:40:00.5Z"},
		} {
			f, out, errOut := newTestFactory(nil)
			f.ServiceNow = func() time.Time { return now }
			rec := recorder.New(nil)
			f.Transport = rec
			stateDir := filepath.Join(t.TempDir(), "state")
			args := append(append([]string{command}, tc.args...), "--state-dir", stateDir)
			code := Execute(context.Background(), f, args)
			first, _, _ := strings.Cut(errOut.String(), "Run '")
			if want := "bifrost-migrate: " + tc.want + advice; code != ExitUsage || first != want {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and\n%s", args, code, errOut, want)
			}
			if out.Len() != 0 || len(rec.Requests()) != 0 {
				t.Errorf("%v: stdout %q, %d request(s) sent; want neither", args, out, len(rec.Requests()))
			}
			if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
				t.Errorf("%v: the state directory was created", args)
			}
		}
	}
}

// TestSinceUpToNowIsTaken: a --since in the past, or later than now by no
// more than --skew (clocks differ), is what replay and reverse read from.
func TestSinceUpToNowIsTaken(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		args []string
		want time.Time
	}{
		{[]string{"--since", "2025-11-20T14:00:00Z"}, time.Date(2025, 11, 20, 14, 0, 0, 0, time.UTC)},
		{[]string{"--since", "2026-11-24T10:30:59+01:00"}, now.Add(59 * time.Second)},
		{[]string{"--since", "2026-11-24T09:34:00Z", "--follow", "--skew", "5m"}, now.Add(4 * time.Minute)},
	} {
		f, _, _ := newTestFactory(nil)
		f.ServiceNow = func() time.Time { return now }
		var replayed, reversed time.Time
		replay := NewCmdReplay(f, func(_ context.Context, o *ReplayOptions) error { replayed = o.Engine.Since; return nil })
		reverse := NewCmdReverse(f, func(_ context.Context, o *ReverseOptions) error { reversed = o.Engine.Since; return nil })
		for _, c := range []interface {
			SetArgs([]string)
			Execute() error
		}{replay, reverse} {
			c.SetArgs(tc.args)
			if err := c.Execute(); err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
		}
		if !replayed.Equal(tc.want) || !reversed.Equal(tc.want) {
			t.Errorf("%v: since %s (replay), %s (reverse), want %s", tc.args, replayed, reversed, tc.want)
		}
	}
}

// TestSinceBeforeTheMigrationWarns: where the state directory knows when
// the migration started, a --since more than a day before it gets one
// warning line saying how far back it reaches; within a day, or with no
// state, nothing is said; a state that cannot be read is said to be so.
func TestSinceBeforeTheMigrationWarns(t *testing.T) {
	dir := t.TempDir()
	state := `{"version":2,"runId":"r-20261120","fingerprint":"f","started":"2026-11-20T12:00:00Z","updated":"2026-11-20T13:00:00Z","done":true,"tables":[{"table":"Config","done":true}]}`
	if err := os.WriteFile(filepath.Join(dir, migrate.StateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, migrate.StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir   string
		since time.Time
		want  string
	}{
		{dir, time.Date(2026, 11, 9, 0, 0, 0, 0, time.UTC), "reverse: --since 2026-11-09T00:00:00Z reaches 11 days 12 h before the migration started (run r-20261120 at 2026-11-20T12:00:00Z): every change since then is in the window; check that it is the time you meant\n"},
		{dir, time.Date(2026, 11, 19, 11, 0, 0, 0, time.UTC), "reverse: --since 2026-11-19T11:00:00Z reaches 1 day 1 h before the migration started (run r-20261120 at 2026-11-20T12:00:00Z): every change since then is in the window; check that it is the time you meant\n"},
		{dir, time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC), ""},
		{dir, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), ""},
		{t.TempDir(), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), ""},
		{broken, time.Date(2026, 11, 9, 0, 0, 0, 0, time.UTC), "reverse: " + filepath.Join(broken, migrate.StateFile) + " cannot be read, so --since is not checked against when the migration started\n"},
	} {
		var out, errOut bytes.Buffer
		warnReach(ui.NewOutput("reverse", &out, &errOut, false, true, nil), tc.dir, tc.since)
		if errOut.String() != tc.want || out.Len() != 0 {
			t.Errorf("since %s: stderr %q, want %q (stdout %q)", tc.since, errOut.String(), tc.want, out.String())
		}
	}
}

// TestReplayWarnsOfASinceBeforeTheMigration: replay says so, as a
// warning line, when --since is days before the run it replays after
// (whose state is in --state-dir), and goes on.
func TestReplayWarnsOfASinceBeforeTheMigration(t *testing.T) {
	e := newReplayEnv(t) // run started at testNow
	code, stdout, stderr := e.cli(e.replayArgs("--output", "json", "--since", "2026-11-18T00:00:00Z", "--dry-run")...)
	lines := checkJSONRun(t, "replay --dry-run", code, stdout, stderr, true)
	var warnings []string
	for _, l := range lines {
		if l.Type == ui.LineWarning {
			warnings = append(warnings, l.str("message"))
		}
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "--since 2026-11-18T00:00:00Z reaches 3 days 12 h before the migration started (run ") {
		t.Errorf("exit %d, warnings %q; want one that says how far back --since reaches", code, warnings)
	}
	if code == ExitUsage || code == ExitFatal {
		t.Errorf("exit %d: replay did not go on:\n%s", code, stderr)
	}
}
