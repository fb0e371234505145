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
	"github.com/bifrost/bifrost-migrate/store"
)

// maxConflictsShown is how many conflicts the text output lists.
const maxConflictsShown = 20

// sinceExample is the example of an RFC 3339 time in messages.
const sinceExample = "2025-11-20T14:00:00Z"

// ReplayOptions are the flags and dependencies of `bifrost-migrate
// replay`.
type ReplayOptions struct {
	windowOptions
	// Engine carries the engine's options: the flags fill them, replayRun
	// the options it works with (engineOptions.start).
	Engine migrate.ReplayOptions
	// Connect connects to the accounts and returns the engine's services
	// with where they are and what of init's resources is missing.
	Connect func(ctx context.Context) (replayServices, error)
}

// replayServices are what ReplayOptions.Connect returns.
type replayServices = services[migrate.ReplayDeps]

// NewCmdReplay builds `bifrost-migrate replay`. runF replaces the command's
// work in tests; nil means replayRun.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
	opts.windowOptions = newWindowOptions(&opts.Engine.Common, &opts.Engine.WindowOptions, replayHelp, f.serviceNow)
	opts.Connect = func(ctx context.Context) (replayServices, error) { return connectReplay(ctx, f, opts) }
	c := newCommand(replayDoc, func(c *cobra.Command) error {
		opts.from(f, c.Name())
		return runWith(c, opts, runF, replayRun)
	})
	addFlags(c, &opts.window, &tablesFlag{what: "replay", tables: &opts.Engine.Tables}, &opts.engineFlags)
	return c
}

// connectReplay builds the engine's services for the accounts of f.
func connectReplay(ctx context.Context, f *Factory, opts *ReplayOptions) (replayServices, error) {
	c, err := opts.connect(ctx, f, tablesRead|blobsRead|cosmosRead|cosmosWrite, firstTable(opts.Engine.Tables))
	return replayServices{conn: c, deps: migrate.ReplayDeps{
		Source: c.rowReader, Docs: c.docs, Blobs: c.blobStore, Query: c.docReader, Env: opts.env(f),
	}}, err
}

// replayRun replays once, or follows, and prints the summary and the
// conflicts. Unresolved conflicts return a ConflictError (exit 4);
// otherwise dead letters a PartialError (exit 3).
func replayRun(ctx context.Context, opts *ReplayOptions) error {
	m := opts.Engine
	w, err := opts.begin(replayWords, &m.Common)
	if err != nil {
		return err
	}
	defer w.obs.Finish()
	if !m.DryRun {
		// Each pass reads the tables' ranges again (a full verify may
		// learn them meanwhile); one that cannot be read is refused
		// before any request.
		if _, err := store.LoadRanges(m.StateDir); err != nil {
			return InputError(err)
		}
	}
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	if err := w.ready(ctx, svc.conn, svc.deps.Source, m.Tables); err != nil {
		return err
	}
	if w.flags.Follow {
		return replayFollow(ctx, w, m, svc.deps)
	}
	p, counted := w.progress()
	m.CountRows, svc.deps.Progress = counted, p
	s, err := migrate.Replay(ctx, m, svc.deps)
	p.Finish()
	return w.ended(ctx, replayReport(s), err)
}

// replayFollow replays again and again (--follow, SPEC §16), each pass
// from the previous one's watermark, until ctx ends; then it prints what
// the passes did.
func replayFollow(ctx context.Context, w *windowCommand, m migrate.ReplayOptions, deps migrate.ReplayDeps) error {
	f, fo := w.follow()
	var total migrate.ReplayCounts
	err := migrate.Follow(ctx, fo, func(ctx context.Context, since time.Time) (migrate.PassResult, error) {
		f.started(since)
		m.Since, m.KeepDeadLetters, deps.Progress = since, f.keep, f.progress
		s, err := migrate.Replay(ctx, m, deps)
		if err != nil {
			return migrate.PassResult{}, err
		}
		total.Add(s.Totals)
		return f.passed(replayReport(s)), nil
	}, f.ended)
	return f.summary(ctx, err, total)
}

// replayColumns are the count columns of the text summary; replayCounts
// gives a count's, in that order.
var replayColumns = []string{"ROWS", "CREATED", "REPLACED", "UNCHANGED", "CONFLICTS", "FORCED", "PRUNED",
	"RETRIED-412", "RETRIED-409", "DROPPED-INDEX", "KEPT-IN-TABLES", "EXPIRED", "DEAD-LETTER"}

func replayCounts(c migrate.ReplayCounts) []int64 {
	return []int64{c.Rows, c.Created, c.Replaced, c.Unchanged, c.Conflicts, c.Forced, c.Pruned,
		c.PreconditionFailed, c.CreateConflicts, c.DroppedIndex, c.KeptInTables, c.Expired, c.DeadLetters}
}

// replayReport is a replay's summary as the steps replay and reverse
// share read it: the counts by table, the writes (created, replaced,
// forced, pruned), the blobs and the start-overs, and the conflicts.
func replayReport(s migrate.ReplaySummary) windowReport {
	c := s.Totals
	r := windowReport{window: s.WindowSummary, summary: s,
		tally:  tally{ran: s.Tables != nil, read: c.Rows, written: c.Writes(), conflicts: c.Conflicts, deadLetters: c.DeadLetters, unchanged: c.Unchanged, ruDocs: c.Writes(), newest: s.Newest},
		counts: countTable{head: "TABLE", names: replayColumns, total: replayCounts(c)},
		forced: fmt.Sprintf("%d %s with --force", c.Forced+c.ForcedPrunes, would(s.DryRun, "overwritten or deleted")),
	}
	for _, ts := range s.Tables {
		g := countGroup{name: ts.Table, kinds: map[string][]int64{}, all: replayCounts(ts.ReplayCounts)}
		for k, kc := range ts.Kinds {
			g.kinds[k] = replayCounts(kc)
		}
		r.counts.groups = append(r.counts.groups, g)
	}
	var writes strings.Builder
	fmt.Fprintf(&writes, "%s: %d (%d bytes)\n", whatIsDone(s.DryRun, "blobs", "uploaded"), s.BlobsUploaded, s.BlobBytes)
	fmt.Fprintf(&writes, "%s: %d (created %d, replaced %d, forced %d, pruned %d) in %.1fs\n",
		whatIsDone(s.DryRun, "docs", "written"), c.Writes(), c.Created, c.Replaced, c.Forced, c.Pruned, s.ElapsedSeconds)
	fmt.Fprintf(&writes, "start-overs: %d after 412 (changed since read), %d after 409 (created meanwhile), %d after 404 (deleted meanwhile)\n",
		c.PreconditionFailed, c.CreateConflicts, c.DocVanished)
	r.writes = writes.String()
	for _, cf := range s.Conflicts {
		r.conflicts = append(r.conflicts, listedConflict{doc: cf.Container + "/" + cf.Scope + "/" + cf.ID, text: replayConflictText(cf), value: cf})
	}
	return r
}

// writeReplayText prints the summary table, the totals and the first
// conflicts, this session's request units, and last a line that says how
// replay ended.
func writeReplayText(w io.Writer, s migrate.ReplaySummary, ru ui.RUReport, end ending) error {
	return writeWindowText(w, replayWords, replayReport(s), ru, end)
}

// replayConflictText is a conflict of replay's as the summary prints it:
// the doc, its row, why, what was done, and the differing fields with
// the tables' and Cosmos DB's values.
func replayConflictText(c migrate.Conflict) string {
	var w strings.Builder
	fmt.Fprintf(&w, "  %s/%s/%s ← %s %s/%s\n", c.Container, c.Scope, c.ID, c.Table, c.PartitionKey, c.RowKey)
	fmt.Fprintf(&w, "    %s; %s\n", c.Reason, c.Resolution)
	for _, d := range c.Fields {
		fmt.Fprintf(&w, "    %s: tables %s, cosmos %s\n", d.Path, valueText(d.Tables), valueText(d.Cosmos))
	}
	if n := c.FieldCount - len(c.Fields); n > 0 {
		fmt.Fprintf(&w, "    … and %d more field(s)\n", n)
	}
	return w.String()
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
	return lines.Emit(ui.LineSummary, windowLine{end == endedDone, s, ru})
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
