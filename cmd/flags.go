package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// flagGroup is a set of flags that binds and validates as one (cli/cli's
// cmdutil.AddJSONFlags): bind adds its flags to a flag set; validate,
// once they are parsed, checks their values (and keeps what it parsed
// from them) and returns a usage error that names the flag at fault.
type flagGroup interface {
	bind(fl *pflag.FlagSet)
	validate() error
}

// badValue is the usage error of a flag given a value it does not take:
// `--flag "value": want …` (want says what it takes), the value cut short
// (words.Quote), so that every such error names its flag and reads alike.
func badValue(flag string, value any, want string) error {
	return UsageError(fmt.Errorf("%s %s: want %s", flag, words.Quote(fmt.Sprint(value)), want))
}

// addFlags binds groups to the flags of c and makes c validate them, in
// that order, before it runs (after any PreRunE c already has), so that
// a command cannot bind a group and forget its checks.
func addFlags(c *cobra.Command, groups ...flagGroup) {
	for _, g := range groups {
		g.bind(c.Flags())
	}
	before := c.PreRunE
	c.PreRunE = func(c *cobra.Command, args []string) error {
		if before != nil {
			if err := before(c, args); err != nil {
				return err
			}
		}
		for _, g := range groups {
			if err := g.validate(); err != nil {
				return err
			}
		}
		return nil
	}
}

// tablesFlag is --tables: the tables a command reads or writes, always in
// the order Config, Entities, Relationships; none given means all three.
type tablesFlag struct {
	// what says what the command does with the tables, for the help
	// ("migrate", "check"); more is said after the default.
	what, more string
	list       string
	// tables receives the tables chosen, in order, once validated; nil
	// means all three.
	tables *[]string
}

func (t *tablesFlag) bind(fl *pflag.FlagSet) {
	fl.StringVar(&t.list, "tables", "", "comma-separated `list` of tables to "+t.what+" (default: Config,Entities,Relationships"+t.more+")")
}

func (t *tablesFlag) validate() error {
	if t.list == "" {
		return nil
	}
	var err error
	*t.tables, err = parseTables(t.list)
	return err
}

// parseTables checks a --tables list and returns it in read order; a
// usage error names the table it does not know.
func parseTables(list string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(transform.Tables(), t) {
			return nil, badValue("--tables", t, joinOr(transform.Tables())+", comma-separated")
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b string) int { return transform.TableOrder(a) - transform.TableOrder(b) })
	return slices.Compact(out), nil
}

// stateDirFlag is --state-dir, into dir; help says what the command keeps
// there.
type stateDirFlag struct {
	dir  *string
	help string
}

func (s stateDirFlag) bind(fl *pflag.FlagSet) {
	fl.StringVar(s.dir, "state-dir", migrate.DefaultStateDir, "`directory` of "+s.help)
}

func (s stateDirFlag) validate() error {
	if strings.TrimSpace(*s.dir) == "" {
		return badValue("--state-dir", *s.dir, "a directory")
	}
	return nil
}

// testNames are the hidden flags with which tests and benchmarks give a
// command names of their own: --table-prefix (put before every table
// name, into prefix) and --blob-container (the container of execution
// data).
type testNames struct {
	prefix        *string
	BlobContainer string
}

func (n *testNames) bind(fl *pflag.FlagSet) {
	fl.StringVar(n.prefix, "table-prefix", "", "put this before every table name (tests, benchmarks side by side)")
	fl.StringVar(&n.BlobContainer, "blob-container", fixtures.BlobContainer, "the blob container of execution data (tests)")
	_ = fl.MarkHidden("table-prefix")
	_ = fl.MarkHidden("blob-container")
}

func (n *testNames) validate() error { return nil }

// engineHelp is what the help of the engine's flags says a command does.
type engineHelp struct {
	// concurrency: what is written at once ("rows written at once").
	concurrency string
	// stateDir: what the state directory holds (after "directory of").
	stateDir string
	// dryRun: what --dry-run does.
	dryRun string
}

// engineFlags are the flags of the engine that run, replay and reverse
// configure (migrate.Common): --concurrency, --state-dir, --dry-run and
// the hidden --table-prefix into common, with the transform's flags,
// --max-ru and the hidden --blob-container. --concurrency is parsed here
// only.
type engineFlags struct {
	common *migrate.Common
	help   engineHelp
	TransformFlags
	// RU is --max-ru.
	RU ruFlags
	// Observe are --progress-interval and --metrics-addr.
	Observe observeFlags
	testNames
}

// newEngineFlags returns the engine's flags of a command, bound into c;
// forRun chooses the transform flags' help (TransformFlags).
func newEngineFlags(c *migrate.Common, help engineHelp, forRun bool) engineFlags {
	return engineFlags{common: c, help: help, TransformFlags: TransformFlags{forRun: forRun}, testNames: testNames{prefix: &c.TablePrefix}}
}

func (e *engineFlags) bind(fl *pflag.FlagSet) {
	e.TransformFlags.bind(fl)
	fl.BoolVar(&e.common.DryRun, "dry-run", false, e.help.dryRun)
	fl.IntVar(&e.common.Concurrency, "concurrency", migrate.DefaultConcurrency,
		"the most "+e.help.concurrency+": below it, the requests in flight follow the RU budget × the latency measured")
	e.RU.bind(fl)
	e.stateDir().bind(fl)
	e.Observe.bind(fl)
	e.testNames.bind(fl)
}

func (e *engineFlags) validate() error {
	if e.common.Concurrency < 1 {
		return badValue("--concurrency", e.common.Concurrency, "a whole number, 1 or more")
	}
	if err := e.stateDir().validate(); err != nil {
		return err
	}
	if err := e.RU.validate(); err != nil {
		return err
	}
	if err := e.Observe.validate(); err != nil {
		return err
	}
	return e.TransformFlags.validate()
}

func (e *engineFlags) stateDir() stateDirFlag {
	return stateDirFlag{&e.common.StateDir, e.help.stateDir}
}

// outputArg returns the value of the last --output flag in args, read
// from the command line itself ("" when there is none): a usage error can
// stop cobra before it has parsed the flags, and with --output json that
// error too must come as a JSON line. Nothing after "--" is a flag.
func outputArg(args []string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return v
		case a == "--output" && i+1 < len(args):
			v = args[i+1]
			i++
		case strings.HasPrefix(a, "--output="):
			v = strings.TrimPrefix(a, "--output=")
		}
	}
	return v
}
