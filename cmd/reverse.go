package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// ReverseOptions are the flags and dependencies of `bifrost-migrate
// reverse`.
type ReverseOptions struct {
	Out    io.Writer // the summary and the conflicts: text, or JSON lines
	ErrOut io.Writer // status and progress bars
	JSON   bool
	Quiet  bool
	// ErrIsTerminal says whether ErrOut is a terminal (progress bars).
	ErrIsTerminal bool
	Now           func() time.Time

	Database string
	windowFlags
	// Reverse carries the engine's options; Since and Transform are filled
	// from the fields here.
	Reverse migrate.ReverseOptions
	TransformFlags
	// BlobContainer is the container of execution blobs (a hidden flag
	// for tests; execution-data otherwise).
	BlobContainer string
	// RU is --max-ru; pacer, made from it, paces every Cosmos DB request.
	RU    ruFlags
	pacer *azure.Pacer

	// Connect connects to the accounts and returns the engine's services,
	// a description of the targets without secrets, and the database or
	// containers that are missing.
	Connect func(ctx context.Context) (reverseServices, error)
}

// reverseServices is what ReverseOptions.Connect returns.
type reverseServices struct {
	deps    migrate.ReverseDeps
	where   string
	missing []azure.Resource
}

// tableRows is reverse's RowStore: reads through the exact reader,
// conditional writes through the writer.
type tableRows struct {
	*azure.TableReader
	*azure.TableWriter
}

// NewCmdReverse builds `bifrost-migrate reverse`. runF replaces the
// command's work in tests; nil means reverseRun.
func NewCmdReverse(f *Factory, runF func(context.Context, *ReverseOptions) error) *cobra.Command {
	opts := &ReverseOptions{}
	c := &cobra.Command{
		Use:   "reverse --since TIME [--follow] [--prune] [--force] [--dry-run]",
		Short: "Write back to the tables what the application changed in Cosmos DB",
		Long: `After a cutover to Cosmos DB, when the application has to go back to Table
Storage, write back to the tables what the application wrote in Cosmos DB
since --since (RFC 3339, e.g. ` + sinceExample + `): the docs of both
containers changed since then (Cosmos DB's change feed), each as the rows
the Table-based application would have written for it.

  doc that came from the tables    nothing (its _migration.hash matches)
  and nobody changed
  changed or created doc           its row, keys from _migration (or from its
                                   type, id and scope), properties in the
                                   application's own format; an execution's
                                   index rows too (userexec, workflowexec,
                                   formexec, status while Pending or Running),
                                   a status row of an old status deleted
  row that changed in the tables   a conflict: not written, listed; exit 4.
  after the doc was migrated       --force writes it (still with If-Match)

Rows are inserted, or replaced with If-Match on the ETag just read, and
only when they differ from what the table holds (an unchanged row keeps
its Timestamp). Then the doc's _migration records the sync (If-Match on its
_etag), so a second reverse writes nothing. A doc whose keys would hold a
character Table Storage forbids is dead-lettered (reverse-dead-letter.jsonl
in --state-dir), as are docs that cannot be written back. Pass run's
--execution-ttl, --blob-threshold, --relationships and --strict.

--prune also deletes the rows whose migrated doc is gone from Cosmos DB,
unless it expired by its ttl (the tables keep their own retention) or the
row was written after --since (the Table-based application's). --dry-run
reads everything and writes nothing; the summary lists the writes it would
do. --follow keeps going: a pass every --interval, each from the newest
change the previous pass read less --skew (clock skew between servers; a
change read twice is harmless); SIGINT or SIGTERM stop after the pass in
progress (exit 0). An interrupted reverse is simply run again: docs
already written back are skipped.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Out, opts.ErrOut = f.Out, f.ErrOut
			opts.JSON, opts.Quiet = f.Global.JSON(), f.Global.Quiet
			opts.ErrIsTerminal = f.ErrIsTerminal != nil && f.ErrIsTerminal()
			opts.Now = f.Now
			opts.Database = f.Global.Database
			opts.Connect = func(ctx context.Context) (reverseServices, error) { return connectReverse(ctx, f, opts) }
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reverseRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.TransformFlags.bind(fl, false)
	opts.windowFlags.bind(fl, "write back docs changed", "keep writing back")
	fl.BoolVar(&opts.Reverse.Prune, "prune", false, "also delete the rows whose migrated doc is gone (unless it expired)")
	fl.BoolVar(&opts.Reverse.Force, "force", false, "write rows that changed in the tables too, still with If-Match")
	fl.BoolVar(&opts.Reverse.DryRun, "dry-run", false, "read everything, write nothing, print what would happen")
	fl.IntVar(&opts.Reverse.Concurrency, "concurrency", migrate.DefaultConcurrency, "the most docs written back at once: below it, the requests in flight follow the RU budget × the latency measured")
	opts.RU.bind(fl)
	fl.StringVar(&opts.Reverse.StateDir, "state-dir", migrate.DefaultStateDir, "`directory` of reverse-dead-letter.jsonl")
	bindTestNames(fl, &opts.Reverse.TablePrefix, &opts.BlobContainer)
	return c
}

// connectReverse builds the engine's services for the accounts of f,
// once each endpoint answered its start-up check.
func connectReverse(ctx context.Context, f *Factory, opts *ReverseOptions) (reverseServices, error) {
	var s reverseServices
	t, err := connectTarget(f, opts.Database, opts.BlobContainer, opts.pacer)
	if err != nil {
		return s, err
	}
	if err := checkEndpoints(ctx, t.probes(opts.Reverse.TablePrefix+transform.TableEntities)...); err != nil {
		return s, err
	}
	reader, err := azure.NewDocReader(t.client, opts.Database)
	if err != nil {
		return s, err
	}
	tw, err := azure.NewTableWriter(t.tables, t.azopts)
	if err != nil {
		return s, err
	}
	s.deps = migrate.ReverseDeps{
		Changes:  reader,
		Position: azure.ChangeFeedSince,
		Rows:     tableRows{azure.NewTableReader(t.tables, t.azopts), tw},
		Docs:     azure.NewCosmosDocs(t.client, opts.Database, &t.azopts.Retry),
		Blobs:    azure.NewBlobStore(t.blobContainer),
		Query:    reader, Env: migrate.Env{Now: opts.Now, Flow: opts.RU.flow(),
			Log: f.log.logf()},
	}
	s.where = t.where()
	s.missing, _, err = t.missing(ctx)
	return s, err
}

// reverseRun validates the options, connects, writes back and prints the
// summary and the conflicts. Unresolved conflicts return a ConflictError
// (exit 4); otherwise dead letters a PartialError (exit 3).
func reverseRun(ctx context.Context, opts *ReverseOptions) error {
	m := opts.Reverse
	since, err := opts.parse(windowCheck{database: opts.Database, stateDir: m.StateDir, concurrency: m.Concurrency, dryRun: m.DryRun, prune: m.Prune, ru: opts.RU})
	if err != nil {
		return err
	}
	m.Since = since
	if m.Transform, err = opts.TransformFlags.options(opts.Now()); err != nil {
		return err
	}
	o := newOutput("reverse", opts.Out, opts.ErrOut, opts.JSON, opts.Quiet)
	opts.pacer = opts.RU.pacer()
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	if err := ready(ctx, o, svc.where, svc.missing, svc.deps.Rows, m.TablePrefix, nil); err != nil {
		return err
	}
	opts.startStatus(o, "docs", since, m.DryRun)
	if opts.Follow {
		return reverseFollow(ctx, o, opts, m, svc.deps)
	}
	var bars *barProgress
	svc.deps.Progress, bars, _ = newProgress(o, opts.ErrIsTerminal, time.Now, opts.RU.recent())
	s, err := migrate.Reverse(ctx, m, svc.deps)
	if bars != nil {
		bars.finish()
	}
	ru := opts.RU.report(s.Totals.Synced)
	end := endingOf(err, ctx.Err() != nil)
	var werr error
	if o.json() {
		werr = o.lines.emit(lineSummary, struct {
			Complete bool `json:"complete"`
			migrate.ReverseSummary
			RU ruReport `json:"ru"`
		}{end == endedDone, s, ru})
	} else {
		werr = writeReverseText(opts.Out, s, ru, end)
	}
	if err == nil {
		err = werr
	}
	return windowExit(err, ctx.Err() != nil, "reverse interrupted: run it again with the same --since to finish; docs already written back are skipped", m.DryRun,
		s.Totals.Conflicts, "rows that changed in the tables too were not written; see the list, then rerun with --force to write the Cosmos DB version", s.Totals.DeadLetters, "doc(s)", s.DeadLetterFile)
}

// reverseColumns are the count columns of the text summary.
var reverseColumns = []countColumn[migrate.ReverseCounts]{
	{"DOCS", func(c migrate.ReverseCounts) int64 { return c.Docs }},
	{"UNCHANGED", func(c migrate.ReverseCounts) int64 { return c.Unchanged }},
	{"SYNCED", func(c migrate.ReverseCounts) int64 { return c.Synced }},
	{"FORCED", func(c migrate.ReverseCounts) int64 { return c.Forced }},
	{"CONFLICTS", func(c migrate.ReverseCounts) int64 { return c.Conflicts }},
	{"ROWS-WRITTEN", func(c migrate.ReverseCounts) int64 { return c.RowsWritten }},
	{"INDEX-WRITTEN", func(c migrate.ReverseCounts) int64 { return c.IndexWritten }},
	{"INDEX-DELETED", func(c migrate.ReverseCounts) int64 { return c.IndexDeleted }},
	{"PRUNED", func(c migrate.ReverseCounts) int64 { return c.Pruned }},
	{"START-OVERS", func(c migrate.ReverseCounts) int64 { return c.StartOvers }},
	{"DEAD-LETTER", func(c migrate.ReverseCounts) int64 { return c.DeadLetters }},
}

// writeReverseText prints the summary table, the totals, the conflicts,
// a dry run's plan, and last a line that says how reverse ended.
func writeReverseText(w io.Writer, s migrate.ReverseSummary, ru ruReport, end ending) error {
	if s.DryRun {
		fmt.Fprintf(w, "DRY RUN: nothing was written; the counts say what reverse would do.\n")
	}
	fmt.Fprintf(w, "reverse of docs changed since %s\n\n", s.Since)
	groups := make([]countGroup[migrate.ReverseCounts], 0, len(s.Containers))
	for _, cs := range s.Containers {
		groups = append(groups, countGroup[migrate.ReverseCounts]{cs.Container, cs.Kinds, cs.ReverseCounts})
	}
	if err := writeCountTable(w, "CONTAINER", reverseColumns, groups, s.Totals); err != nil {
		return err
	}
	if err := writeWarnings(w, s.Warnings); err != nil {
		return err
	}
	t := s.Totals
	fmt.Fprintln(w)
	fmt.Fprintf(w, "rows written: %d (%d rows, %d index rows, %d index rows deleted, %d pruned) in %.1fs\n",
		t.Writes(), t.RowsWritten, t.IndexWritten, t.IndexDeleted, t.Pruned, s.ElapsedSeconds)
	fmt.Fprintf(w, "blobs uploaded: %d (%d bytes)\n", s.BlobsUploaded, s.BlobBytes)
	ru.writeText(w)
	switch {
	case t.DeadLetters > 0 && s.DeadLetterFile != "":
		fmt.Fprintf(w, "dead letters: %d in %s\n", t.DeadLetters, s.DeadLetterFile)
	default:
		fmt.Fprintf(w, "dead letters: %d\n", t.DeadLetters)
		for _, dl := range s.DeadLetters {
			fmt.Fprintf(w, "  %s %s/%s: %s\n", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
		}
	}
	fmt.Fprintf(w, "conflicts: %d left unresolved, %d written with --force\n", t.Conflicts, t.Forced)
	for i, c := range s.Conflicts {
		if i == maxConflictsShown {
			fmt.Fprintf(w, "  … and %d more (--output json lists up to 1000)\n", len(s.Conflicts)-maxConflictsShown)
			break
		}
		writeReverseConflict(w, c)
	}
	if s.DryRun && len(s.Plan) > 0 {
		fmt.Fprintf(w, "\nwrites a real reverse would do (%d listed):\n", len(s.Plan))
		for _, p := range s.Plan {
			fmt.Fprintf(w, "  %s %s %s/%s\n", p.Action, p.Table, p.PartitionKey, p.RowKey)
		}
	}
	switch {
	case end == endedInterrupted || end == endedTransient:
		fmt.Fprintf(w, "reverse: not complete: run it again with the same --since to finish\n")
	case end == endedFailed:
		fmt.Fprintf(w, "reverse: not complete: stopped by the error reported on stderr\n")
	case t.Conflicts > 0:
		fmt.Fprintf(w, "reverse: %d conflict(s) left unresolved\n", t.Conflicts)
	case t.DeadLetters > 0:
		fmt.Fprintf(w, "reverse: %d dead letter(s)\n", t.DeadLetters)
	default:
		fmt.Fprintf(w, "reverse: OK\n")
	}
	return nil
}

// writeReverseConflict prints one conflict: the doc, its row, why, what
// was done, and the properties the doc would change (names only).
func writeReverseConflict(w io.Writer, c migrate.ReverseConflict) {
	fmt.Fprintf(w, "  %s/%s/%s → %s %s/%s\n", c.Container, c.Scope, c.ID, c.Table, c.PartitionKey, c.RowKey)
	fmt.Fprintf(w, "    %s; %s\n", c.Reason, c.Resolution)
	if len(c.Properties) > 0 {
		fmt.Fprintf(w, "    properties: %s\n", strings.Join(c.Properties, ", "))
	}
}

// reverseFollow runs reverse passes until ctx ends (SPEC §16), each from
// the previous pass's watermark less --skew, then prints the totals and
// the conflicts of every pass; exit 4 when any conflict was left, else 3
// when docs were dead-lettered.
func reverseFollow(ctx context.Context, o *output, opts *ReverseOptions, m migrate.ReverseOptions, deps migrate.ReverseDeps) error {
	var total migrate.ReverseCounts
	f, err := followPasses(ctx, o, migrate.FollowOptions{Since: m.Since, Interval: opts.Interval, Skew: opts.Skew},
		func(pctx context.Context, since time.Time) (pass[migrate.ReverseConflict], error) {
			m.Since = since
			m.Transform.Now = opts.Now() // a status row's UpdatedAt is the pass's
			s, err := migrate.Reverse(pctx, m, deps)
			// The passes after the first add to the dead-letter file.
			m.KeepDeadLetters = true
			if err != nil {
				return pass[migrate.ReverseConflict]{}, err
			}
			total.Add(s.Totals)
			return newPass(migrate.PassResult{Read: s.Totals.Docs, Applied: s.Totals.Writes(), Conflicts: s.Totals.Conflicts, Newest: deref(s.Newest)},
				s.Totals.DeadLetters, s.Conflicts, func(c migrate.ReverseConflict) string { return c.Container + "/" + c.Scope + "/" + c.ID }), nil
		})
	if err != nil {
		return err
	}
	return followedSummary(o, f, total, opts.RU.report(total.Synced), fmt.Sprintf("%d doc(s) read, %d row(s) written", total.Docs, total.Writes()),
		writeReverseConflict, m.StateDir, migrate.ReverseDeadLetterFile)
}
