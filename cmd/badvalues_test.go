package cmd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	provision "github.com/bifrost/bifrost-migrate/init"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/verify"
)

// closedAccounts are settings of every account at a port nobody listens
// on: a command that took a bad value and went on would fail there (exit
// 1), and the recorder would see its request.
var closedAccounts = map[string]string{
	"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
		";TableEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;",
	"CosmosDBConnection": "AccountEndpoint=http://127.0.0.1:1/;AccountKey=" + azure.EmulatorCosmosKey + ";",
}

// badValueCases are a bad value of every flag that refuses some, for each
// command whose check differs (a flag group checks alike for every command
// that binds it), with the sentence each prints: the flag, the value as
// read (cut short) and what it wants.
var badValueCases = []struct {
	args []string
	want string
}{
	// Every command's.
	{[]string{"--output", "yaml", "run"}, `--output "yaml": want text or json`},
	{[]string{"--retry-timeout", "0s", "verify"}, `--retry-timeout "0s": want a positive duration such as 30s or 2m`},
	{[]string{"--retry-timeout", "-1m", "init"}, `--retry-timeout "-1m0s": want a positive duration such as 30s or 2m`},
	{[]string{"--log-file", "/nonexistent/dir/log", "version"}, `--log-file /nonexistent/dir/log: no such file or directory`},
	// The parser's, one per kind of value.
	{[]string{"run", "--max-ru", "abc"}, `--max-ru "abc": want a number`},
	{[]string{"run", "--concurrency", "1.5"}, `--concurrency "1.5": want a whole number`},
	{[]string{"fixtures", "load", "--seed", "-1"}, `--seed "-1": want a whole number`},
	{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--interval", "10"}, `--interval "10": want a duration such as 90s, 10m or 1h30m`},
	{[]string{"run", "--strict=maybe"}, `--strict "maybe": want true or false`},
	{[]string{"--database", "bad/db", "init"}, `--database "bad/db": want a database id of ` + provision.IDRule},
	{[]string{"run", "--database", ""}, `--database "": want a database id of ` + provision.IDRule},
	{[]string{"verify", "--database", "db "}, `--database "db ": want a database id of ` + provision.IDRule},
	{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--database", "a#b"}, `--database "a#b": want a database id of ` + provision.IDRule},
	{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--database", strings.Repeat("d", 256)}, `--database "` + strings.Repeat("d", 64) + `"…: want a database id of ` + provision.IDRule},
	// init.
	{[]string{"init", "--containers", "/nonexistent/layout.json"}, `--containers /nonexistent/layout.json: no such file or directory`},
	// run, and the engine's flags (replay and reverse bind the same group).
	{[]string{"run", "--max-errors", "-1"}, `--max-errors "-1": want a whole number, 0 or more (0: never stop)`},
	{[]string{"run", "--show", "-2"}, `--show "-2": want a whole number, 0 or more`},
	{[]string{"run", "--tables", "Config,Users"}, `--tables "Users": want Config, Entities or Relationships, comma-separated`},
	{[]string{"run", "--state-dir", ""}, `--state-dir "": want a directory`},
	{[]string{"run", "--concurrency", "0"}, `--concurrency "0": want a whole number, 1 or more`},
	{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--concurrency", "-3"}, `--concurrency "-3": want a whole number, 1 or more`},
	{[]string{"run", "--max-ru", "-5"}, `--max-ru "-5": want a positive number of request units per second`},
	{[]string{"run", "--max-ru", "+Inf"}, `--max-ru "+Inf": want a positive number of request units per second`},
	{[]string{"run", "--blob-threshold", "0"}, `--blob-threshold "0": want a positive number of bytes`},
	{[]string{"run", "--execution-ttl", "forever"}, `--execution-ttl "forever": want remaining, full or none`},
	{[]string{"verify", "--execution-ttl", "Full"}, `--execution-ttl "Full": want remaining, full or none`},
	{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--relationships", "drop"}, `--relationships "drop": want keep or migrate`},
	{[]string{"run", "--progress-interval", "0s"}, `--progress-interval "0s": want a positive duration such as 10s or 1m`},
	{[]string{"run", "--metrics-addr", "not-an-address"}, `--metrics-addr "not-an-address": want HOST:PORT such as 127.0.0.1:9464 (or 0.0.0.0:9464 to serve beyond this machine)`},
	{[]string{"verify", "--metrics-addr", "127.0.0.1:99999"}, `--metrics-addr "127.0.0.1:99999": want HOST:PORT with a port from 0 to 65535`},
	// verify.
	{[]string{"verify", "--sample", "0"}, `--sample "0": want a fraction F with 0 < F <= 1`},
	{[]string{"verify", "--sample", "1.5"}, `--sample "1.5": want a fraction F with 0 < F <= 1`},
	{[]string{"verify", "--tables", "Confg"}, `--tables "Confg": want Config, Entities or Relationships, comma-separated`},
	{[]string{"verify", "--state-dir", " "}, `--state-dir " ": want a directory`},
	{[]string{"verify", "--report", "r.json", "--report-format", "xml"}, `--report-format "xml": want json or html`},
	{[]string{"verify", "--report", "verify.pdf"}, `--report "verify.pdf": want a name ending in .json, .html or .htm, or the format given with --report-format json or html`},
	{[]string{"verify", "--report", "out/verify.txt", "--sample", "0.5"}, `--report "out/verify.txt": want a name ending in .json, .html or .htm, or the format given with --report-format json or html`},
	// replay and reverse.
	{[]string{"replay", "--since", "yesterday"}, `--since "yesterday": want an RFC 3339 time such as 2025-11-20T14:00:00Z`},
	{[]string{"reverse", "--since", "2025-11-20 14:00:00"}, `--since "2025-11-20 14:00:00": want an RFC 3339 time such as 2025-11-20T14:00:00Z`},
	{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--follow", "--interval", "0s"}, `--interval "0s": want a positive duration such as 10s or 1m`},
	{[]string{"reverse", "--since", "2025-11-20T14:00:00Z", "--follow", "--skew", "-1s"}, `--skew "-1s": want a duration of 0s or more`},
	{[]string{"replay", "--since", "2025-11-20T14:00:00Z", "--tables", "Users"}, `--tables "Users": want Config, Entities or Relationships, comma-separated`},
	// fixtures load.
	{[]string{"fixtures", "load", "--generate", "-1"}, `--generate "-1": want a whole number, 0 or more`},
	{[]string{"fixtures", "load", "--generate", "5", "--base-time", "yesterday"}, `--base-time "yesterday": want an RFC 3339 time such as 2026-11-21T00:00:00Z`},
	{[]string{"fixtures", "load", "--concurrency", "0"}, `--concurrency "0": want a whole number, 1 or more`},
	{[]string{"fixtures", "load", "--tables", "Config,Users"}, `--tables "Users": want Config, Entities or Relationships, comma-separated`},
	// A value of any size is quoted short.
	{[]string{"run", "--execution-ttl", strings.Repeat("x", 100_000)}, `--execution-ttl "` + strings.Repeat("x", 64) + `"…: want remaining, full or none`},
}

// anyValue are the flags that take any value, or whose values are refused
// by a check of their own (said where): TestEveryBadValueNamesItsFlag does
// not look for them in badValueCases.
var anyValue = map[string]string{
	"help":           "no value",
	"account":        "any name (fixtures load compares it with the accounts: TestFixturesLoadRefusesForeignAccounts)",
	"table-prefix":   "hidden, tests only",
	"blob-container": "hidden, tests only",
	"page-size":      "hidden, tests only",
	// The connection settings never show their value (it may hold a key).
	"tables-connection": "TestSecretsNeverReachOutput",
	"blob-connection":   "TestSecretsNeverReachOutput",
	"cosmos-connection": "TestSecretsNeverReachOutput",
	"tables-endpoint":   "TestBadFlagValuesSpeakPlainly",
	"blob-endpoint":     "TestBadFlagValuesSpeakPlainly",
	"cosmos-endpoint":   "TestBadFlagValuesSpeakPlainly",
}

// TestEveryBadValueNamesItsFlag: each bad value of badValueCases exits 2
// before any request with its exact sentence, which names the flag, and
// the hint about --help; and every flag of every command but a bool (the
// parser's sentence, which --strict shows) and those of anyValue has a
// case.
func TestEveryBadValueNamesItsFlag(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range badValueCases {
		name, _, _ := strings.Cut(strings.TrimPrefix(tc.want, "--"), " ")
		covered[strings.TrimSuffix(name, ":")] = true
		rec := recorder.New(nil)
		f, out, errOut := newTestFactory(closedAccounts)
		f.Transport = rec
		dir := t.TempDir()
		// Commands that would start write into a folder of the test's.
		args := append([]string{}, tc.args...)
		if !slicesContainsPrefix(args, "--state-dir") && (args[0] == "run" || args[0] == "replay" || args[0] == "reverse" || args[0] == "verify") {
			args = append(args, "--state-dir", filepath.Join(dir, "state"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code := Execute(ctx, f, args)
		cancel()
		command := "bifrost-migrate " + strings.Join(commandWords(tc.args), " ")
		want := "bifrost-migrate: " + tc.want + "\nRun '" + command + " --help' for usage.\n"
		if code != ExitUsage || errOut.String() != want || out.Len() != 0 {
			t.Errorf("%.200q: exit %d, stdout %q, stderr:\n%.500s\nwant exit 2 and:\n%.500s", tc.args, code, out, errOut, want)
		}
		if r := rec.Requests(); len(r) != 0 {
			t.Errorf("%.200q: requests sent: %v", tc.args, r)
		}
	}

	f, _, _ := newTestFactory(nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		visit := func(fl *pflag.Flag) {
			switch {
			case fl.Hidden && anyValue[fl.Name] == "":
				t.Errorf("hidden flag --%s: say in anyValue why it has no case", fl.Name)
			case covered[fl.Name], anyValue[fl.Name] != "":
			case fl.Value.Type() == "bool":
				// Only the parser refuses a value: its sentence
				// (flagSentence), which --strict shows.
			default:
				t.Errorf("%s --%s: no case in badValueCases, and not in anyValue", c.CommandPath(), fl.Name)
			}
		}
		c.LocalFlags().VisitAll(visit)
	}
	walk(NewRootCmd(f))
}

// commandWords are the words of args that name the command.
func commandWords(args []string) []string {
	var out []string
	for _, a := range args {
		switch a {
		case "init", "run", "verify", "replay", "reverse", "fixtures", "load", "version":
			out = append(out, a)
		}
	}
	return out
}

func slicesContainsPrefix(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// TestDatabaseIsCheckedBeforeAnyRequest: `--database 'bad/db'` (an id
// Cosmos DB refuses: it holds "/") exits 2 naming --database and the rule
// for every command that uses the database, and no connection reaches the
// accounts — all of them at a listener that counts what it accepts.
func TestDatabaseIsCheckedBeforeAnyRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	at := "http://" + l.Addr().String()
	env := map[string]string{
		"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
			";TableEndpoint=" + at + "/devstoreaccount1;BlobEndpoint=" + at + "/devstoreaccount1;",
		"CosmosDBConnection": "AccountEndpoint=" + at + "/;AccountKey=" + azure.EmulatorCosmosKey + ";",
	}
	since := "2025-11-20T14:00:00Z"
	for _, args := range [][]string{
		{"init"}, {"init", "--dry-run"}, {"run"}, {"run", "--dry-run"}, {"verify"},
		{"replay", "--since", since}, {"reverse", "--since", since},
	} {
		state := filepath.Join(t.TempDir(), "state")
		args = append(args, "--database", "bad/db")
		if args[0] != "init" {
			args = append(args, "--state-dir", state)
		}
		f, out, errOut := newTestFactory(env)
		code := Execute(context.Background(), f, args)
		want := `bifrost-migrate: --database "bad/db": want a database id of 1-255 characters without "/", "\", "?", "#" or surrounding spaces` +
			"\nRun 'bifrost-migrate " + args[0] + " --help' for usage.\n"
		if code != ExitUsage || errOut.String() != want || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", args, code, out, errOut, want)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Errorf("%q: the state directory was made (%v)", args, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the accounts", n)
	}
}

// TestReportFormatByName: the format a --report name says, and the names
// verify refuses without --report-format ("").
func TestReportFormatByName(t *testing.T) {
	name := func(f verify.Format) string {
		if f == nil {
			return ""
		}
		return f.Name()
	}
	for file, want := range map[string]string{
		"verify.json": "json", "V.JSON": "json", "/dev/stdout": "json", "dir.d/report": "json",
		"verify.html": "html", "verify.HTM": "html",
		"verify.pdf": "", "verify.txt": "", "verify.json.gz": "", "report.out": "",
	} {
		if got := name(formatByName(verify.Formats(), file)); got != want {
			t.Errorf("formatByName(%q) = %q, want %q", file, got, want)
		}
	}
	// --report-format chooses for any name.
	for _, format := range []string{"json", "html"} {
		o := VerifyOptions{Sample: 1, ReportFile: "report.out", ReportFormat: format, Formats: verify.Formats()}
		if err := (verifyFlags{&o}).validate(); err != nil || name(o.reportFormat()) != format {
			t.Errorf("--report report.out --report-format %s: %v, format %q", format, err, name(o.reportFormat()))
		}
	}
}

// TestAdoptedBadValueIsTheStates: a run's state that holds a transform
// option this version does not take (execution-ttl=forever) is said to be
// the state's, not a bad --execution-ttl the user did not give.
func TestAdoptedBadValueIsTheStates(t *testing.T) {
	dir := t.TempDir()
	f, _, _ := newTestFactory(closedAccounts)
	target := f.targetFingerprint("bifrost", "execution-data")
	if target == "" {
		t.Fatal("no target fingerprint")
	}
	state := `{"version":2,"runId":"r1","fingerprint":"blob-threshold=32768;execution-ttl=forever;relationships=keep;strict=false;target=` + target +
		`","started":"2026-11-20T14:00:00Z","updated":"2026-11-20T15:00:00Z","tables":[{"table":"Config"}]}`
	writeFile(t, filepath.Join(dir, "state.json"), state)
	for _, command := range []string{"verify", "replay"} {
		args := []string{command, "--state-dir", dir}
		if command == "replay" {
			args = append(args, "--since", "2026-11-20T14:00:00Z")
		}
		rec := recorder.New(nil)
		f, out, errOut := newTestFactory(closedAccounts)
		f.Transport = rec
		code := Execute(context.Background(), f, args)
		want := "bifrost-migrate: " + filepath.Join(dir, "state.json") + " holds --execution-ttl forever, which this version cannot use; give the option as a flag\n"
		if code != ExitFatal || errOut.String() != want || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and:\n%s", command, code, out, errOut, want)
		}
		if r := rec.Requests(); len(r) != 0 {
			t.Errorf("%s: requests sent: %v", command, r)
		}
	}
}
