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

// reverseRun writes back, or follows (windowRun), and prints the summary
// and the conflicts. Unresolved conflicts return a ConflictError (exit
// 4); otherwise dead letters a PartialError (exit 3).
func reverseRun(ctx context.Context, opts *ReverseOptions) error {
	m := opts.Engine
	return windowRun(ctx, &opts.windowOptions, &m.Common, opts.Connect, way[migrate.ReverseDeps, migrate.ReverseSummary, migrate.ReverseConflict, migrate.ReverseCounts]{
		words: reverseWords, view: reverseView, conflict: reverseConflict,
		totals: func(s migrate.ReverseSummary) migrate.ReverseCounts { return s.Totals }, add: (*migrate.ReverseCounts).Add,
		pass: func(ctx context.Context, deps migrate.ReverseDeps, since time.Time, p migrate.Progress, _, keep bool) (migrate.ReverseSummary, error) {
			m.Transform.Now = opts.Now() // a status row's UpdatedAt is the pass's
			m.Since, m.KeepDeadLetters, deps.Progress = since, keep, p
			return migrate.Reverse(ctx, m, deps)
		},
	})
}

// reverseColumns are the count columns of the text summary.
var reverseColumns = countColumns[migrate.ReverseCounts]{
	names: []string{"DOCS", "UNCHANGED", "SYNCED", "FORCED", "CONFLICTS", "ROWS-WRITTEN", "INDEX-WRITTEN", "INDEX-DELETED", "PRUNED", "START-OVERS", "DEAD-LETTER"},
	counts: func(c migrate.ReverseCounts) []int64 {
		return []int64{c.Docs, c.Unchanged, c.Synced, c.Forced, c.Conflicts, c.RowsWritten, c.IndexWritten, c.IndexDeleted, c.Pruned, c.StartOvers, c.DeadLetters}
	},
}

// reverseView is a reverse's summary as the code replay and reverse
// share reads it: the counts by container, the rows written and the
// blobs, and a dry run's plan.
func reverseView(s migrate.ReverseSummary) windowView[migrate.ReverseConflict] {
	c := s.Totals
	v := windowView[migrate.ReverseConflict]{
		ran: s.Containers != nil, s: s.WindowSummary, list: s.Conflicts, forced: fmt.Sprintf("%d %s with --force", c.Forced, would(s.DryRun, "written")),
		tally: tally{read: c.Docs, written: c.Writes(), conflicts: c.Conflicts, deadLetters: c.DeadLetters, ruDocs: c.Synced, newest: s.Newest},
		table: func(w io.Writer) error {
			groups := make([]countGroup[migrate.ReverseCounts], 0, len(s.Containers))
			for _, cs := range s.Containers {
				groups = append(groups, countGroup[migrate.ReverseCounts]{cs.Container, cs.Kinds, cs.ReverseCounts})
			}
			return writeCountTable(w, "CONTAINER", reverseColumns, groups, c)
		},
		writes: func(w io.Writer) {
			fmt.Fprintf(w, "%s: %d (%d rows, %d index rows, %d index rows deleted, %d pruned) in %.1fs\n",
				whatIsDone(s.DryRun, "rows", "written"), c.Writes(), c.RowsWritten, c.IndexWritten, c.IndexDeleted, c.Pruned, s.ElapsedSeconds)
			fmt.Fprintf(w, "%s: %d (%d bytes)\n", whatIsDone(s.DryRun, "blobs", "uploaded"), s.BlobsUploaded, s.BlobBytes)
		},
	}
	if s.DryRun && len(s.Plan) > 0 {
		v.plan = func(w io.Writer) {
			fmt.Fprintf(w, "\nwrites a real reverse would do (%d listed):\n", len(s.Plan))
			for _, p := range s.Plan {
				fmt.Fprintf(w, "  %s %s %s/%s\n", p.Action, p.Table, p.PartitionKey, p.RowKey)
			}
		}
	}
	return v
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
