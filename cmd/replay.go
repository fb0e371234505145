package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// ReplayOptions are the flags and dependencies of `bifrost-migrate replay`.
type ReplayOptions struct {
	Out    io.Writer // the summary and conflicts: text; or with JSON every line (output.go)
	ErrOut io.Writer // status and progress bars (text); bars and the error (JSON)
	JSON   bool
	Quiet  bool
	// ErrIsTerminal says whether ErrOut is a terminal (progress bars).
	ErrIsTerminal bool
	Now           func() time.Time

	Database string
	windowFlags
	// Replay carries the engine's options; Since and Transform are
	// filled from the fields here.
	Replay migrate.ReplayOptions
	TransformFlags
	// BlobContainer is the container of execution blobs (a hidden flag
	// for tests; execution-data otherwise).
	BlobContainer string
	// RU is --max-ru; pacer, made from it, paces every Cosmos DB request.
	RU    ruFlags
	pacer *azure.Pacer

	// Connect connects to the accounts and returns the engine's services,
	// a description of the targets without secrets, and the containers
	// that are missing.
	Connect func(ctx context.Context) (replayServices, error)
}

// replayServices is what ReplayOptions.Connect returns.
type replayServices struct {
	deps    migrate.ReplayDeps
	where   string
	missing []azure.Resource
}

// maxConflictsShown is how many conflicts the text output lists.
const maxConflictsShown = 20

// sinceExample is the example of an RFC 3339 time in messages.
const sinceExample = "2025-11-20T14:00:00Z"

// NewCmdReplay builds `bifrost-migrate replay`. runF replaces the command's
// work in tests; nil means replayRun.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
	var tables string
	c := &cobra.Command{
		Use:   "replay --since TIME [--prune] [--force] [--dry-run]",
		Short: "Rollback replay: re-apply rows changed in the tables since a time",
		Long: `After a cutover to Cosmos DB was rolled back and the application ran on
Table Storage again, bring Cosmos DB up to date from the tables: read the
rows whose Timestamp is at or after --since (RFC 3339, e.g.
` + sinceExample + `; the Table service filters them), transform them as run
does (pass run's --execution-ttl, --blob-threshold, --relationships and
--strict), and write each doc with optimistic concurrency on its _etag:

  no doc                      create it (409: start over)
  doc already as the row      nothing
  doc the tool wrote, nobody  replace it with If-Match when its
  changed it since            _migration.timestamp is older than the row's
                              (412: read again and start over)
  doc the application changed a conflict: not written, listed with its
  (no _migration, or its      differing fields (the tables' and Cosmos DB's
  _migration.hash does not    values, secrets as "***"); exit 4.
  match its content)          --force overwrites it (still with If-Match)

A doc whose _migration names another row is an id collision: the row is
dead-lettered. Start-overs are bounded (5 per doc); a doc that keeps
changing is dead-lettered. Blobs follow run's rules (create-only; a
different existing blob dead-letters the row). Dead letters go to
replay-dead-letter.jsonl in --state-dir, replaced by every replay. While
it works, replay holds the lock of --state-dir as run does: when a run or
replay already holds it, replay exits 1 right after its start-up checks,
naming that process's PID (a dry run takes no lock).

--prune also deletes docs carrying _migration whose source row no longer
exists, when they are unchanged (If-Match); changed ones are conflicts
(exit 4) unless --force. Without --prune nothing is deleted.

Replay keeps no checkpoint: every decision is made from what Cosmos DB
holds now, so after an interruption run it again; replaying the same
window twice writes nothing the second time.

--dry-run reads the tables and Cosmos DB and writes nothing anywhere; the
summary says what would be created, replaced, pruned, and lists the
conflicts. With --output json stdout gets {"type":"progress"} and
"status" lines, then one {"type":"summary"} object (and a {"type":"error"}
line when replay fails or leaves conflicts).

Exit 4 when conflicts are left unresolved, else 3 when rows were
dead-lettered; 1 when another process holds the state directory.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Out, opts.ErrOut = f.Out, f.ErrOut
			opts.JSON, opts.Quiet = f.Global.JSON(), f.Global.Quiet
			opts.ErrIsTerminal = f.ErrIsTerminal != nil && f.ErrIsTerminal()
			opts.Now = f.Now
			opts.Database = f.Global.Database
			if tables != "" {
				var err error
				if opts.Replay.Tables, err = parseTables(tables); err != nil {
					return UsageError(err)
				}
			}
			opts.Connect = func(ctx context.Context) (replayServices, error) { return connectReplay(ctx, f, opts) }
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return replayRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.TransformFlags.bind(fl, false)
	opts.windowFlags.bind(fl, "replay rows whose Timestamp is", "keep replaying")
	fl.BoolVar(&opts.Replay.Prune, "prune", false, "also delete unchanged migrated docs whose source row no longer exists")
	fl.BoolVar(&opts.Replay.Force, "force", false, "overwrite (and with --prune delete) docs the application changed, still with If-Match")
	fl.BoolVar(&opts.Replay.DryRun, "dry-run", false, "read everything, write nothing, print what would happen")
	fl.StringVar(&tables, "tables", "", "comma-separated `list` of tables to replay (default: Config,Entities,Relationships)")
	fl.IntVar(&opts.Replay.Concurrency, "concurrency", migrate.DefaultConcurrency, "the most docs replayed at once: below it, the requests in flight follow the RU budget × the latency measured")
	opts.RU.bind(fl)
	fl.StringVar(&opts.Replay.StateDir, "state-dir", migrate.DefaultStateDir, "`directory` of replay-dead-letter.jsonl, locked while replay runs")
	bindTestNames(fl, &opts.Replay.TablePrefix, &opts.BlobContainer)
	return c
}

// connectReplay builds the engine's services for the accounts of f and
// checks that the containers exist.
func connectReplay(ctx context.Context, f *Factory, opts *ReplayOptions) (replayServices, error) {
	var s replayServices
	t, err := connectTarget(f, opts.Database, opts.BlobContainer, opts.pacer)
	if err != nil {
		return s, err
	}
	if err := checkEndpoints(ctx, t.probes(opts.Replay.TablePrefix+firstTable(opts.Replay.Tables))...); err != nil {
		return s, err
	}
	reader, err := azure.NewDocReader(t.client, opts.Database)
	if err != nil {
		return s, err
	}
	s.deps = migrate.ReplayDeps{
		Source: azure.NewTableReader(t.tables, f.azureOptions()),
		Docs:   azure.NewCosmosDocs(t.client, opts.Database, &t.azopts.Retry),
		Blobs:  azure.NewBlobStore(t.blobContainer),
		Query:  reader, Env: migrate.Env{Now: opts.Now, Flow: opts.RU.flow(),
			Log: f.log.logf()},
	}
	s.where = t.where()
	s.missing, _, err = t.missing(ctx)
	return s, err
}

// replayRun validates the options, connects, replays and prints the
// summary and the conflicts. Unresolved conflicts return a ConflictError
// (exit 4); otherwise dead letters a PartialError (exit 3).
func replayRun(ctx context.Context, opts *ReplayOptions) error {
	m := opts.Replay
	since, err := opts.parse(windowCheck{database: opts.Database, stateDir: m.StateDir, concurrency: m.Concurrency, dryRun: m.DryRun, prune: m.Prune, ru: opts.RU})
	if err != nil {
		return err
	}
	m.Since = since
	if m.Transform, err = opts.TransformFlags.options(opts.Now()); err != nil {
		return err
	}

	o := newOutput("replay", opts.Out, opts.ErrOut, opts.JSON, opts.Quiet)
	opts.pacer = opts.RU.pacer()
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	if err := ready(ctx, o, svc.where, svc.missing, svc.deps.Source, m.TablePrefix, m.Tables); err != nil {
		return err
	}
	opts.startStatus(o, "rows", since, m.DryRun)
	if opts.Follow {
		return replayFollow(ctx, o, opts, m, svc.deps)
	}
	var bars *barProgress
	svc.deps.Progress, bars, m.CountRows = newProgress(o, opts.ErrIsTerminal, time.Now, opts.RU.recent())

	s, err := migrate.Replay(ctx, m, svc.deps)
	if bars != nil {
		bars.finish()
	}
	if s.Tables != nil {
		ru := opts.RU.report(s.Totals.Writes())
		end := endingOf(err, ctx.Err() != nil)
		var werr error
		if o.json() {
			werr = writeReplayJSON(o.lines, s, ru, end)
		} else {
			werr = writeReplayText(opts.Out, s, ru, end)
		}
		if err == nil {
			err = werr
		}
	}
	return windowExit(err, ctx.Err() != nil, "replay interrupted; it keeps no checkpoint: run it again with the same --since to finish", m.DryRun,
		s.Totals.Conflicts, "docs the application changed were not written; see the list, then rerun with --force to overwrite them with the tables' version", s.Totals.DeadLetters, "row(s)", s.DeadLetterFile)
}

// replayColumns are the count columns of the text summary.
var replayColumns = []countColumn[migrate.ReplayCounts]{
	{"ROWS", func(c migrate.ReplayCounts) int64 { return c.Rows }},
	{"CREATED", func(c migrate.ReplayCounts) int64 { return c.Created }},
	{"REPLACED", func(c migrate.ReplayCounts) int64 { return c.Replaced }},
	{"UNCHANGED", func(c migrate.ReplayCounts) int64 { return c.Unchanged }},
	{"CONFLICTS", func(c migrate.ReplayCounts) int64 { return c.Conflicts }},
	{"FORCED", func(c migrate.ReplayCounts) int64 { return c.Forced }},
	{"PRUNED", func(c migrate.ReplayCounts) int64 { return c.Pruned }},
	{"RETRIED-412", func(c migrate.ReplayCounts) int64 { return c.PreconditionFailed }},
	{"RETRIED-409", func(c migrate.ReplayCounts) int64 { return c.CreateConflicts }},
	{"DROPPED-INDEX", func(c migrate.ReplayCounts) int64 { return c.DroppedIndex }},
	{"KEPT-IN-TABLES", func(c migrate.ReplayCounts) int64 { return c.KeptInTables }},
	{"EXPIRED", func(c migrate.ReplayCounts) int64 { return c.Expired }},
	{"DEAD-LETTER", func(c migrate.ReplayCounts) int64 { return c.DeadLetters }},
}

// writeReplayText prints the summary table, the totals and the first
// conflicts, this session's request units, and last a line that says how
// replay ended.
func writeReplayText(w io.Writer, s migrate.ReplaySummary, ru ruReport, end ending) error {
	if s.DryRun {
		fmt.Fprintf(w, "DRY RUN: nothing was written; the counts say what replay would do.\n")
	}
	fmt.Fprintf(w, "replay of rows changed since %s\n\n", s.Since)
	groups := make([]countGroup[migrate.ReplayCounts], 0, len(s.Tables))
	for _, ts := range s.Tables {
		groups = append(groups, countGroup[migrate.ReplayCounts]{ts.Table, ts.Kinds, ts.ReplayCounts})
	}
	if err := writeCountTable(w, "TABLE", replayColumns, groups, s.Totals); err != nil {
		return err
	}
	if err := writeWarnings(w, s.Warnings); err != nil {
		return err
	}
	t := s.Totals
	fmt.Fprintln(w)
	verb, written := "uploaded", "docs written"
	if s.DryRun {
		verb, written = "to upload", "docs that would be written"
	}
	fmt.Fprintf(w, "blobs %s: %d (%d bytes)\n", verb, s.BlobsUploaded, s.BlobBytes)
	fmt.Fprintf(w, "%s: %d (created %d, replaced %d, forced %d, pruned %d) in %.1fs\n",
		written, t.Writes(), t.Created, t.Replaced, t.Forced, t.Pruned, s.ElapsedSeconds)
	fmt.Fprintf(w, "start-overs: %d after 412 (changed since read), %d after 409 (created meanwhile), %d after 404 (deleted meanwhile)\n",
		t.PreconditionFailed, t.CreateConflicts, t.DocVanished)
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
	fmt.Fprintf(w, "conflicts: %d left unresolved, %d overwritten or deleted with --force\n", t.Conflicts, t.Forced+t.ForcedPrunes)
	for i, c := range s.Conflicts {
		if i == maxConflictsShown {
			fmt.Fprintf(w, "  … and %d more (--output json lists up to 1000)\n", len(s.Conflicts)-maxConflictsShown)
			break
		}
		writeConflict(w, c)
	}
	switch {
	case end == endedInterrupted || end == endedTransient:
		fmt.Fprintf(w, "replay: not complete: run it again with the same --since to finish\n")
	case end == endedFailed:
		fmt.Fprintf(w, "replay: not complete: stopped by the error reported on stderr\n")
	case t.Conflicts > 0:
		fmt.Fprintf(w, "replay: %d conflict(s) left unresolved\n", t.Conflicts)
	case t.DeadLetters > 0:
		fmt.Fprintf(w, "replay: %d dead letter(s)\n", t.DeadLetters)
	default:
		fmt.Fprintf(w, "replay: OK\n")
	}
	return nil
}

// writeConflict prints one conflict: the doc, its row, why, what was
// done, and the differing fields with the tables' and Cosmos DB's values.
func writeConflict(w io.Writer, c migrate.Conflict) {
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
func writeReplayJSON(lines *jsonLines, s migrate.ReplaySummary, ru ruReport, end ending) error {
	return lines.emit(lineSummary, struct {
		Complete bool `json:"complete"`
		migrate.ReplaySummary
		RU ruReport `json:"ru"`
	}{end == endedDone, s, ru})
}

// replayFollow runs replay passes until ctx ends (SPEC §16), then prints
// the totals and the conflicts of every pass; exit 4 when any conflict
// was left, else 3 when rows were dead-lettered.
func replayFollow(ctx context.Context, o *output, opts *ReplayOptions, m migrate.ReplayOptions, deps migrate.ReplayDeps) error {
	var total migrate.ReplayCounts
	m.CountRows = false
	f, err := followPasses(ctx, o, migrate.FollowOptions{Since: m.Since, Interval: opts.Interval, Skew: opts.Skew},
		func(pctx context.Context, since time.Time) (pass[migrate.Conflict], error) {
			m.Since = since
			s, err := migrate.Replay(pctx, m, deps)
			m.KeepDeadLetters = true // the passes after the first add to the file
			if err != nil {
				return pass[migrate.Conflict]{}, err
			}
			total.Add(s.Totals)
			return newPass(migrate.PassResult{Read: s.Totals.Rows, Applied: s.Totals.Writes(), Conflicts: s.Totals.Conflicts, Newest: deref(s.Newest)},
				s.Totals.DeadLetters, s.Conflicts, func(c migrate.Conflict) string { return c.Container + "/" + c.Scope + "/" + c.ID }), nil
		})
	if err != nil {
		return err
	}
	return followedSummary(o, f, total, opts.RU.report(total.Writes()), fmt.Sprintf("%d row(s) read, %d written", total.Rows, total.Writes()),
		writeConflict, m.StateDir, migrate.ReplayDeadLetterFile)
}
