package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/version"
)

// summaryHead is how every summary line starts: its type, then the
// running build's toolVersion.
func summaryHead() string {
	v, _ := json.Marshal(version.String())
	return `{"type":"summary","toolVersion":` + string(v) + `,`
}

// outLine is one line of --output json as a test reads it.
type outLine struct {
	Type   string
	Raw    string
	Fields map[string]json.RawMessage
}

// str returns the string field name of l ("" when absent or not a string).
func (l outLine) str(name string) string {
	var s string
	_ = json.Unmarshal(l.Fields[name], &s)
	return s
}

// parseJSONLines parses every line of stdout as one JSON object with
// exactly one top-level "type", a non-empty string, and fails the test
// otherwise. stdout must be empty or end with a newline.
func parseJSONLines(t *testing.T, stdout string) []outLine {
	t.Helper()
	if stdout == "" {
		return nil
	}
	if !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout does not end with a newline:\n%s", stdout)
	}
	var lines []outLine
	for _, raw := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		l := outLine{Raw: raw, Fields: map[string]json.RawMessage{}}
		dec := json.NewDecoder(strings.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("stdout line is not a JSON object: %q", raw)
		}
		types := 0
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				t.Fatalf("stdout line %q: %v", raw, err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("stdout line %q: %v", raw, err)
			}
			k := key.(string)
			if k == "type" {
				types++
				if err := json.Unmarshal(v, &l.Type); err != nil {
					t.Fatalf("stdout line %q: type is not a string", raw)
				}
			}
			l.Fields[k] = v
		}
		if _, err := dec.Token(); err != nil {
			t.Fatalf("stdout line %q: %v", raw, err)
		}
		if dec.More() || dec.InputOffset() != int64(len(raw)) {
			t.Fatalf("stdout line holds more than one JSON value: %q", raw)
		}
		if types != 1 || l.Type == "" {
			t.Fatalf("stdout line has %d \"type\" field(s), type %q; want one, not empty: %q", types, l.Type, raw)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestOutputArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"run", "--output", "json"}, "json"},
		{[]string{"--output=json", "run"}, "json"},
		{[]string{"--output", "json", "run", "--output=text"}, "text"},
		{[]string{"run", "--", "--output", "json"}, ""},
		{[]string{"run", "--output"}, ""},
	} {
		if got := outputArg(tc.args); got != tc.want {
			t.Errorf("outputArg(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// checkJSONRun checks the output of one command run with --output json:
// every stdout line is a JSON object with a type this tool prints, the
// fields of each type are the shared ones; a summary (when wantSummary)
// comes once, after every progress line; a failure (code != 0) ends with
// an error line whose exit is code and whose message is the sentence
// stderr ends with, and stderr holds nothing else (status is on stdout).
// It returns the lines.
func checkJSONRun(t *testing.T, what string, code int, stdout, stderr string, wantSummary bool) []outLine {
	t.Helper()
	lines := parseJSONLines(t, stdout)
	summaries := 0
	for i, l := range lines {
		switch l.Type {
		case ui.LineProgress:
			_, table := l.Fields["table"]
			_, done := l.Fields["done"]
			if !(table && done) && l.str("step") == "" {
				t.Errorf("%s: a progress line with neither table and done nor step: %s", what, l.Raw)
			}
			if summaries > 0 {
				t.Errorf("%s: a progress line after the summary: %s", what, l.Raw)
			}
		case ui.LineStatus, ui.LineWarning:
			if l.str("message") == "" || len(l.Fields) != 2 {
				t.Errorf("%s: a %s line is not {type, message}: %s", what, l.Type, l.Raw)
			}
		case ui.LineSummary:
			summaries++
		case ui.LineError:
			if i != len(lines)-1 {
				t.Errorf("%s: an error line that is not the last: %s", what, l.Raw)
			}
		default:
			t.Errorf("%s: a line of unknown type %q: %s", what, l.Type, l.Raw)
		}
	}
	if want := map[bool]int{true: 1, false: 0}[wantSummary]; summaries != want {
		t.Errorf("%s: %d summary lines, want %d:\n%s", what, summaries, want, stdout)
	}
	if code == ExitOK {
		if len(lines) > 0 && lines[len(lines)-1].Type == ui.LineError {
			t.Errorf("%s: exit 0 but an error line", what)
		}
		if stderr != "" {
			t.Errorf("%s: exit 0, stderr not empty:\n%s", what, stderr)
		}
		return lines
	}
	if len(lines) == 0 || lines[len(lines)-1].Type != ui.LineError {
		t.Fatalf("%s: exit %d but stdout does not end with an error line:\n%s", what, code, stdout)
	}
	last := lines[len(lines)-1]
	var e ui.ErrorLine
	if err := json.Unmarshal([]byte(last.Raw), &e); err != nil || len(last.Fields) != 3 {
		t.Fatalf("%s: error line %s is not {type, exit, message} (%v)", what, last.Raw, err)
	}
	if e.Exit != code || e.Message == "" {
		t.Errorf("%s: error line %s, want exit %d and a message", what, last.Raw, code)
	}
	wantErr := "bifrost-migrate: " + e.Message + "\n"
	if code == ExitUsage {
		// The hint names the help of the command that failed.
		wantErr += usageHint.FindString(strings.TrimPrefix(stderr, wantErr))
	}
	if stderr != wantErr || (code == ExitUsage && !strings.HasSuffix(wantErr, " --help' for usage.\n")) {
		t.Errorf("%s: stderr\n%s\nwant only the error's sentence\n%s", what, stderr, wantErr)
	}
	return lines
}

// Usage errors, found before the command runs or by it, and interruptions
// end stdout with an error line under --output json; text mode prints
// nothing on stdout.
func TestJSONErrorLineWithoutServices(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--output", "json", "bogus"}, ExitUsage},
		{[]string{"--output=json", "run", "--no-such-flag"}, ExitUsage},
		{[]string{"run", "--no-such-flag", "--output", "json"}, ExitUsage},
		{[]string{"--output", "json", "verify", "extra"}, ExitUsage},
		{[]string{"--output", "json", "run", "--concurrency", "0"}, ExitUsage},
		{[]string{"--output", "json", "replay"}, ExitUsage},
		{[]string{"--output", "json", "--quiet", "--verbose", "init"}, ExitUsage},
		{[]string{"--output", "json", "fixtures", "load", "--generate", "-1"}, ExitUsage},
		{[]string{"--output", "json", "init", "--containers", "/nonexistent/layout.json"}, ExitUsage},
	} {
		f, out, errOut := newTestFactory(nil)
		code := Execute(context.Background(), f, tc.args)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
		checkJSONRun(t, strings.Join(tc.args, " "), code, out.String(), errOut.String(), false)
	}
	for _, args := range [][]string{{"bogus"}, {"run", "--concurrency", "0"}, {"--output", "yaml", "run"}} {
		f, out, _ := newTestFactory(nil)
		if code := Execute(context.Background(), f, args); code != ExitUsage || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing on stdout", args, code, out.String())
		}
	}
}

// A command interrupted (SIGINT cancels the root context) ends with an
// error line with exit 130.
func TestJSONErrorLineWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"--output", "json", "run"},
		{"--output", "json", "verify"},
		{"--output", "json", "replay", "--since", "2025-11-20T14:00:00Z"},
	} {
		f, out, errOut := newTestFactory(map[string]string{
			"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/a;BlobEndpoint=http://127.0.0.1:1/a",
			"CosmosDBConnection":        "AccountEndpoint=http://127.0.0.1:1/;AccountKey=a2V5",
		})
		code := Execute(ctx, f, args)
		if code != ExitInterrupted {
			t.Errorf("%q: exit %d, want 130: %s", args, code, errOut)
			continue
		}
		lines := checkJSONRun(t, strings.Join(args, " "), code, out.String(), errOut.String(), false)
		if msg := lines[len(lines)-1].str("message"); !strings.HasPrefix(msg, "interrupted: ") {
			t.Errorf("%q: message %q", args, msg)
		}
	}
}

// The error line carries the sentence scrubbed of the settings' secrets,
// as stderr does.
func TestJSONErrorLineIsScrubbed(t *testing.T) {
	const key = "c2VjcmV0LWFjY291bnQta2V5LW5vdC10by1wcmludA=="
	f, out, errOut := newTestFactory(map[string]string{
		"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";",
	})
	printError(f, fmt.Errorf("could not open %s", "AccountKey="+key), ExitFatal, true)
	lines := checkJSONRun(t, "printError", ExitFatal, out.String(), errOut.String(), false)
	if strings.Contains(out.String()+errOut.String(), key) || lines[0].str("message") != "could not open AccountKey=***" {
		t.Errorf("stdout %s stderr %s", out.String(), errOut.String())
	}
}

// TestJSONOutputEveryCommand is the acceptance test of the output
// convention: init, fixtures load, run, verify and replay with --output
// json against the emulators, succeeding and failing; every stdout line
// is a JSON object with a type, and each failure ends with an error line
// whose exit is the exit status.
func TestJSONOutputEveryCommand(t *testing.T) {
	t.Parallel()
	e := &replayEnv{verifyEnv: newVerifyEnv(t)}
	var err error
	if e.tables, err = azure.NewTablesClient(e.acct, azure.Options{}); err != nil {
		t.Fatal(err)
	}
	e.loadFixtures()
	names := []string{"--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir}
	types := func(lines []outLine) []string {
		var ts []string
		for _, l := range lines {
			if len(ts) == 0 || ts[len(ts)-1] != l.Type {
				ts = append(ts, l.Type)
			}
		}
		return ts
	}
	summaryOfLines := func(lines []outLine) outLine {
		i := slices.IndexFunc(lines, func(l outLine) bool { return l.Type == ui.LineSummary })
		return lines[i]
	}

	// init: converges the env's database (created by newVerifyEnv):
	// status lines, then the plan.
	code, stdout, stderr := e.cli("--output", "json", "init", "--database", e.db)
	lines := checkJSONRun(t, "init", code, stdout, stderr, true)
	if code != ExitOK || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineSummary}) ||
		!strings.HasPrefix(lines[0].str("message"), "Cosmos DB ") || !strings.HasPrefix(summaryOfLines(lines).Raw, summaryHead()+`"database":"`+e.db+`"`) {
		t.Errorf("init: exit %d:\n%s", code, stdout)
	}

	// fixtures load --generate into tables of its own.
	genPrefix := testenv.Name("g")
	t.Cleanup(func() {
		for _, table := range fixtures.Tables() {
			_, _ = e.tables.DeleteTable(context.WithoutCancel(context.Background()), genPrefix+table, nil)
		}
	})
	code, stdout, stderr = e.cli("--output", "json", "fixtures", "load", "--generate", "20", "--table-prefix", genPrefix)
	lines = checkJSONRun(t, "fixtures load", code, stdout, stderr, true)
	if code != ExitOK || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineProgress, ui.LineSummary}) {
		t.Errorf("fixtures load: exit %d:\n%s", code, stdout)
	}
	finished := map[string]string{}
	for _, l := range lines {
		if l.Type == ui.LineProgress && string(l.Fields["finished"]) == "true" {
			finished[l.str("table")] = string(l.Fields["done"])
		}
	}
	if want := map[string]string{"Config": "0", "Entities": "20", "Relationships": "80"}; fmt.Sprint(finished) != fmt.Sprint(want) {
		t.Errorf("fixtures load: finished progress lines %v, want %v", finished, want)
	}

	// run: exit 3 (the fixtures' dead letters).
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "run"}, names...)...)
	lines = checkJSONRun(t, "run", code, stdout, stderr, true)
	if code != ExitPartial || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineProgress, ui.LineSummary, ui.LineError}) {
		t.Errorf("run: exit %d, want 3:\n%s", code, stdout)
	}
	if s := summaryOfLines(lines); string(s.Fields["deadLetters"]) != "6" || s.Fields["ru"] == nil {
		t.Errorf("run: summary %s", s.Raw)
	}
	// run again: the saved run is complete; "already completed" is a
	// status line now, not text on stderr.
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "run"}, names...)...)
	lines = checkJSONRun(t, "run again", code, stdout, stderr, true)
	if code != ExitPartial || !slices.ContainsFunc(lines, func(l outLine) bool {
		return l.Type == ui.LineStatus && strings.Contains(l.str("message"), "already completed")
	}) {
		t.Errorf("run again: exit %d:\n%s", code, stdout)
	}
	// A dry run into a database that does not exist warns.
	code, stdout, stderr = e.cli("--output", "json", "--quiet", "run", "--dry-run", "--database", testenv.Name("nodb"),
		"--table-prefix", e.prefix, "--blob-container", e.blobs)
	lines = checkJSONRun(t, "run --dry-run", code, stdout, stderr, true)
	if code != ExitPartial || !slices.Equal(types(lines), []string{ui.LineWarning, ui.LineSummary, ui.LineError}) ||
		!strings.Contains(lines[0].str("message"), "before the real run") {
		t.Errorf("run --dry-run: exit %d:\n%s", code, stdout)
	}
	// A usage error of run.
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "run", "--show", "2"}, names...)...)
	if lines = checkJSONRun(t, "run --show 2", code, stdout, stderr, false); code != ExitUsage || len(lines) != 1 {
		t.Errorf("run --show 2: exit %d:\n%s", code, stdout)
	}

	// verify: exit 3 (the rows run dead-lettered are not migrated).
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "verify"}, names...)...)
	lines = checkJSONRun(t, "verify", code, stdout, stderr, true)
	if code != ExitPartial || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineProgress, ui.LineStatus, ui.LineSummary, ui.LineError}) {
		t.Errorf("verify: exit %d, want 3:\n%s", code, stdout)
	}
	if s := summaryOfLines(lines); string(s.Fields["notMigrated"]) != "6" || string(s.Fields["ok"]) != "false" {
		t.Errorf("verify: summary %s", s.Raw)
	}
	for _, l := range lines {
		if l.Type == ui.LineProgress && (l.Fields["ruPerSecond"] == nil || l.Fields["throttledShare"] == nil) {
			t.Errorf("verify: progress line without the RU fields: %s", l.Raw)
		}
	}
	// verify of a table that does not exist: exit 1 before anything is
	// compared.
	code, stdout, stderr = e.cli("--output", "json", "verify", "--database", e.db, "--table-prefix", testenv.Name("none"),
		"--blob-container", e.blobs, "--state-dir", e.stateDir)
	lines = checkJSONRun(t, "verify a missing table", code, stdout, stderr, false)
	if code != ExitFatal || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineError}) ||
		!strings.Contains(lines[len(lines)-1].str("message"), "Config does not exist in "+e.acct.TableEndpoint) {
		t.Errorf("verify a missing table: exit %d:\n%s", code, stdout)
	}

	// replay: one row changed in the tables since run; it is replaced.
	since := e.since()
	e.mergeRow("Config", "GLOBAL", smtpRK, map[string]any{"Description": "changed on the tables"})
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "replay", "--since", since}, names...)...)
	lines = checkJSONRun(t, "replay", code, stdout, stderr, true)
	if code != ExitOK || !slices.Equal(types(lines), []string{ui.LineStatus, ui.LineProgress, ui.LineSummary}) {
		t.Errorf("replay: exit %d, want 0:\n%s", code, stdout)
	}
	if s := summaryOfLines(lines); !strings.Contains(s.Raw, `"replaced":1`) || string(s.Fields["complete"]) != "true" {
		t.Errorf("replay: summary %s", s.Raw)
	}
	// replay the same window after the application changed the doc too:
	// a conflict, exit 4.
	doc := e.readDoc("entities", "GLOBAL", smtpID)
	doc["description"] = "changed in Cosmos DB"
	e.replaceDoc("entities", doc)
	e.mergeRow("Config", "GLOBAL", smtpRK, map[string]any{"Description": "changed on the tables again"})
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "--quiet", "replay", "--since", since}, names...)...)
	lines = checkJSONRun(t, "replay with a conflict", code, stdout, stderr, true)
	if code != ExitConflicts || !slices.Equal(types(lines), []string{ui.LineSummary, ui.LineError}) {
		t.Errorf("replay with a conflict: exit %d, want 4:\n%s", code, stdout)
	}
	// A usage error of replay, found before it connects.
	code, stdout, stderr = e.cli(append([]string{"--output", "json", "replay", "--since", "yesterday"}, names...)...)
	if lines = checkJSONRun(t, "replay --since yesterday", code, stdout, stderr, false); code != ExitUsage || len(lines) != 1 {
		t.Errorf("replay --since yesterday: exit %d:\n%s", code, stdout)
	}
}

// usageHint is the line after a usage error: the help of the command that
// failed.
var usageHint = regexp.MustCompile(`^Run 'bifrost-migrate( [a-z]+)* --help' for usage\.\n$`)
