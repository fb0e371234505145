package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

// windowFlags are the flags replay and reverse share, into
// migrate.WindowOptions: the window of changes they read (--since), what
// they may do to the other side (--prune, --force) and how --follow
// repeats it (SPEC §16).
type windowFlags struct {
	w *migrate.WindowOptions
	// dryRun is --dry-run, which --follow excludes.
	dryRun *bool
	help   windowHelp
	// Since is --since as given (RFC 3339); validate parses it into w.
	Since string
	// Follow repeats passes every Interval, each from the previous pass's
	// watermark less Skew, until SIGINT, SIGTERM or SIGHUP.
	Follow         bool
	Interval, Skew time.Duration
	// now is the time the services stamp changes with (a --since later
	// than it, by more than Skew, is refused).
	now func() time.Time
}

// windowHelp is what the help of a replay's or reverse's flags says it
// does: the engine's flags (but --dry-run, which both describe alike) and
// the window's.
type windowHelp struct {
	engineHelp
	// since: what is read at or after --since ("replay rows whose
	// Timestamp is"); follow: what following does ("keep replaying").
	since, follow string
	// prune and force: what --prune and --force do.
	prune, force string
}

// windowOptions are what replay's and reverse's options share: the
// engine's options and the window's flags.
type windowOptions struct {
	engineOptions
	window windowFlags
}

// newWindowOptions returns the options of a replay or reverse whose
// engine options are c and w, with the flags' help; now is the time the
// services stamp changes with (--since is checked against it).
func newWindowOptions(c *migrate.Common, w *migrate.WindowOptions, help windowHelp, now func() time.Time) windowOptions {
	help.dryRun = "read everything, write nothing, print what would happen"
	return windowOptions{
		engineOptions: engineOptions{engineFlags: newEngineFlags(c, help.engineHelp, false)},
		window:        windowFlags{w: w, dryRun: &c.DryRun, help: help, now: now},
	}
}

func (w *windowFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&w.Since, "since", "", w.help.since+" at or after this RFC 3339 `TIME` (e.g. "+sinceExample+")")
	fl.BoolVar(&w.Follow, "follow", false, w.help.follow+": a pass every --interval, until SIGINT, SIGTERM or SIGHUP")
	fl.DurationVar(&w.Interval, "interval", migrate.DefaultFollowInterval, "with --follow, the wait between passes")
	fl.DurationVar(&w.Skew, "skew", migrate.DefaultFollowSkew, "with --follow, how far before the newest change read each next pass starts (clock skew between servers)")
	fl.BoolVar(&w.w.Prune, "prune", false, w.help.prune)
	fl.BoolVar(&w.w.Force, "force", false, w.help.force)
}

// validate parses --since into the window's options and checks what
// --follow excludes; errors are usage errors that name the flag.
func (w *windowFlags) validate() error {
	since, err := parseSince(w.Since)
	if err != nil {
		return err
	}
	w.w.Since = since
	now := w.now().UTC()
	switch {
	case since.After(now.Add(max(w.Skew, 0))):
		return UsageError(futureSince(w.Since, since, now))
	case w.Follow && (*w.dryRun || w.w.Prune):
		return UsageError(errors.New("--follow cannot be combined with --dry-run or --prune (run them once, before or after following)"))
	case w.Follow && w.Interval <= 0:
		return badValue("--interval", w.Interval, "a positive duration such as 10s or 1m")
	case w.Follow && w.Skew < 0:
		return badValue("--skew", w.Skew, "a duration of 0s or more")
	}
	return nil
}

// parseSince parses --since.
func parseSince(s string) (time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return time.Time{}, UsageError(fmt.Errorf("--since is required: an RFC 3339 time such as %s", sinceExample))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badValue("--since", s, "an RFC 3339 time such as "+sinceExample)
	}
	return t.UTC(), nil
}

// futureSince is the error of a --since (given, which is since) later
// than now: a mistyped year, or local time typed as UTC, would read
// nothing and end "OK".
func futureSince(given string, since, now time.Time) error {
	value := given
	if utc := since.Format(time.RFC3339Nano); utc != given {
		value += " (" + utc + ")"
	}
	return fmt.Errorf("--since %s is later than now (%s, UTC): no change is that recent, so nothing would be read; give a time in the past, in UTC or with its offset",
		value, now.Format(time.RFC3339))
}

// warnReach warns, in one line, when since is more than a day before the
// start of the migration whose state is in dir (state.json): the window
// then reaches back further than the migration, which is seldom what was
// meant. It only reads state.json (no lock, nothing written, in a dry run
// too), and says so when it cannot.
func warnReach(o *ui.Output, dir string, since time.Time) {
	st, err := migrate.LoadState(dir)
	switch {
	case err != nil:
		o.Warning("%s cannot be read, so --since is not checked against when the migration started", filepath.Join(dir, migrate.StateFile))
	case st == nil || st.Started.IsZero():
	case st.Started.Sub(since) > 24*time.Hour:
		o.Warning("--since %s reaches %s before the migration started (run %s at %s): every change since then is in the window; check that it is the time you meant",
			since.Format(time.RFC3339Nano), days(st.Started.Sub(since)), st.RunID, st.Started.UTC().Format(time.RFC3339))
	}
}

// days says d, a day or more, in days and hours ("3 days 4 h").
func days(d time.Duration) string {
	h := int(d.Hours())
	unit := "days"
	if h/24 == 1 {
		unit = "day"
	}
	if h%24 == 0 {
		return fmt.Sprintf("%d %s", h/24, unit)
	}
	return fmt.Sprintf("%d %s %d h", h/24, unit, h%24)
}

// windowReport is a replay's or a reverse's summary as the steps they
// share read it: plain values, made by replayReport and reverseReport.
type windowReport struct {
	// window is what every window's summary holds: since, a dry run, the
	// warnings and the dead letters.
	window migrate.WindowSummary
	tally  tally
	// counts is the table of counts by table or container; writes the
	// lines that say what was written (in a dry run: would be); forced
	// the conflicts line's count of what --force wrote ("2 written with
	// --force"); plan, when not empty, a dry run's writes.
	counts               countTable
	writes, forced, plan string
	conflicts            []listedConflict
	// summary is the engine's summary: the fields of the JSON summary
	// line.
	summary any
}

// listedConflict is a conflict of a replay or a reverse as the summary
// lists it: the doc it is of (--follow keeps the latest of each doc's),
// its lines of text, and its value, whose fields --output json lists.
type listedConflict struct {
	doc, text string
	value     any
}

// windowCommand is a replay or a reverse at work, once its flags are
// valid: what the two share from their start to their last line.
type windowCommand struct {
	e      *engineOptions
	flags  windowFlags
	words  wayWords
	common *migrate.Common
	o      *ui.Output
	obs    *ui.Progress
	// atWork says, once, what the command says only once its engine is
	// at work (a command refused at its start, the state directory in
	// use, prints only its error): how far back --since reaches.
	atWork func()
	// rec keeps replay.json or reverse.json (status reads it); started
	// is when the command began, the start of a pass that runs once.
	rec     *passRecorder
	started time.Time
}

// begin starts the replay or reverse of words whose engine options are
// c: the options it works with and the pacer (engineOptions.start), then
// its progress, which the caller finishes.
func (w *windowOptions) begin(words wayWords, c *migrate.Common) (*windowCommand, error) {
	e := &w.engineOptions
	o, err := e.start(words.name, c)
	if err != nil {
		return nil, err
	}
	obs, err := e.Observe.progress(e.IO, o, words.name, e.RU.meters(), words.observed, "")
	if err != nil {
		return nil, err
	}
	if w.window.Follow {
		obs.Following(w.window.w.Since)
	}
	wc := &windowCommand{e: e, flags: w.window, words: words, common: c, o: o, obs: obs,
		rec: newPassRecorder(o, words, c, w.window), started: time.Now()}
	wc.atWork = sync.OnceFunc(func() { warnReach(o, c.StateDir, w.window.w.Since) })
	return wc, nil
}

// ready prints where the command works (c's accounts), then fails when
// the database or containers are missing or the tables cannot be read
// through rows (prefix before their names; none given: all three).
func ready(ctx context.Context, o *ui.Output, c conn, rows store.PageReader, prefix string, tables []string) error {
	o.Status("%s", c.where())
	if len(c.missing) > 0 {
		return &notProvisionedError{Missing: c.missing}
	}
	return probeTables(ctx, rows, prefix, tables)
}

// ready is ready for the replay or reverse, which then says the options
// it took and what it reads.
func (w *windowCommand) ready(ctx context.Context, c conn, rows store.PageReader, tables []string) error {
	if err := ready(ctx, w.o, c, rows, w.common.TablePrefix, tables); err != nil {
		return err
	}
	w.e.migration.say(w.o)
	w.flags.startStatus(w.o, w.words.reads, w.flags.w.Since, w.common.DryRun)
	return nil
}

// progress is the progress of a replay or reverse that runs once, whose
// first report says what the command says once at work; counted: it
// shows totals, which the engine then pre-counts. The caller finishes
// it once the engine is done, before the summary.
func (w *windowCommand) progress() (p *ui.Progress, counted bool) {
	w.obs.OnWork(w.atWork)
	return w.obs, w.obs.WantsTotals()
}

// ended prints the summary r of a replay or reverse that ran once, which
// its error err stopped (or nil), and returns the error the command ends
// with (windowExit).
func (w *windowCommand) ended(ctx context.Context, r windowReport, err error) error {
	t := r.tally
	w.rec.passEnded(w.started, w.flags.w.Since, r)
	ru := w.e.RU.report(t.ruDocs)
	end := endingOf(err, ctx.Err() != nil)
	var werr error
	switch {
	case !t.ran || err != nil && !t.counted() && ctx.Err() == nil:
		// Nothing was done: the error alone says what happened.
	case w.o.JSON():
		werr = w.o.Lines().Emit(ui.LineSummary, windowLine{end == endedDone, r.summary, ru})
	default:
		werr = writeWindowText(w.e.Out, w.words, r, ru, end)
	}
	if err == nil {
		err = werr
	}
	return w.rec.end(ctx, windowExit(err, ctx.Err() != nil, w.common.DryRun, t, r.window.DeadLetterFile, w.words))
}

// following is what the passes of --follow did so far (SPEC §16): each
// pass reports to the progress, which shows no bar and no JSON progress
// lines while following (a pass line ends each), and the passes after
// the first add to the dead-letter file.
type following struct {
	w        *windowCommand
	progress migrate.Progress
	keep     bool
	sum      tally
	followed followed
	last     followPass
	werr     error
	// passStart and passSince are the pass at work's start and the time
	// it reads from, for the pass record.
	passStart, passSince time.Time
}

// follow starts following: the options of migrate.Follow, from --since,
// --interval and --skew, and the progress of its passes.
func (w *windowCommand) follow() (*following, migrate.FollowOptions) {
	w.obs.OnWork(w.atWork)
	f := &following{w: w, progress: w.obs, followed: followed{conflicts: map[string]listedConflict{}}}
	return f, migrate.FollowOptions{Since: w.flags.w.Since, Interval: w.flags.Interval, Skew: w.flags.Skew}
}

// started is said when a pass that reads from since starts.
func (f *following) started(since time.Time) {
	f.passStart, f.passSince = time.Now(), since
	f.w.obs.PassStarted()
}

// passed counts what a pass did (r) and returns what migrate.Follow
// takes of it; the passes after it add to the dead-letter file.
func (f *following) passed(r windowReport) migrate.PassResult {
	t := r.tally
	f.w.rec.passEnded(f.passStart, f.passSince, r)
	f.keep = true
	f.sum.add(t)
	f.last = newFollowPass(t.deadLetters, r.conflicts)
	f.followed.deadLetters += t.deadLetters
	for k, c := range f.last.conflicts {
		f.followed.conflicts[k] = c
	}
	return migrate.PassResult{Read: t.read, Applied: t.written, Conflicts: t.conflicts, Newest: deref(t.newest)}
}

// ended prints the line of a pass that ended (migrate.Follow's onPass).
func (f *following) ended(r migrate.PassReport) {
	f.w.obs.PassEnded(r)
	f.followed.passes = r.Pass
	if err := writePass(f.w.o, r, f.last.deadLetters); err != nil && f.werr == nil {
		f.werr = err
	}
}

// summary prints, once following ended (err: the first error of a pass),
// the totals of every pass (total: the engine's counts added up), their
// conflicts and request units, and returns the error the command ends
// with: exit 4 when any conflict was left, else 3 when there were dead
// letters.
func (f *following) summary(ctx context.Context, err error, total any) error {
	if err == nil {
		err = f.werr
	}
	if err != nil {
		return f.w.rec.end(ctx, err)
	}
	w := f.w
	return w.rec.end(ctx, followedSummary(w.o, f.followed, total, w.e.RU.report(f.sum.ruDocs), fmt.Sprintf(w.words.followed, f.sum.read, f.sum.written),
		w.common.StateDir, w.words.deadLetterFile))
}

// followedSummary prints what the passes of --follow did — the totals
// (text: the line read), the conflicts and the request units — and
// returns the error that ends the command: exit 4 when conflicts are
// left, else 3 when there were dead letters (in stateDir/deadLetters).
func followedSummary(o *ui.Output, f followed, total any, ru ui.RUReport, read string, stateDir, deadLetters string) error {
	var err error
	if o.JSON() {
		listed := f.listed()
		values := make([]any, len(listed))
		for i, c := range listed {
			values[i] = c.value
		}
		err = o.Lines().Emit(ui.LineSummary, struct {
			Passes    int         `json:"passes"`
			Totals    any         `json:"totals"`
			Conflicts []any       `json:"conflicts"`
			RU        ui.RUReport `json:"ru"`
		}{f.passes, total, values, ru})
	} else {
		fmt.Fprintf(o.Out(), "followed for %d pass(es): %s, %d conflict(s), %d dead letter(s)\n", f.passes, read, len(f.conflicts), f.deadLetters)
		for i, c := range f.listed() {
			if i == maxConflictsShown {
				fmt.Fprintf(o.Out(), "  … and %d more\n", len(f.conflicts)-i)
				break
			}
			io.WriteString(o.Out(), c.text)
		}
		ru.WriteText(o.Out())
	}
	if err != nil {
		return err
	}
	return f.exit(filepath.Join(stateDir, deadLetters))
}

// writeWindowText prints the text summary of a replay or reverse r with
// its request units ru, its last line saying how it ended (end).
func writeWindowText(w io.Writer, words wayWords, r windowReport, ru ui.RUReport, end ending) error {
	ws, t := r.window, r.tally
	if ws.DryRun {
		fmt.Fprintf(w, "DRY RUN: nothing was written; the counts say what %s would do.\n", words.name)
	}
	fmt.Fprintf(w, "%s of %s changed since %s\n\n", words.name, words.reads, ws.Since)
	if err := writeCountTable(w, r.counts); err != nil {
		return err
	}
	if err := writeWarnings(w, ws.Warnings); err != nil {
		return err
	}
	fmt.Fprintln(w)
	io.WriteString(w, r.writes)
	ru.WriteText(w)
	if !writeDeadLetterCount(w, t.deadLetters, ws.DeadLetterFile) {
		for _, dl := range ws.DeadLetters {
			fmt.Fprintf(w, "  %s %s/%s: %s\n", dl.Table, dl.PartitionKey, dl.RowKey, dl.Reason)
		}
	}
	fmt.Fprintf(w, "conflicts: %d %s, %s\n", t.conflicts, would(ws.DryRun, "left unresolved"), r.forced)
	writeConflicts(w, r.conflicts)
	io.WriteString(w, r.plan)
	return writeWindowEnd(w, words, end, t, ws.DryRun)
}

// startStatus prints what a replay or reverse reads (what: "rows" or
// "docs") and how.
func (w windowFlags) startStatus(o *ui.Output, what string, since time.Time, dryRun bool) {
	if w.Follow {
		o.Status("following %s changed since %s: a pass every %s, each from the newest change read less %s; SIGINT, SIGTERM or SIGHUP stops after the pass in progress",
			what, since.Format(time.RFC3339Nano), w.Interval, w.Skew)
		return
	}
	o.Status("%s changed since %s", what, since.Format(time.RFC3339Nano))
	if dryRun {
		o.Status("dry run: nothing will be written")
	}
}

// windowExit is the error a replay or reverse (not --follow) ends with,
// once its summary is printed: err as it is (interrupted: a sentence
// that says to run the same command again, words.rerun), else exit 4 for
// the conflicts t left, else exit 3 for its dead letters.
func windowExit(err error, isInterrupted, dryRun bool, t tally, deadLetterFile string, words wayWords) error {
	dry := ""
	if dryRun {
		dry = "dry run: "
	}
	switch {
	case err != nil && isInterrupted:
		return interrupted(words.rerun, err)
	case err != nil:
		return err
	case t.conflicts > 0:
		return ConflictError(fmt.Errorf("%s%d conflict(s) %s: %s", dry, t.conflicts, would(dryRun, "left unresolved"), words.conflictsLeft))
	case t.deadLetters > 0 && dryRun:
		return PartialError(fmt.Errorf("dry run: %d %s would be dead-lettered", t.deadLetters, words.deadLettered))
	case t.deadLetters > 0:
		return PartialError(fmt.Errorf("%d %s dead-lettered; see %s", t.deadLetters, words.deadLettered, deadLetterFile))
	}
	return nil
}

// tally is what the code replay and reverse share counts of a summary.
type tally struct {
	// ran says the engine got as far as its work: there is a summary to
	// print.
	ran bool
	// read counts the changes read; written the writes (in a dry run:
	// those it would do); conflicts those left unresolved; deadLetters
	// what was dead-lettered; unchanged what needed no write.
	read, written, conflicts, deadLetters, unchanged int64
	// ruDocs are the docs the request units are spread over (ui.RUReport).
	ruDocs int64
	// newest is the time of the newest change applied (nil: none).
	newest *time.Time
}

// counted reports whether t counts anything: something was read, written
// or left.
func (t tally) counted() bool { return t.read+t.written+t.conflicts+t.deadLetters > 0 }

// add adds the counts of o to t.
func (t *tally) add(o tally) {
	t.read += o.read
	t.written += o.written
	t.ruDocs += o.ruDocs
}

// wayWords are the words of a replay or reverse.
type wayWords struct {
	// name is the command; reads what its window holds ("rows", "docs").
	name, reads string
	// rerun says what to do after an interruption; conflictsLeft what
	// the conflicts left mean and what --force does; deadLettered what
	// the dead letters are of ("row(s)").
	rerun, conflictsLeft, deadLettered string
	// followed formats the totals of --follow: the changes read and the
	// writes.
	followed string
	// deadLetterFile is the name of the dead-letter file in --state-dir.
	deadLetterFile string
	// observed are the words of its progress lines.
	observed ui.Words
}

// windowLine is the summary line of a replay or reverse with --output
// json: "complete" (false when it stopped before the end), the summary's
// own fields, then "ru", its request units.
type windowLine struct {
	complete bool
	summary  any
	ru       ui.RUReport
}

func (l windowLine) MarshalJSON() ([]byte, error) {
	summary, err := encodeJSON(l.summary)
	if err != nil {
		return nil, err
	}
	ru, err := encodeJSON(l.ru)
	if err != nil {
		return nil, err
	}
	if len(summary) < 2 || summary[0] != '{' {
		return nil, fmt.Errorf("a summary must be a JSON object, not %.40s", summary)
	}
	out := fmt.Appendf(nil, `{"complete":%t`, l.complete)
	if len(summary) > 2 {
		out = append(append(out, ','), summary[1:len(summary)-1]...)
	}
	out = append(append(out, `,"ru":`...), ru...)
	return append(out, '}'), nil
}

// encodeJSON is json.Marshal without escaping HTML characters, as
// --output json writes its lines.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// writeWindowEnd prints the last line of the summary of a replay or
// reverse: how it ended (end) and, when it finished, what t it left (in a
// dry run: would leave).
func writeWindowEnd(w io.Writer, words wayWords, end ending, t tally, dryRun bool) error {
	name := words.name
	var err error
	switch {
	case end == endedInterrupted || end == endedTransient:
		_, err = fmt.Fprintf(w, "%s: not complete: run it again with the same --since to finish\n", name)
	case end == endedFailed:
		_, err = fmt.Fprintf(w, "%s: not complete: stopped by the error reported on stderr\n", name)
	case t.conflicts > 0:
		_, err = fmt.Fprintf(w, "%s: %d conflict(s) %s\n", name, t.conflicts, would(dryRun, "left unresolved"))
	case t.deadLetters > 0 && dryRun:
		_, err = fmt.Fprintf(w, "%s: %d %s would be dead-lettered\n", name, t.deadLetters, words.deadLettered)
	case t.deadLetters > 0:
		_, err = fmt.Fprintf(w, "%s: %d dead letter(s)\n", name, t.deadLetters)
	default:
		_, err = fmt.Fprintf(w, "%s: OK\n", name)
	}
	return err
}

// would is done ("written") as a dry run says it: "would be written".
func would(dryRun bool, done string) string {
	if dryRun {
		return "would be " + done
	}
	return done
}

// whatIsDone says what was done ("docs written") as a dry run says it:
// "docs that would be written".
func whatIsDone(dryRun bool, what, done string) string {
	if dryRun {
		return what + " that would be " + done
	}
	return what + " " + done
}

// writeConflicts prints the first maxConflictsShown of conflicts.
func writeConflicts(w io.Writer, conflicts []listedConflict) {
	for i, c := range conflicts {
		if i == maxConflictsShown {
			fmt.Fprintf(w, "  … and %d more (--output json lists up to 1000)\n", len(conflicts)-maxConflictsShown)
			break
		}
		io.WriteString(w, c.text)
	}
}

// What sets replay and reverse apart, side by side: the help of their
// flags, their words, and how they show their conflicts.

// replayHelp is what the help of replay's flags says.
var replayHelp = windowHelp{
	engineHelp: engineHelp{concurrency: "docs replayed at once", stateDir: "replay-dead-letter.jsonl, locked while replay runs"},
	since:      "replay rows whose Timestamp is",
	follow:     "keep replaying",
	prune:      "also delete unchanged migrated docs whose source row no longer exists",
	force:      "overwrite (and with --prune delete) docs the application changed, still with If-Match",
}

// reverseHelp is what the help of reverse's flags says.
var reverseHelp = windowHelp{
	engineHelp: engineHelp{concurrency: "docs written back at once", stateDir: "reverse-dead-letter.jsonl"},
	since:      "write back docs changed",
	follow:     "keep writing back",
	prune:      "also delete the rows whose migrated doc is gone (unless it expired)",
	force:      "write rows that changed in the tables too, still with If-Match",
}

// replayWords are the words of replay.
var replayWords = wayWords{
	name: "replay", reads: "rows",
	rerun:          "replay interrupted; it keeps no checkpoint: run it again with the same --since to finish",
	conflictsLeft:  "docs the application changed were not written; see the list, then rerun with --force to overwrite them with the tables' version",
	deadLettered:   "row(s)",
	followed:       "%d row(s) read, %d written",
	deadLetterFile: migrate.ReplayDeadLetterFile,
	observed:       ui.RowsToDocs,
}

// reverseWords are the words of reverse.
var reverseWords = wayWords{
	name: "reverse", reads: "docs",
	rerun:          "reverse interrupted: run it again with the same --since to finish; docs already written back are skipped",
	conflictsLeft:  "rows that changed in the tables too were not written; see the list, then rerun with --force to write the Cosmos DB version",
	deadLettered:   "doc(s)",
	followed:       "%d doc(s) read, %d row(s) written",
	deadLetterFile: migrate.ReverseDeadLetterFile,
	observed:       ui.DocsToRows,
}
