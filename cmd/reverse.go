package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// tableRows is reverse's RowStore: reads through the exact reader,
// conditional writes through the writer.
type tableRows struct {
	*azure.TableReader
	*azure.TableWriter
}

// ReverseOptions are the flags and dependencies of `bifrost-migrate
// reverse`.
type ReverseOptions struct {
	windowOptions
	// Engine carries the engine's options: the flags fill them,
	// reverseRun the options it works with (engineOptions.start).
	Engine migrate.ReverseOptions
	// Connect connects to the accounts and returns the engine's services
	// with where they are and what of init's resources is missing.
	Connect func(ctx context.Context) (reverseServices, error)
}

// reverseServices are what ReverseOptions.Connect returns.
type reverseServices = services[migrate.ReverseDeps]

// NewCmdReverse builds `bifrost-migrate reverse`. runF replaces the
// command's work in tests; nil means reverseRun.
func NewCmdReverse(f *Factory, runF func(context.Context, *ReverseOptions) error) *cobra.Command {
	opts := &ReverseOptions{}
	opts.windowOptions = newWindowOptions(&opts.Engine.Common, &opts.Engine.WindowOptions, reverseHelp, f.serviceNow)
	opts.Connect = func(ctx context.Context) (reverseServices, error) { return connectReverse(ctx, f, opts) }
	c := newCommand(reverseDoc, func(c *cobra.Command) error {
		opts.from(f, c.Name())
		return runWith(c, opts, runF, reverseRun)
	})
	addFlags(c, &opts.window, &opts.engineFlags)
	return c
}

// connectReverse builds the engine's services for the accounts of f.
func connectReverse(ctx context.Context, f *Factory, opts *ReverseOptions) (reverseServices, error) {
	c, err := opts.connect(ctx, f, tablesWrite|blobsRead|cosmosWrite|changeFeed, transform.TableEntities)
	return reverseServices{conn: c, deps: migrate.ReverseDeps{
		Changes: c.docReader, Position: azure.ChangeFeedSince, Rows: tableRows{c.rowReader, c.rowWriter},
		Docs: c.docs, Blobs: c.blobStore, Query: c.docReader, Env: opts.env(f),
	}}, err
}

// reverseRun writes back once, or follows, and prints the summary and the
// conflicts. Unresolved conflicts return a ConflictError (exit 4);
// otherwise dead letters a PartialError (exit 3).
func reverseRun(ctx context.Context, opts *ReverseOptions) error {
	m := opts.Engine
	w, err := opts.begin(reverseWords, &m.Common)
	if err != nil {
		return err
	}
	defer w.obs.Finish()
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	if err := w.ready(ctx, svc.conn, svc.deps.Rows, nil); err != nil {
		return err
	}
	// Every pass judges a doc without _migration against --since, the
	// start of the whole window, and knows the rows the earlier passes
	// left in step (docs/rollback.md, "A doc without _migration").
	m.Start, svc.deps.InStep = m.Since, &migrate.RowsInStep{}
	if w.flags.Follow {
		return reverseFollow(ctx, w, opts.Now, m, svc.deps)
	}
	p, _ := w.progress()
	m.Transform.Now, svc.deps.Progress = opts.Now(), p // a status row's UpdatedAt is the pass's
	s, err := migrate.Reverse(ctx, m, svc.deps)
	p.Finish()
	return w.ended(ctx, reverseReport(s), err)
}

// reverseFollow writes back again and again (--follow, SPEC §16), each
// pass from the previous one's watermark, until ctx ends; then it prints
// what the passes did. Each pass's status rows are stamped with now at
// its start.
func reverseFollow(ctx context.Context, w *windowCommand, now func() time.Time, m migrate.ReverseOptions, deps migrate.ReverseDeps) error {
	f, fo := w.follow()
	var total migrate.ReverseCounts
	err := migrate.Follow(ctx, fo, func(ctx context.Context, since time.Time) (migrate.PassResult, error) {
		f.started(since)
		m.Transform.Now, m.Since, m.KeepDeadLetters, deps.Progress = now(), since, f.keep, f.progress
		s, err := migrate.Reverse(ctx, m, deps)
		if err != nil {
			return migrate.PassResult{}, err
		}
		total.Add(s.Totals)
		return f.passed(reverseReport(s)), nil
	}, f.ended)
	return f.summary(ctx, err, total)
}

// reverseColumns are the count columns of the text summary;
// reverseCounts gives a count's, in that order.
var reverseColumns = []string{"DOCS", "UNCHANGED", "SYNCED", "FORCED", "CONFLICTS", "ROWS-WRITTEN", "INDEX-WRITTEN", "INDEX-DELETED", "PRUNED", "START-OVERS", "DEAD-LETTER"}

func reverseCounts(c migrate.ReverseCounts) []int64 {
	return []int64{c.Docs, c.Unchanged, c.Synced, c.Forced, c.Conflicts, c.RowsWritten, c.IndexWritten, c.IndexDeleted, c.Pruned, c.StartOvers, c.DeadLetters}
}

// reverseReport is a reverse's summary as the steps replay and reverse
// share read it: the counts by container, the rows written and the
// blobs, a dry run's plan, and the conflicts.
func reverseReport(s migrate.ReverseSummary) windowReport {
	c := s.Totals
	r := windowReport{window: s.WindowSummary, summary: s,
		tally:  tally{ran: s.Containers != nil, read: c.Docs, written: c.Writes(), conflicts: c.Conflicts, deadLetters: c.DeadLetters, unchanged: c.Unchanged, ruDocs: c.Synced, newest: s.Newest},
		counts: countTable{head: "CONTAINER", names: reverseColumns, total: reverseCounts(c)},
		forced: fmt.Sprintf("%d %s with --force", c.Forced, would(s.DryRun, "written")),
	}
	for _, cs := range s.Containers {
		g := countGroup{name: cs.Container, kinds: map[string][]int64{}, all: reverseCounts(cs.ReverseCounts)}
		for k, kc := range cs.Kinds {
			g.kinds[k] = reverseCounts(kc)
		}
		r.counts.groups = append(r.counts.groups, g)
	}
	var writes, plan strings.Builder
	fmt.Fprintf(&writes, "%s: %d (%s, %s, %s, %d pruned) in %.1fs\n",
		whatIsDone(s.DryRun, "rows", "written"), c.Writes(), words.Count(c.RowsWritten, "row", "rows"),
		words.Count(c.IndexWritten, "index row", "index rows"), words.Count(c.IndexDeleted, "index row deleted", "index rows deleted"),
		c.Pruned, s.ElapsedSeconds)
	fmt.Fprintf(&writes, "%s: %d (%d bytes)\n", whatIsDone(s.DryRun, "blobs", "uploaded"), s.BlobsUploaded, s.BlobBytes)
	if s.DryRun && len(s.Plan) > 0 {
		fmt.Fprintf(&plan, "\nwrites a real reverse would do (%d listed):\n", len(s.Plan))
		for _, p := range s.Plan {
			fmt.Fprintf(&plan, "  %s %s %s/%s\n", p.Action, p.Table, p.PartitionKey, p.RowKey)
		}
	}
	r.writes, r.plan = writes.String(), plan.String()
	for _, cf := range s.Conflicts {
		r.conflicts = append(r.conflicts, listedConflict{doc: cf.Container + "/" + cf.Scope + "/" + cf.ID, text: reverseConflictText(cf), value: cf})
	}
	return r
}

// reverseConflictText is a conflict of reverse's as the summary prints
// it: the doc, its row, why, what was done, and the properties the doc
// would change (names only).
func reverseConflictText(c migrate.ReverseConflict) string {
	var w strings.Builder
	fmt.Fprintf(&w, "  %s/%s/%s → %s %s/%s\n", c.Container, c.Scope, c.ID, c.Table, c.PartitionKey, c.RowKey)
	fmt.Fprintf(&w, "    %s; %s\n", c.Reason, c.Resolution)
	if len(c.Properties) > 0 {
		fmt.Fprintf(&w, "    properties: %s\n", strings.Join(c.Properties, ", "))
	}
	return w.String()
}

// reverseDoc is the help of `bifrost-migrate reverse`.
var reverseDoc = cmdDoc{
	use:   "reverse --since TIME [--follow] [--prune] [--force] [--dry-run]",
	short: "Roll back: write to the tables what the application changed in Cosmos DB",
	long: `Read the docs changed in Cosmos DB since --since (its change feed) and write
back their rows, and an execution's index rows, as the Table-based
application would have written them, each with If-Match. A row the tables
changed too is a conflict, listed and left alone (exit 4; --force writes
it). --follow keeps the tables in step, for a rollback of seconds.`,
	example: `  bifrost-migrate reverse --since 2026-11-20T14:00:00Z --dry-run
  bifrost-migrate reverse --since 2026-11-20T14:00:00Z
  # keep the tables in step while the application still writes to Cosmos DB
  bifrost-migrate reverse --since 2026-11-20T14:00:00Z --follow
  # then prove that the two sides agree
  bifrost-migrate verify`,
}
