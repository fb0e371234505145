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
	short: "Write back to the tables what the application changed in Cosmos DB",
	long: `After a cutover to Cosmos DB, when the application has to go back to Table
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
in --state-dir), as are docs that cannot be written back. run's
--execution-ttl, --blob-threshold, --relationships and --strict are taken
from the run in --state-dir (another value given is refused).

--prune also deletes the rows whose migrated doc is gone from Cosmos DB,
unless it expired by its ttl (the tables keep their own retention) or the
row was written after --since (the Table-based application's). --dry-run
reads everything and writes nothing; the summary lists the writes it would
do. --follow keeps going: a pass every --interval, each from the newest
change the previous pass read less --skew (clock skew between servers; a
change read twice is harmless); SIGINT or SIGTERM stop after the pass in
progress (exit 0). An interrupted reverse is simply run again: docs
already written back are skipped.`,
}
