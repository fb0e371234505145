package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// StatusOptions are the flags and dependencies of `bifrost-migrate
// status`.
type StatusOptions struct {
	IO
	// StateDir is --state-dir.
	StateDir string
	// Check is --check: probe the endpoints (Probe) after reading the
	// state directory.
	Check bool
	// Probe runs the start-up checks of the accounts the settings name,
	// for the tables prefixed with prefix, and returns where they are
	// and what of init's resources is missing; only --check calls it.
	Probe func(ctx context.Context, prefix string) (where string, missing []string, err error)
	// RunDefaults are the defaults of run's flags, by name: the flags a
	// resumed run must repeat are those whose saved value differs.
	RunDefaults map[string]string
	// Redact scrubs secrets from an error's text.
	Redact func(string) string
}

// statusFlags are status's own flags.
type statusFlags struct{ opts *StatusOptions }

func (s statusFlags) bind(fl *pflag.FlagSet) {
	fl.BoolVar(&s.opts.Check, "check", false, "also check that every endpoint answers and accepts the credentials (the start-up checks of the other commands)")
}

func (s statusFlags) validate() error { return nil }

// NewCmdStatus builds `bifrost-migrate status`. runF replaces the
// command's work in tests; nil means statusRun.
func NewCmdStatus(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	c := newCommand(statusDoc, func(c *cobra.Command) error {
		opts.IO, opts.Redact = f.IO(), f.Redact
		opts.RunDefaults = runFlagDefaults(f, c.Root())
		opts.Probe = func(ctx context.Context, prefix string) (string, []string, error) {
			return probeAccounts(ctx, f, prefix)
		}
		return runWith(c, opts, runF, statusRun)
	})
	addFlags(c, statusFlags{opts}, stateDirFlag{&opts.StateDir, "the migration: state.json, the dead letters, verify.json, replay.json, reverse.json and the lock"})
	return c
}

// runFlagDefaults are the defaults of run's flags and of root's
// (--database), by name, but the hidden ones (tests'); --tables's is the
// list of every table, as a run's state names it.
func runFlagDefaults(f *Factory, root *cobra.Command) map[string]string {
	out := map[string]string{}
	keep := func(fl *pflag.Flag) {
		if !fl.Hidden {
			out[fl.Name] = fl.DefValue
		}
	}
	root.PersistentFlags().VisitAll(keep)
	NewCmdRun(f, nil).Flags().VisitAll(keep)
	out["tables"] = strings.Join(transform.Tables(), ",")
	return out
}

// probeAccounts runs the start-up checks of every account of f (those of
// verify: the tables, read; the blobs; Cosmos DB) and returns where they
// are and what of init's resources is missing.
func probeAccounts(ctx context.Context, f *Factory, prefix string) (string, []string, error) {
	c, err := connect(ctx, f, needs{uses: tablesRead | blobsRead | cosmosRead, database: f.Global.Database,
		blobContainer: fixtures.BlobContainer, probeTable: prefix + transform.TableConfig})
	if err != nil {
		return "", nil, err
	}
	var missing []string
	for _, r := range c.missing {
		missing = append(missing, r.String())
	}
	return c.where(), missing, nil
}

// statusRun reads the state directory, with --check probes the
// endpoints, and prints what it found: text, or one summary line with
// --output json. It fails (exit 1) when a file of the state directory
// cannot be read, or an endpoint failed its check, once all is printed.
func statusRun(ctx context.Context, opts *StatusOptions) error {
	facts := readStatus(opts.StateDir)
	r := newStatusReport(facts, opts.RunDefaults)
	var checkErr error
	if opts.Check {
		r.Check, checkErr = runCheck(ctx, opts, facts)
	}
	var err error
	if opts.JSON {
		err = ui.NewJSONLines(opts.Out).Emit(ui.LineSummary, r)
	} else {
		err = writeStatusText(opts.Out, r)
	}
	switch {
	case err != nil:
		return err
	case len(facts.unreadable) > 0:
		var why []string
		for _, u := range facts.unreadable {
			why = append(why, u.err.Error())
		}
		return fmt.Errorf("%s; what could be read is shown above", strings.Join(why, "; "))
	}
	return checkErr
}

// runCheck probes the endpoints (opts.Probe) and says what it found.
func runCheck(ctx context.Context, opts *StatusOptions, facts statusFacts) (*statusCheck, error) {
	prefix := ""
	if facts.run != nil {
		for _, s := range migrate.ParseFingerprint(facts.run.Fingerprint) {
			if s.Key == "table-prefix" {
				prefix = s.Value
			}
		}
	}
	where, missing, err := opts.Probe(ctx, prefix)
	if err != nil {
		return &statusCheck{Error: opts.Redact(err.Error())}, err
	}
	return &statusCheck{OK: true, Where: where, Missing: missing}, nil
}

// statusFacts are the files of a state directory as status read them:
// nil for a file that is not there; unreadable names those that could
// not be read, with why, in the order they were read.
type statusFacts struct {
	dir        string
	run        *migrate.State
	verify     *verify.Record
	replay     *windowFacts
	reverse    *windowFacts
	lock       migrate.LockStatus
	unreadable []unreadableFile
}

// unreadableFile is a file of the state directory that could not be
// read, and why.
type unreadableFile struct {
	name string
	err  error
}

// cannotRead reports whether the file name could not be read.
func (f statusFacts) cannotRead(name string) bool {
	return slices.ContainsFunc(f.unreadable, func(u unreadableFile) bool { return u.name == name })
}

// windowFacts are a replay's or reverse's record, and whether the
// process that wrote it is still alive.
type windowFacts struct {
	rec   migrate.PassRecord
	alive bool
}

// readStatus reads what the state directory dir holds: state.json,
// verify.json, replay.json, reverse.json and the lock (migrate.ReadLock:
// tried without waiting, released at once). It sends no request.
func readStatus(dir string) statusFacts {
	f := statusFacts{dir: dir}
	read := func(name string, err error) {
		if err != nil {
			f.unreadable = append(f.unreadable, unreadableFile{name, err})
		}
	}
	var err error
	f.run, err = migrate.LoadState(dir)
	read(migrate.StateFile, err)
	f.verify, err = verify.LoadRecord(dir)
	read(verify.RecordFile, err)
	f.replay, err = loadWindowFacts(dir, migrate.ReplayRecordFile)
	read(migrate.ReplayRecordFile, err)
	f.reverse, err = loadWindowFacts(dir, migrate.ReverseRecordFile)
	read(migrate.ReverseRecordFile, err)
	f.lock, err = migrate.ReadLock(dir)
	read(migrate.LockFile, err)
	return f
}

// loadWindowFacts reads the record dir/file of a replay or reverse: nil
// when there is none.
func loadWindowFacts(dir, file string) (*windowFacts, error) {
	rec, err := migrate.LoadPassRecord(dir, file)
	if rec == nil || err != nil {
		return nil, err
	}
	return &windowFacts{rec: *rec, alive: rec.ExitCode == nil && processAlive(rec.PID)}, nil
}

// processAlive reports whether a process with this pid exists (signal 0;
// one of another user counts). A pid reused by another program counts
// too: status then says the command is at work when it was killed.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// statusDoc is the help of `bifrost-migrate status`.
var statusDoc = cmdDoc{
	use:   "status [--check]",
	short: "Show where the migration in the state directory stands, and what to run next",
	long: `Read the state directory, and nothing else: the run (complete, in progress
or interrupted: rows per table and disposition, dead letters, its options,
the version that ran it), the last verify (its verdict, when, full or
partial), the last replay and reverse (their window, last pass and
conflicts left), whether a process holds the lock, and the next command to
run. It sends no request to any service unless --check, which also checks
every endpoint as the other commands do at their start.`,
	example: `  bifrost-migrate status
  bifrost-migrate status --state-dir /state/.bifrost-migrate --output json
  # also check that the accounts answer and accept the credentials
  bifrost-migrate status --check`,
}
