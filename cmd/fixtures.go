package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// FixturesLoadOptions are the flags and dependencies of
// `bifrost-migrate fixtures load`.
type FixturesLoadOptions struct {
	IO

	// Generate, when > 0, loads that many generated executions (with their
	// index rows) instead of the fixture files.
	Generate int
	Seed     uint64
	// BaseTime is what the generated executions are spread back from; zero
	// means the start of the current UTC day.
	BaseTime time.Time
	// Tables limits the tables written; empty means all.
	Tables      []string
	TablePrefix string
	Concurrency int

	// Accounts are the names given with --account: the storage accounts
	// other than the emulator's devstoreaccount1 that the load may write
	// into.
	Accounts []string

	// Writers connects to the storage account and returns the writers and
	// a description of the account without secrets. It refuses (a usage
	// error, before any request) an account that Accounts does not name
	// unless it is the emulator's; then it checks that both endpoints
	// answer.
	Writers func(ctx context.Context) (fixtures.TableWriter, fixtures.BlobWriter, string, error)
	// out is the command's output, once fixturesLoadRun made it: the
	// start-up checks say there what they wait for.
	out *ui.Output
}

// NewCmdFixtures builds `bifrost-migrate fixtures` and its `load` subcommand.
func NewCmdFixtures(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "fixtures",
		Short: "Sample data for demos and benchmarks",
		Long: `Load Bifrost's sample data, or generated executions, into the local
emulators' Table and Blob Storage.`,
		Example: `  bifrost-migrate fixtures load`,
		Args:    cobra.NoArgs,
		// Runnable only so that cobra checks Args: `fixtures bogus` is a
		// usage error (exit 2), not help with exit 0.
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(NewCmdFixturesLoad(f, nil))
	return c
}

// NewCmdFixturesLoad builds `bifrost-migrate fixtures load`. runF replaces
// the command's work in tests; nil means fixturesLoadRun.
func NewCmdFixturesLoad(f *Factory, runF func(context.Context, *FixturesLoadOptions) error) *cobra.Command {
	opts := &FixturesLoadOptions{}
	opts.Writers = func(ctx context.Context) (fixtures.TableWriter, fixtures.BlobWriter, string, error) {
		c, err := connect(ctx, f, needs{uses: tablesWrite | blobsCreate, blobContainer: fixtures.BlobContainer,
			probeTable: opts.TablePrefix + firstTable(opts.Tables), out: opts.out,
			refuse: func(tables, blobs azure.StorageAccount) error {
				return checkFixturesAccounts(tables, blobs, opts.Accounts)
			}})
		if err != nil {
			return nil, nil, "", err
		}
		return c.rowWriter, c.blobWriter, describeTables(c.tables) + " and " + describeBlobs(c.blobs, fixtures.BlobContainer), nil
	}
	c := newCommand(fixturesLoadDoc, func(c *cobra.Command) error {
		opts.IO = f.IO()
		return runWith(c, opts, runF, fixturesLoadRun)
	})
	addFlags(c, &fixturesFlags{o: opts}, &tablesFlag{what: "write", more: "; blobs go with Entities", tables: &opts.Tables})
	return c
}

// fixturesFlags are the flags of fixtures load but --tables.
type fixturesFlags struct {
	o        *FixturesLoadOptions
	baseTime string
	fs       *pflag.FlagSet
}

func (x *fixturesFlags) bind(fl *pflag.FlagSet) {
	x.fs = fl
	fl.IntVar(&x.o.Generate, "generate", 0, "load `N` generated executions (and their index rows) instead of the fixtures")
	fl.Uint64Var(&x.o.Seed, "seed", 1, "seed of the generated data")
	fl.StringVar(&x.baseTime, "base-time", "", "generated executions start within the 13 days before this RFC 3339 `time` (default: start of today, UTC)")
	fl.IntVar(&x.o.Concurrency, "concurrency", 8, "transactions and uploads in flight")
	fl.StringSliceVar(&x.o.Accounts, "account", nil, "write into the storage account `NAME` although it is not the emulator's devstoreaccount1 (repeat for the blob account)")
	fl.StringVar(&x.o.TablePrefix, "table-prefix", "", "put this before every table name (benchmarks side by side)")
	_ = fl.MarkHidden("table-prefix")
}

func (x *fixturesFlags) validate() error {
	switch {
	case x.o.Generate < 0:
		return badValue("--generate", x.o.Generate, "a whole number, 0 or more")
	case x.o.Concurrency < 1:
		return badValue("--concurrency", x.o.Concurrency, "a whole number, 1 or more")
	}
	if x.o.Generate == 0 && (x.fs.Changed("seed") || x.fs.Changed("base-time")) {
		return UsageError(errors.New("--seed and --base-time need --generate"))
	}
	if x.baseTime != "" {
		t, err := time.Parse(time.RFC3339Nano, x.baseTime)
		if err != nil {
			return badValue("--base-time", x.baseTime, "an RFC 3339 time such as 2026-11-21T00:00:00Z")
		}
		x.o.BaseTime = t
	}
	return nil
}

// fixturesSummary is the JSON form of what fixtures load wrote (its
// summary line).
type fixturesSummary struct {
	Source    string         `json:"source"` // "fixtures" or "generated"
	Seed      *uint64        `json:"seed,omitempty"`
	BaseTime  string         `json:"baseTime,omitempty"`
	Rows      map[string]int `json:"rows"`
	Blobs     int            `json:"blobs"`
	BlobBytes int64          `json:"blobBytes"`
	Elapsed   float64        `json:"elapsedSeconds"`
	RowsPerS  float64        `json:"rowsPerSecond"`
}

func fixturesLoadRun(ctx context.Context, opts *FixturesLoadOptions) error {
	o := opts.output("fixtures load")
	opts.out = o
	tw, bw, where, err := opts.Writers(ctx)
	if err != nil {
		return err
	}
	start := opts.Now()
	lo := fixtures.LoadOptions{Tables: opts.Tables, TablePrefix: opts.TablePrefix, Concurrency: opts.Concurrency}
	p, err := ui.Start(ui.Config{
		Name: "fixtures load", Words: ui.Words{Read: "rows", Written: "rows written"}, Out: o, Stamp: opts.Now,
		Interval: fixturesProgressEvery, Terminal: opts.ErrIsTerminal, Width: opts.ErrWidth,
	})
	if err != nil {
		return err
	}
	defer p.Finish()
	lo.Progress = loadProgress(p)
	sum := fixturesSummary{Source: "fixtures"}
	var res fixtures.LoadResult
	if opts.Generate > 0 {
		base := opts.BaseTime
		if base.IsZero() {
			base = opts.Now().UTC().Truncate(24 * time.Hour)
		}
		sum.Source, sum.Seed, sum.BaseTime = "generated", &opts.Seed, base.UTC().Format(time.RFC3339Nano)
		o.Status("generating %s (seed %d, base time %s) into %s", words.Count(int64(opts.Generate), "execution", "executions"), opts.Seed, sum.BaseTime, where)
		res, err = fixtures.LoadGenerated(ctx, tw, bw, fixtures.GenerateOptions{N: opts.Generate, Seed: opts.Seed, Base: base}, lo)
	} else {
		o.Status("loading the fixtures into %s", where)
		res, err = fixtures.Load(ctx, tw, bw, lo)
	}
	if err != nil {
		return fmt.Errorf("fixtures load: %w (written so far: %s)", err, fixturesRowCounts(res))
	}
	elapsed := opts.Now().Sub(start)
	sum.Rows, sum.Blobs, sum.BlobBytes = res.Rows, res.Blobs, res.BlobBytes
	sum.Elapsed = elapsed.Seconds()
	total := 0
	for _, n := range res.Rows {
		total += n
	}
	if elapsed > 0 {
		sum.RowsPerS = float64(total) / elapsed.Seconds()
	}
	for _, t := range fixtures.Tables() {
		if _, ok := res.Rows[t]; ok {
			p.TableDone(t)
		}
	}
	p.Finish()
	if o.JSON() {
		return o.Summary(sum)
	}
	fmt.Fprintf(opts.Out, "%-24s %9s\n", "TABLE", "ROWS")
	for _, t := range fixtures.Tables() {
		if n, ok := res.Rows[t]; ok {
			fmt.Fprintf(opts.Out, "%-24s %9d\n", opts.TablePrefix+t, n)
		}
	}
	fmt.Fprintf(opts.Out, "%-24s %9d\n", "blobs in "+fixtures.BlobContainer, res.Blobs)
	fmt.Fprintf(opts.Out, "%s and %s (%d bytes) in %s (%.0f rows/s)\n", words.Count(int64(total), "row", "rows"), words.Count(int64(res.Blobs), "blob", "blobs"),
		res.BlobBytes, elapsed.Round(time.Millisecond), sum.RowsPerS)
	return nil
}

// fixturesProgressEvery is how often fixtures load prints a progress
// line when stderr is not a terminal.
const fixturesProgressEvery = 2 * time.Second

// loadProgress returns a LoadOptions.Progress that reports the rows
// written per table to p, as run reports its rows. The loader calls it
// with its totals so far, one call at a time.
func loadProgress(p *ui.Progress) func(fixtures.LoadResult) {
	seen := map[string]int{}
	return func(r fixtures.LoadResult) {
		for _, t := range fixtures.Tables() {
			if n := r.Rows[t]; n != seen[t] {
				d := int64(n - seen[t])
				p.Advance(t, d)
				p.Outcome(t, migrate.Outcome{Written: d})
				seen[t] = n
			}
		}
	}
}

func fixturesRowCounts(r fixtures.LoadResult) string {
	var parts []string
	for _, t := range fixtures.Tables() {
		if n, ok := r.Rows[t]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", t, n))
		}
	}
	if len(parts) == 0 {
		return "no rows"
	}
	return strings.Join(parts, ", ")
}

// accountUse is a storage account fixtures load would write into, and
// what it would write there ("tables", "blobs").
type accountUse struct {
	name  string
	roles []string
}

// checkFixturesAccounts refuses, with a usage error naming the accounts
// and the --account flags that would allow them, to write into any
// storage account other than the emulator's devstoreaccount1 that
// allowed (the --account names) does not repeat; and refuses any name in
// allowed that is not an account the load writes into. tables and blobs
// are the accounts of the tables and of the blobs. It sends nothing.
func checkFixturesAccounts(tables, blobs azure.StorageAccount, allowed []string) error {
	var uses []accountUse
	add := func(names []string, role string) {
		for _, n := range names {
			i := slices.IndexFunc(uses, func(u accountUse) bool { return strings.EqualFold(u.name, n) })
			if i < 0 {
				uses = append(uses, accountUse{name: n})
				i = len(uses) - 1
			}
			if !slices.Contains(uses[i].roles, role) {
				uses[i].roles = append(uses[i].roles, role)
			}
		}
	}
	add(storageAccountNames(tables, tables.TableEndpoint), "tables")
	add(storageAccountNames(blobs, blobs.BlobEndpoint), "blobs")

	var foreign []accountUse
	needed := false
	for _, u := range uses {
		if strings.EqualFold(u.name, azure.DevStorageAccount) {
			continue
		}
		foreign = append(foreign, u)
		if !slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, u.name) }) {
			needed = true
		}
	}
	var extra []string
	for _, a := range allowed {
		if !slices.ContainsFunc(uses, func(u accountUse) bool { return strings.EqualFold(a, u.name) }) {
			extra = append(extra, a)
		}
	}
	if !needed && len(extra) == 0 {
		return nil
	}
	flags := make([]string, len(foreign))
	for i, u := range foreign {
		flags[i] = "--account " + u.name
	}
	switch {
	case len(allowed) == 0:
		return UsageError(fmt.Errorf("fixtures load would write sample data into %s; it only writes into the emulator's %s unless you repeat %s with %s",
			describeAccounts(foreign), azure.DevStorageAccount, pluralize(len(foreign), "the account's name", "each account's name"), strings.Join(flags, " ")))
	case len(foreign) == 0:
		return UsageError(fmt.Errorf("--account names %s, but fixtures load would write sample data into the emulator's %s, which needs no --account",
			quoteList(allowed), azure.DevStorageAccount))
	default:
		return UsageError(fmt.Errorf("--account names %s, but fixtures load would write sample data into %s; repeat %s with %s",
			quoteList(allowed), describeAccounts(foreign), pluralize(len(foreign), "that account's name", "each account's name"), strings.Join(flags, " ")))
	}
}

// describeAccounts names the accounts, with what each would receive when
// not every one receives both tables and blobs: `storage account "a"`,
// `storage accounts "a" (tables) and "b" (blobs)`.
func describeAccounts(uses []accountUse) string {
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%q", u.name)
		if len(u.roles) == 1 {
			parts[i] += " (" + u.roles[0] + ")"
		}
	}
	return pluralize(len(uses), "storage account ", "storage accounts ") + joinAnd(parts)
}

// storageAccountNames returns the names under which a is reached through
// endpoint, each once: its AccountName, and the account the endpoint
// names (the first path segment of a path-style URL such as Azurite's
// http://127.0.0.1:10002/devstoreaccount1, else the first label of the
// host, as in prodacct.table.core.windows.net). They differ only when a
// connection string names one account and points to another; both are
// then checked. When neither says, the endpoint's host stands for the
// name.
func storageAccountNames(a azure.StorageAccount, endpoint string) []string {
	var names []string
	if a.Name != "" {
		names = append(names, a.Name)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return names
	}
	fromURL, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if host := u.Hostname(); fromURL == "" && host != "localhost" && net.ParseIP(host) == nil {
		fromURL, _, _ = strings.Cut(host, ".")
	}
	if fromURL != "" && !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, fromURL) }) {
		names = append(names, fromURL)
	}
	if len(names) == 0 {
		names = append(names, u.Host)
	}
	return names
}

// quoteList quotes each name and joins them with commas and "and".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return joinAnd(q)
}

// pluralize returns one when n is 1, else many.
func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fixturesLoadDoc is the help of `bifrost-migrate fixtures load`.
var fixturesLoadDoc = cmdDoc{
	use:   "load [--generate N [--seed S] [--base-time TIME]] [--tables LIST]",
	short: "Load the sample data (or generated executions) into Table and Blob Storage",
	long: `Load Bifrost's sample rows of every kind (fixtures/), or N generated
executions with their index rows, into the tables and the blob container,
creating them when missing; loading twice changes nothing. It writes only
into the emulator's account devstoreaccount1: any other account is refused
before any request unless --account repeats its name.`,
	example: `  bifrost-migrate fixtures load
  # 100,000 executions (500,000 rows) for a benchmark, the same every time
  bifrost-migrate fixtures load --generate 100000 --seed 1`,
}
