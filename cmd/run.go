package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// RunOptions are the flags and dependencies of `bifrost-migrate run`.
type RunOptions struct {
	engineOptions
	// Migrate carries the pipeline's options: the flags fill them, runRun
	// their Transform and Target.
	Migrate migrate.RunOptions

	// Connect connects to the accounts. It returns the pipeline's
	// services with where they are (for the status line and the state's
	// fingerprint, without secrets) and what of init's resources is
	// missing.
	Connect func(ctx context.Context) (runServices, error)
}

// runServices is what RunOptions.Connect returns.
type runServices = services[migrate.Deps]

// runFlags are the flags of run alone, into migrate.RunOptions:
// --restart, --max-errors and --show.
type runFlags struct{ m *migrate.RunOptions }

func (r runFlags) bind(fl *pflag.FlagSet) {
	fl.BoolVar(&r.m.Restart, "restart", false, "discard the saved state and dead letters and start over")
	fl.IntVar(&r.m.MaxErrors, "max-errors", 0, "stop after `N` dead-lettered rows (0: never)")
	fl.IntVar(&r.m.Show, "show", 0, "with --dry-run, print `N` redacted sample docs per kind")
}

func (r runFlags) validate() error {
	m := r.m
	switch {
	case m.MaxErrors < 0:
		return badValue("--max-errors", m.MaxErrors, "a whole number, 0 or more (0: never stop)")
	case m.Show < 0:
		return badValue("--show", m.Show, "a whole number, 0 or more")
	case m.Show > 0 && !m.DryRun:
		return UsageError(errors.New("--show needs --dry-run"))
	case m.DryRun && m.Restart:
		return UsageError(errors.New("--restart and --dry-run exclude each other (a dry run never reads or writes the state)"))
	}
	return nil
}

// NewCmdRun builds `bifrost-migrate run`. runF replaces the command's
// work in tests; nil means runRun.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	opts.engineFlags = newEngineFlags(&opts.Migrate.Common, engineHelp{
		concurrency: "rows written at once",
		stateDir:    "state.json, dead-letter.jsonl and the lock of the run",
		dryRun:      "read and transform everything, write nothing, print the plan",
	}, true)
	opts.Connect = func(ctx context.Context) (runServices, error) { return connectRun(ctx, f, opts) }
	c := newCommand(runDoc, func(c *cobra.Command) error {
		opts.from(f, c.Name())
		return runWith(c, opts, runF, runRun)
	})
	addFlags(c, &tablesFlag{what: "migrate", tables: &opts.Migrate.Tables}, &opts.engineFlags, runFlags{&opts.Migrate})
	return c
}

// connectRun builds the pipeline's services for the accounts of f.
func connectRun(ctx context.Context, f *Factory, opts *RunOptions) (runServices, error) {
	c, err := opts.connect(ctx, f, tablesRead|blobsRead|cosmosWrite, firstTable(opts.Migrate.Tables))
	return runServices{conn: c, deps: migrate.Deps{Source: c.rowReader, Docs: c.docs, Blobs: c.blobStore, Env: opts.env(f)}}, err
}

// emptyBlobs is the blob container of a dry run when it does not exist
// yet: no blobs, and uploads are not attempted (the dry run wraps it).
type emptyBlobs struct{}

func (emptyBlobs) List(context.Context, func(string, int64) error) error { return nil }
func (emptyBlobs) PutIfAbsent(context.Context, string, []byte, string) (bool, error) {
	return false, errors.New("blob container does not exist")
}

// runRun validates the options, connects, runs the pipeline and prints the
// summary. Dead letters return a PartialError (exit 3).
func runRun(ctx context.Context, opts *RunOptions) error {
	m := opts.Migrate
	o, err := opts.start("run", &m.Common)
	if err != nil {
		return err
	}
	// A dry run shows no request units and keeps no samples.
	var (
		meters   ui.Meters
		stateDir string
	)
	if !m.DryRun {
		meters, stateDir = opts.RU.meters(), m.StateDir
	}
	p, err := opts.Observe.progress(opts.IO, o, "run", meters, ui.RowsToDocs, stateDir)
	if err != nil {
		return err
	}
	defer p.Finish()
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	o.Status("%s", svc.where())
	if len(svc.missing) > 0 {
		if !m.DryRun {
			return &notProvisionedError{Missing: svc.missing}
		}
		names := make([]string, len(svc.missing))
		for i, r := range svc.missing {
			names[i] = r.String()
		}
		o.Warning("dry run: %s missing (run `bifrost-migrate init` before the real run)", strings.Join(names, ", "))
		if svc.noBlobContainer {
			svc.deps.Blobs = emptyBlobs{}
		}
	}
	if err := probeTables(ctx, svc.deps.Source, m.TablePrefix, m.Tables); err != nil {
		return err
	}
	m.Target = svc.fingerprint()

	svc.deps.Progress, m.CountRows = p, p.WantsTotals()
	if m.DryRun {
		o.Status("dry run: nothing will be written (not even %s)", m.StateDir)
	}

	s, err := migrate.Run(ctx, m, svc.deps)
	p.Finish()
	// Interrupted, it says how far it got, whatever it got to.
	if s.Tables != nil && (err == nil || rowsCounted(s) > 0 || ctx.Err() != nil) {
		var ru *ui.RUReport
		if !m.DryRun && !s.AlreadyComplete {
			r := opts.RU.report(s.DocsWritten)
			ru = &r
		}
		var werr error
		if o.JSON() {
			werr = writeRunJSON(o.Lines(), s, ru)
		} else {
			werr = writeRunText(opts.Out, s, ru, opts.RU.MaxRU, endingOf(err, ctx.Err() != nil))
		}
		if err == nil {
			err = werr
		}
	}
	var fe *migrate.FingerprintError
	switch {
	case err != nil && ctx.Err() != nil && s.SaveFailed:
		return interrupted(fmt.Sprintf("the last checkpoint could not be saved in %s, which keeps the one before it; run again to resume from there", m.StateDir), err)
	case err != nil && ctx.Err() != nil:
		return interrupted(fmt.Sprintf("state saved in %s; run again to resume", m.StateDir), err)
	case err != nil && s.SaveFailed:
		return fmt.Errorf("%w; the checkpoint was not saved, %s keeps the one before it: free space there or make it writable, then run again to resume from it", err, m.StateDir)
	case errors.As(err, &fe):
		return UsageError(errors.New(optionMismatch(fe)))
	case errors.Is(err, migrate.ErrTooManyDeadLetters):
		return fmt.Errorf("%w; see %s; raise --max-errors (or fix the rows and use --restart) and run again", err, s.DeadLetterFile)
	case err != nil:
		return err
	case s.DeadLetters > 0 && m.DryRun:
		return PartialError(fmt.Errorf("dry run: %d row(s) would be dead-lettered", s.DeadLetters))
	case s.DeadLetters > 0:
		return PartialError(fmt.Errorf("%d row(s) dead-lettered; see %s", s.DeadLetters, s.DeadLetterFile))
	}
	return nil
}

// optionMismatch says which options of this run differ from those of the
// saved run, named as the user sets them (--execution-ttl full, no
// --strict, --database other), and how to go on. The fingerprint holds
// endpoints and names, never keys, so neither does the sentence.
func optionMismatch(fe *migrate.FingerprintError) string {
	diffs := fe.Differences()
	if len(diffs) == 0 {
		return fe.Error()
	}
	saved := make([]string, len(diffs))
	wanted := make([]string, len(diffs))
	for i, d := range diffs {
		saved[i] = optionPhrase(d.Key, d.Saved)
		wanted[i] = optionPhrase(d.Key, d.Wanted)
	}
	return fmt.Sprintf("the saved run in %s used %s, this run %s; run with the saved options to resume, or use --restart to start over",
		fe.Dir, joinAnd(saved), joinAnd(wanted))
}

// optionPhrase names one setting of a run's fingerprint (migrate.Setting)
// as the flag, or the account, that sets it.
func optionPhrase(key, value string) string {
	flagValue := value
	if flagValue == "" {
		flagValue = `""`
	}
	switch key {
	case "strict":
		if value == "true" {
			return "--strict"
		}
		return "no --strict"
	case "blob-threshold", "execution-ttl", "relationships", "tables", "table-prefix":
		return "--" + key + " " + flagValue
	case "target.database":
		return "--database " + flagValue
	case "target.cosmos":
		return "Cosmos DB " + value
	case "target.tables":
		return "tables account " + value
	case "target.blobs":
		return "blob container " + value
	}
	return key + "=" + value
}

// dispositionColumns are the summary's columns, in SPEC §5 order.
var dispositionColumns = []transform.Disposition{
	transform.DispositionDoc, transform.DispositionDroppedIndex, transform.DispositionKeptInTables,
	transform.DispositionExpired, transform.DispositionDeadLetter,
}

// writeRunText prints the summary as tables (and the plan of a dry run);
// ru is this session's request units (nil for a dry run); maxRU is
// --max-ru, for the dry run's estimate of the time; end says how the run
// ended, for the line that says whether it is complete and what to do.
func writeRunText(w io.Writer, s migrate.Summary, ru *ui.RUReport, maxRU float64, end ending) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "TABLE\tKIND\tROWS\t")
	for _, d := range dispositionColumns {
		fmt.Fprintf(tw, "%s\t", strings.ToUpper(string(d)))
	}
	fmt.Fprintln(tw)
	var total int64
	for _, ts := range s.Tables {
		for _, k := range sortedKeys(ts.Kinds) {
			var rows int64
			for _, n := range ts.Kinds[k] {
				rows += n
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t", ts.Table, k, rows)
			for _, d := range dispositionColumns {
				fmt.Fprintf(tw, "%d\t", ts.Kinds[k][string(d)])
			}
			fmt.Fprintln(tw)
		}
		state := "done"
		if !ts.Done {
			state = "not done"
		}
		fmt.Fprintf(tw, "%s\t(%s)\t%d\t", ts.Table, state, ts.Rows)
		for _, d := range dispositionColumns {
			fmt.Fprintf(tw, "%d\t", sumDisposition(ts.Kinds, string(d)))
		}
		fmt.Fprintln(tw)
		total += ts.Rows
	}
	fmt.Fprintf(tw, "TOTAL\t\t%d\t", total)
	for _, d := range dispositionColumns {
		fmt.Fprintf(tw, "%d\t", s.Dispositions[string(d)])
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := writeWarnings(w, s.Warnings); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s: %d (%d bytes)\n", whatIsDone(s.DryRun, "blobs", "uploaded"), s.BlobsUploaded, s.BlobBytes)
	if !s.DryRun {
		fmt.Fprintf(w, "request units (whole run, writes): %.2f\n", s.RequestCharge)
		fmt.Fprintf(w, "docs written this session: %d in %.1fs (%.0f docs/s)\n", s.DocsWritten, s.ElapsedSeconds, s.DocsPerSecond)
	}
	if ru != nil {
		ru.WriteText(w)
	}
	writeDeadLetterCount(w, s.DeadLetters, s.DeadLetterFile)
	if s.DryRun {
		if s.Plan != nil {
			if err := writePlanText(w, s, maxRU); err != nil {
				return err
			}
		}
		if !s.Complete {
			// Last, so that nothing after it looks like a finished plan.
			_, err := fmt.Fprintln(w, "dry run not complete: stopped by the error reported on stderr")
			return err
		}
		return nil
	}
	var err error
	switch {
	case s.AlreadyComplete:
		_, err = fmt.Fprintf(w, "run %s was already complete: nothing done (use --restart to run again)\n", s.RunID)
	case s.Resumed && s.Complete:
		_, err = fmt.Fprintf(w, "run %s resumed and complete\n", s.RunID)
	case s.Complete:
		_, err = fmt.Fprintf(w, "run %s complete\n", s.RunID)
	case s.SaveFailed:
		_, err = fmt.Fprintf(w, "run %s not complete: %s\n", s.RunID, lastSavedPhrase(s.LastSaved))
	case end == endedInterrupted || end == endedTransient:
		// Only these end in a state that running again as is can finish.
		_, err = fmt.Fprintf(w, "run %s not complete: run again to resume\n", s.RunID)
	default:
		_, err = fmt.Fprintf(w, "run %s not complete: stopped by the error reported on stderr (the state is saved)\n", s.RunID)
	}
	return err
}

// lastSavedPhrase says, after a checkpoint could not be saved, which one
// state.json holds (c; nil or zero: none).
func lastSavedPhrase(c *migrate.SavedCheckpoint) string {
	if c == nil || c.Updated.IsZero() {
		return "no checkpoint could be saved; a rerun starts over"
	}
	return fmt.Sprintf("its last checkpoint could not be saved; state.json holds the one of %s (%d rows done), from which a rerun resumes",
		c.Updated.UTC().Format(time.RFC3339), c.Rows)
}

// rowsCounted is the number of rows s counts, those of earlier sessions
// of a resumed run included: none when run failed before doing any work,
// and then the error alone is printed.
func rowsCounted(s migrate.Summary) int64 {
	var n int64
	for _, ts := range s.Tables {
		n += ts.Rows
	}
	return n
}

func sumDisposition(kinds map[string]map[string]int64, d string) int64 {
	var n int64
	for _, ds := range kinds {
		n += ds[d]
	}
	return n
}

// writeWarnings prints the table of warnings by reason, after an empty
// line; nothing when there are none.
func writeWarnings(w io.Writer, warnings map[string]int64) error {
	if len(warnings) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WARNING\tCOUNT")
	for _, r := range sortedKeys(warnings) {
		fmt.Fprintf(tw, "%s\t%d\n", r, warnings[r])
	}
	return tw.Flush()
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writePlanText prints what only a dry run reports; maxRU is --max-ru.
func writePlanText(w io.Writer, s migrate.Summary, maxRU float64) error {
	p := s.Plan
	fmt.Fprintf(w, "\nDRY RUN: nothing was written.\n")
	fmt.Fprintf(w, "estimated write cost: %d RU (5 RU per started KB of each doc), %s\n", p.EstimatedRU, ruDuration(p.EstimatedRU, maxRU))
	fmt.Fprintf(w, "estimated stored size: %d bytes of doc JSON\n", p.EstimatedBytes)
	fmt.Fprintf(w, "results that would move to blobs: %d (%d bytes)\n", p.ResultsToBlob, p.ResultsToBlobBytes)
	more := func(listed int, n int64) {
		if int64(listed) < n {
			fmt.Fprintf(w, "  … and %d more\n", n-int64(listed))
		}
	}
	fmt.Fprintf(w, "\nid collisions: %d\n", p.CollisionCount)
	for _, c := range p.Collisions {
		fmt.Fprintf(w, "  %s %s/%s → %s scope %q id %q (already taken by an earlier row)\n", c.Table, c.PartitionKey, c.RowKey, c.Container, c.Scope, c.ID)
	}
	more(len(p.Collisions), p.CollisionCount)
	fmt.Fprintf(w, "\nsanitized ids: %d\n", p.SanitizedCount)
	for _, sid := range p.SanitizedIDs {
		fmt.Fprintf(w, "  %s %s/%s: %q → %q\n", sid.Table, sid.PartitionKey, sid.RowKey, sid.RawID, sid.ID)
	}
	more(len(p.SanitizedIDs), p.SanitizedCount)
	fmt.Fprintf(w, "\ndead letters: %d\n", s.DeadLetters)
	for _, dl := range p.DeadLetters {
		fmt.Fprintf(w, "  %s %s/%s: %s\n", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
	}
	more(len(p.DeadLetters), s.DeadLetters)
	if len(p.Samples) > 0 {
		fmt.Fprintf(w, "\nsamples (redacted):\n")
		for _, sm := range p.Samples {
			var js bytes.Buffer
			if err := json.Indent(&js, sm.Doc, "  ", "  "); err != nil {
				return err
			}
			fmt.Fprintf(w, "  # %s %s\n  %s\n", sm.Table, sm.Kind, js.Bytes())
		}
	}
	return nil
}

// writeRunJSON prints the summary as one summary line; ru, this session's
// request units, is its "ru" (absent in a dry run).
func writeRunJSON(lines *ui.JSONLines, s migrate.Summary, ru *ui.RUReport) error {
	return lines.Emit(ui.LineSummary, struct {
		migrate.Summary
		RU *ui.RUReport `json:"ru,omitempty"`
	}{s, ru})
}

// runDoc is the help of `bifrost-migrate run`.
var runDoc = cmdDoc{
	use:   "run [--dry-run] [flags]",
	short: "Migrate the tables into Cosmos DB, resumably",
	long: `Read Config, Entities and Relationships page by page in key order, give
every row one disposition (doc, dropped-index, kept-in-tables, expired or
dead-letter), move large results to Blob Storage and upsert the docs
within the request-unit budget. The checkpoint in --state-dir advances only
past acknowledged writes: after any interruption, the same command
resumes. --dry-run reads everything, writes nothing and prints the plan.`,
	example: `  # the plan: dispositions, collisions, dead letters, request units and time
  bifrost-migrate run --dry-run --max-ru 4000
  # migrate with at most 4,000 RU/s of the account (the application keeps the rest)
  bifrost-migrate run --max-ru 4000
  # after an interruption: the same command resumes
  bifrost-migrate run --max-ru 4000
  # start over: discards the checkpoint and the dead letters
  bifrost-migrate run --restart
  # in a container job: a progress line a minute, metrics for Prometheus
  bifrost-migrate run --max-ru 4000 --progress-interval 1m --metrics-addr :9464`,
}

// writeDeadLetterCount writes a summary's line of dead letters, naming
// the file that holds them when there are any in one; it reports whether
// it named the file (else the caller may list them).
func writeDeadLetterCount(w io.Writer, n int64, file string) (inFile bool) {
	if n > 0 && file != "" {
		fmt.Fprintf(w, "dead letters: %d in %s\n", n, file)
		return true
	}
	fmt.Fprintf(w, "dead letters: %d\n", n)
	return false
}

// ruDuration says how long estimated RU take at maxRU RU/s ("≈ 12 min at
// 1,000 RU/s"), or how to find out when there is no cap.
func ruDuration(estimated int64, maxRU float64) string {
	if maxRU <= 0 {
		return "pass --max-ru N to see how long that takes at N RU/s"
	}
	d := time.Duration(float64(estimated) / maxRU * float64(time.Second))
	return fmt.Sprintf("≈ %s at %s RU/s", roughDuration(d), ui.Thousands(maxRU))
}
