package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/spf13/pflag"
)

// TestFlagTypos: a mistyped flag gets the closest one suggested, and the
// hint names the subcommand's help.
func TestFlagTypos(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--dryrun"}, "bifrost-migrate: unknown flag --dryrun; did you mean --dry-run?\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"verify", "--sampel", "0.1"}, "bifrost-migrate: unknown flag --sampel; did you mean --sample?\nRun 'bifrost-migrate verify --help' for usage.\n"},
		{[]string{"replay", "--sinse", "x"}, "bifrost-migrate: unknown flag --sinse; did you mean --since?\nRun 'bifrost-migrate replay --help' for usage.\n"},
		{[]string{"fixtures", "load", "--genrate", "5"}, "bifrost-migrate: unknown flag --genrate; did you mean --generate?\nRun 'bifrost-migrate fixtures load --help' for usage.\n"},
		// an inherited flag, and a prefix
		{[]string{"run", "--verbos"}, "bifrost-migrate: unknown flag --verbos; did you mean --verbose?\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"run", "--retry"}, "bifrost-migrate: unknown flag --retry; did you mean --retry-timeout?\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"run", "--zzzzzz"}, "bifrost-migrate: unknown flag --zzzzzz\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"run", "--max-ru", "abc"}, "bifrost-migrate: --max-ru \"abc\": want a number\nRun 'bifrost-migrate run --help' for usage.\n"},
		{[]string{"run", "--max-ru"}, "bifrost-migrate: --max-ru needs a value: a number\nRun 'bifrost-migrate run --help' for usage.\n"},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage || out.Len() != 0 || errOut.String() != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

// goInternals are texts of Go's packages, types and decoders that no
// message an operator reads may hold.
var goInternals = []string{"strconv.", "json:", "open /", "context canceled", "context deadline", "invalid syntax", "time: ",
	"*url.", "url.Error", "pflag", "cobra", "float64", "int64", "time.Duration", "[]string", "map[", "%!", "<nil>", "0x"}

// TestBadFlagValuesSpeakPlainly walks every flag of every command with a
// value it refuses (a number, a duration, a bool, an enumeration, a time,
// a connection setting) and checks that the message names the flag and
// holds none of goInternals. The accounts are on a closed port, so that a
// command that accepts the value fails fast at its first request.
func TestBadFlagValuesSpeakPlainly(t *testing.T) {
	closed := testenv.ClosedPort(t)
	env := map[string]string{
		"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
			";TableEndpoint=http://" + closed + "/devstoreaccount1;BlobEndpoint=http://" + closed + "/devstoreaccount1;",
		"CosmosDBConnection": "AccountEndpoint=http://" + closed + "/;AccountKey=" + azure.EmulatorCosmosKey + ";",
	}
	bad := func(f *pflag.Flag) []string {
		switch f.Value.Type() {
		case "float64", "int", "int64", "uint":
			return []string{"abc", "1e999x"}
		case "duration":
			return []string{"abc", "10"}
		case "bool":
			return []string{"maybe"}
		}
		switch f.Name {
		case "output", "execution-ttl", "relationships", "report-format":
			return []string{"xml"}
		case "since":
			return []string{"yesterday", "2026-13-45T00:00:00Z"}
		case "tables":
			return []string{"Confg"}
		case "tables-connection", "blob-connection", "cosmos-connection":
			return []string{"garbage", "AccountName=x;AccountKey=%%%"}
		case "tables-endpoint", "blob-endpoint", "cosmos-endpoint":
			return []string{"::not a url", "ftp://x"}
		case "containers":
			return []string{filepath.Join(t.TempDir(), "missing-containers")}
		case "metrics-addr":
			return []string{"not-an-address"}
		}
		return nil
	}
	f, _, _ := newTestFactory(env)
	root := NewRootCmd(f)
	walked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c.Name() == "__complete" {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		visit := func(fl *pflag.Flag) {
			for _, v := range bad(fl) {
				walked++
				args := append(append([]string{}, path...), "--"+fl.Name+"="+v, "--retry-timeout=2s")
				if fl.Name == "retry-timeout" {
					args = args[:len(args)-1]
				}
				f, out, errOut := newTestFactory(env)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				code := Execute(ctx, f, args)
				cancel()
				// What an operator reads: stderr, and stdout when it
				// failed (a completion script on stdout is data).
				msg := errOut.String()
				if code != ExitOK {
					msg += out.String()
				}
				// version, completion and status (without --check) use
				// no account: a connection setting is not theirs to
				// refuse.
				offline := path[0] == "version" || path[0] == "completion" || path[0] == "status"
				if code == ExitOK && (fl.Value.Type() != "string" || !offline) {
					t.Errorf("%q: exit 0 for a bad value:\n%s", args, msg)
				}
				for _, g := range goInternals {
					if strings.Contains(msg, g) {
						t.Errorf("%q: the message holds %q:\n%s", args, g, msg)
					}
				}
			}
		}
		c.Flags().VisitAll(visit)
		c.InheritedFlags().VisitAll(visit)
	}
	walk(root)
	if walked < 100 {
		t.Errorf("walked %d flag values, want every command's", walked)
	}
}
