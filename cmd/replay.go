package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// maxConflictsShown is how many conflicts the text output lists.
const maxConflictsShown = 20

// sinceExample is the example of an RFC 3339 time in messages.
const sinceExample = "2025-11-20T14:00:00Z"

// NewCmdReplay builds `bifrost-migrate replay`. runF replaces the command's
// work in tests; nil means replayRun.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
	opts.windowOptions = newWindowOptions(&opts.Engine.Common, &opts.Engine.WindowOptions, replayHelp)
	opts.Connect = func(ctx context.Context) (replayServices, error) { return connectReplay(ctx, f, opts) }
	return newWindowCmd(f, opts, &opts.windowOptions, replayDoc, runF, replayRun, &tablesFlag{what: "replay", tables: &opts.Engine.Tables})
}

// connectReplay builds the engine's services for the accounts of f.
func connectReplay(ctx context.Context, f *Factory, opts *ReplayOptions) (replayServices, error) {
	c, err := opts.connect(ctx, f, tablesRead|blobsRead|cosmosRead|cosmosWrite, firstTable(opts.Engine.Tables))
	return replayServices{conn: c, deps: migrate.ReplayDeps{
		Source: c.rowReader, Docs: c.docs, Blobs: c.blobStore, Query: c.docReader, Env: opts.env(f),
	}}, err
}

// replayRun replays, or follows, and prints the summary and the
// conflicts. Unresolved conflicts return a ConflictError (exit 4);
// otherwise dead letters a PartialError (exit 3).
func replayRun(ctx context.Context, opts *ReplayOptions) error {
	m := opts.Engine
	w, err := opts.begin(replayWords, &m.Common)
	if err != nil {
		return err
	}
	defer w.obs.Finish()
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	if err := w.ready(ctx, svc.conn, svc.deps.Source, m.Tables); err != nil {
		return err
	}
	pass := func(ctx context.Context, since time.Time, p migrate.Progress, counted, keep bool) (windowSummary, error) {
		m.Since, m.KeepDeadLetters, m.CountRows, svc.deps.Progress = since, keep, counted, p
		s, err := migrate.Replay(ctx, m, svc.deps)
		return replaySummary{s}, err
	}
	if w.flags.Follow {
		return w.follow(ctx, replaySummary{}, pass)
	}
	return w.once(ctx, pass)
}

// replayColumns are the count columns of the text summary.
var replayColumns = countColumns[migrate.ReplayCounts]{
	names: []string{"ROWS", "CREATED", "REPLACED", "UNCHANGED", "CONFLICTS", "FORCED", "PRUNED",
		"RETRIED-412", "RETRIED-409", "DROPPED-INDEX", "KEPT-IN-TABLES", "EXPIRED", "DEAD-LETTER"},
	counts: func(c migrate.ReplayCounts) []int64 {
		return []int64{c.Rows, c.Created, c.Replaced, c.Unchanged, c.Conflicts, c.Forced, c.Pruned,
			c.PreconditionFailed, c.CreateConflicts, c.DroppedIndex, c.KeptInTables, c.Expired, c.DeadLetters}
	},
}

// replaySummary is a replay's summary as the code replay and reverse
// share reads it: the counts by table, the writes (created, replaced,
// forced, pruned), the blobs and the start-overs.
type replaySummary struct{ migrate.ReplaySummary }

func (s replaySummary) window() migrate.WindowSummary { return s.WindowSummary }

func (s replaySummary) tally() tally {
	c := s.Totals
	return tally{ran: s.Tables != nil, read: c.Rows, written: c.Writes(), conflicts: c.Conflicts, deadLetters: c.DeadLetters, ruDocs: c.Writes(), newest: s.Newest}
}

func (s replaySummary) text() (summaryText, error) {
	c := s.Totals
	groups := make([]countGroup[migrate.ReplayCounts], len(s.Tables))
	for i, ts := range s.Tables {
		groups[i] = countGroup[migrate.ReplayCounts]{ts.Table, ts.Kinds, ts.ReplayCounts}
	}
	var counts, writes strings.Builder
	if err := writeCountTable(&counts, "TABLE", replayColumns, groups, c); err != nil {
		return summaryText{}, err
	}
	fmt.Fprintf(&writes, "%s: %d (%d bytes)\n", whatIsDone(s.DryRun, "blobs", "uploaded"), s.BlobsUploaded, s.BlobBytes)
	fmt.Fprintf(&writes, "%s: %d (created %d, replaced %d, forced %d, pruned %d) in %.1fs\n",
		whatIsDone(s.DryRun, "docs", "written"), c.Writes(), c.Created, c.Replaced, c.Forced, c.Pruned, s.ElapsedSeconds)
	fmt.Fprintf(&writes, "start-overs: %d after 412 (changed since read), %d after 409 (created meanwhile), %d after 404 (deleted meanwhile)\n",
		c.PreconditionFailed, c.CreateConflicts, c.DocVanished)
	return summaryText{counts: counts.String(), writes: writes.String(),
		forced: fmt.Sprintf("%d %s with --force", c.Forced+c.ForcedPrunes, would(s.DryRun, "overwritten or deleted"))}, nil
}

func (s replaySummary) conflicts() []windowConflict {
	return listConflicts(s.Conflicts, func(c migrate.Conflict) windowConflict { return replayConflict{c} })
}

func (s replaySummary) plus(o windowSummary) windowSummary {
	s.Totals.Add(o.(replaySummary).Totals)
	return s
}

func (s replaySummary) totals() any { return s.Totals }

// writeReplayText prints the summary table, the totals and the first
// conflicts, this session's request units, and last a line that says how
// replay ended.
func writeReplayText(w io.Writer, s migrate.ReplaySummary, ru ui.RUReport, end ending) error {
	return writeWindowText(w, replayWords, replaySummary{s}, ru, end)
}

// replayConflict is a conflict of replay's as the code replay and reverse
// share lists it.
type replayConflict struct{ migrate.Conflict }

func (c replayConflict) doc() string { return c.Container + "/" + c.Scope + "/" + c.ID }

// writeText prints the conflict: the doc, its row, why, what was done,
// and the differing fields with the tables' and Cosmos DB's values.
func (c replayConflict) writeText(w io.Writer) {
	fmt.Fprintf(w, "  %s/%s/%s ← %s %s/%s\n", c.Container, c.Scope, c.ID, c.Table, c.PartitionKey, c.RowKey)
	fmt.Fprintf(w, "    %s; %s\n", c.Reason, c.Resolution)
	for _, d := range c.Fields {
		fmt.Fprintf(w, "    %s: tables %s, cosmos %s\n", d.Path, valueText(d.Tables), valueText(d.Cosmos))
	}
	if n := c.FieldCount - len(c.Fields); n > 0 {
		fmt.Fprintf(w, "    … and %d more field(s)\n", n)
	}
}

func valueText(v json.RawMessage) string {
	if v == nil {
		return "(absent)"
	}
	const maxValue = 120
	if len(v) > maxValue {
		return string(v[:maxValue]) + "…"
	}
	return string(v)
}

// writeReplayJSON prints the summary as one summary line; "complete" is
// false when replay stopped before the end (end); "ru" is its request
// units.
func writeReplayJSON(lines *ui.JSONLines, s migrate.ReplaySummary, ru ui.RUReport, end ending) error {
	return lines.Emit(ui.LineSummary, windowLine{end == endedDone, replaySummary{s}, ru})
}

// replayDoc is the help of `bifrost-migrate replay`.
var replayDoc = cmdDoc{
	use:   "replay --since TIME [--follow] [--prune] [--force] [--dry-run]",
	short: "After a rollback, bring Cosmos DB up to date from the tables",
	long: `Read the rows changed in the tables since --since and write their docs
with optimistic concurrency: a doc the tool wrote and nobody changed since
is replaced, a doc the application changed is a conflict, listed and left
alone (exit 4; --force overwrites it). --follow keeps replaying, for a
cutover of seconds. Safe to run again: a second replay of one window writes
nothing.`,
	example: `  bifrost-migrate replay --since 2026-11-20T14:00:00Z --dry-run
  bifrost-migrate replay --since 2026-11-20T14:00:00Z
  # keep Cosmos DB in step while the application still writes to the tables
  bifrost-migrate replay --since 2026-11-20T14:00:00Z --follow --interval 10s
  # also delete the docs whose rows were deleted during the rollback
  bifrost-migrate replay --since 2026-11-20T14:00:00Z --prune`,
}
