package cmd

import (
	"context"
	"fmt"
	"io"
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

// NewCmdReverse builds `bifrost-migrate reverse`. runF replaces the
// command's work in tests; nil means reverseRun.
func NewCmdReverse(f *Factory, runF func(context.Context, *ReverseOptions) error) *cobra.Command {
	opts := &ReverseOptions{}
	opts.windowOptions = newWindowOptions(&opts.Engine.Common, &opts.Engine.WindowOptions, reverseHelp)
	opts.Connect = func(ctx context.Context) (reverseServices, error) { return connectReverse(ctx, f, opts) }
	return newWindowCmd(f, opts, &opts.windowOptions, reverseDoc, runF, reverseRun)
}

// connectReverse builds the engine's services for the accounts of f.
func connectReverse(ctx context.Context, f *Factory, opts *ReverseOptions) (reverseServices, error) {
	c, err := opts.connect(ctx, f, tablesWrite|blobsRead|cosmosWrite|changeFeed, transform.TableEntities)
	return reverseServices{conn: c, deps: migrate.ReverseDeps{
		Changes: c.docReader, Position: azure.ChangeFeedSince, Rows: tableRows{c.rowReader, c.rowWriter},
		Docs: c.docs, Blobs: c.blobStore, Query: c.docReader, Env: opts.env(f),
	}}, err
}

// reverseRun writes back, or follows, and prints the summary and the
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
	pass := func(ctx context.Context, since time.Time, p migrate.Progress, _, keep bool) (windowSummary, error) {
		m.Transform.Now = opts.Now() // a status row's UpdatedAt is the pass's
		m.Since, m.KeepDeadLetters, svc.deps.Progress = since, keep, p
		s, err := migrate.Reverse(ctx, m, svc.deps)
		return reverseSummary{s}, err
	}
	if w.flags.Follow {
		return w.follow(ctx, reverseSummary{}, pass)
	}
	return w.once(ctx, pass)
}

// reverseColumns are the count columns of the text summary.
var reverseColumns = countColumns[migrate.ReverseCounts]{
	names: []string{"DOCS", "UNCHANGED", "SYNCED", "FORCED", "CONFLICTS", "ROWS-WRITTEN", "INDEX-WRITTEN", "INDEX-DELETED", "PRUNED", "START-OVERS", "DEAD-LETTER"},
	counts: func(c migrate.ReverseCounts) []int64 {
		return []int64{c.Docs, c.Unchanged, c.Synced, c.Forced, c.Conflicts, c.RowsWritten, c.IndexWritten, c.IndexDeleted, c.Pruned, c.StartOvers, c.DeadLetters}
	},
}

// reverseSummary is a reverse's summary as the code replay and reverse
// share reads it: the counts by container, the rows written and the
// blobs, and a dry run's plan.
type reverseSummary struct{ migrate.ReverseSummary }

func (s reverseSummary) window() migrate.WindowSummary { return s.WindowSummary }

func (s reverseSummary) tally() tally {
	c := s.Totals
	return tally{ran: s.Containers != nil, read: c.Docs, written: c.Writes(), conflicts: c.Conflicts, deadLetters: c.DeadLetters, ruDocs: c.Synced, newest: s.Newest}
}

func (s reverseSummary) text() (summaryText, error) {
	c := s.Totals
	groups := make([]countGroup[migrate.ReverseCounts], 0, len(s.Containers))
	for _, cs := range s.Containers {
		groups = append(groups, countGroup[migrate.ReverseCounts]{cs.Container, cs.Kinds, cs.ReverseCounts})
	}
	var counts, writes, plan strings.Builder
	if err := writeCountTable(&counts, "CONTAINER", reverseColumns, groups, c); err != nil {
		return summaryText{}, err
	}
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
	return summaryText{counts: counts.String(), writes: writes.String(), plan: plan.String(),
		forced: fmt.Sprintf("%d %s with --force", c.Forced, would(s.DryRun, "written"))}, nil
}

func (s reverseSummary) conflicts() []windowConflict {
	return listConflicts(s.Conflicts, func(c migrate.ReverseConflict) windowConflict { return reverseConflict{c} })
}

func (s reverseSummary) plus(o windowSummary) windowSummary {
	s.Totals.Add(o.(reverseSummary).Totals)
	return s
}

func (s reverseSummary) totals() any { return s.Totals }

// reverseConflict is a conflict of reverse's as the code replay and
// reverse share lists it.
type reverseConflict struct{ migrate.ReverseConflict }

func (c reverseConflict) doc() string { return c.Container + "/" + c.Scope + "/" + c.ID }

// writeText prints the conflict: the doc, its row, why, what was done,
// and the properties the doc would change (names only).
func (c reverseConflict) writeText(w io.Writer) {
	fmt.Fprintf(w, "  %s/%s/%s → %s %s/%s\n", c.Container, c.Scope, c.ID, c.Table, c.PartitionKey, c.RowKey)
	fmt.Fprintf(w, "    %s; %s\n", c.Reason, c.Resolution)
	if len(c.Properties) > 0 {
		fmt.Fprintf(w, "    properties: %s\n", strings.Join(c.Properties, ", "))
	}
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
