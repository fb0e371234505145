package cmd

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/verify"
)

// statusReport is what status says, decided from the state directory's
// files alone (newStatusReport): the --output json object, and what the
// text shows.
type statusReport struct {
	StateDir string    `json:"stateDir"`
	Run      runStatus `json:"run"`
	// Verify, Replay and Reverse are nil when none is recorded.
	Verify  *verify.Record `json:"verify"`
	Replay  *windowStatus  `json:"replay"`
	Reverse *windowStatus  `json:"reverse"`
	Lock    lockStatus     `json:"lock"`
	// Next is the next step, a sentence that names the command.
	Next string `json:"next"`
	// Check is what --check found (nil without it).
	Check *statusCheck `json:"check,omitempty"`
	// Unreadable are the files of the state directory that could not be
	// read (the error names each, and why).
	Unreadable []string `json:"unreadable,omitempty"`
}

// unreadable reports whether r could not read its file name.
func (r statusReport) unreadable(name string) bool { return slices.Contains(r.Unreadable, name) }

// What a run, a replay or a reverse is doing, as status reads it.
const (
	phaseNone        = "none"
	phaseUnreadable  = "unreadable"
	phaseComplete    = "complete"
	phaseInProgress  = "in progress"
	phaseInterrupted = "interrupted"
	phaseEnded       = "ended"
)

// runStatus is the run of the state directory.
type runStatus struct {
	// State is none, unreadable, complete, in progress (a process holds
	// the lock) or interrupted (not complete and no process holds the
	// lock: killed, stopped, or ended by an error).
	State       string     `json:"state"`
	RunID       string     `json:"runId,omitempty"`
	Started     *time.Time `json:"started,omitempty"`
	Updated     *time.Time `json:"updated,omitempty"`
	Ended       *time.Time `json:"ended,omitempty"`
	ToolVersion string     `json:"toolVersion,omitempty"`
	// Options are the run's options as flags and accounts name them.
	Options        []string      `json:"options,omitempty"`
	Tables         []tableStatus `json:"tables,omitempty"`
	DeadLetters    int64         `json:"deadLetters"`
	DeadLetterFile string        `json:"deadLetterFile,omitempty"`
	// resume are the flags a resumed run must repeat.
	resume []string
}

// tableStatus is one table of the run at its last checkpoint.
type tableStatus struct {
	Table        string           `json:"table"`
	Done         bool             `json:"done"`
	Rows         int64            `json:"rows"`
	Dispositions map[string]int64 `json:"dispositions"`
}

// windowStatus is the last replay or reverse: its record and what it is
// doing (ended, in progress: a --follow between passes, or interrupted:
// killed before it ended).
type windowStatus struct {
	State string `json:"state"`
	migrate.PassRecord
}

// lockStatus is the lock of the state directory.
type lockStatus struct {
	Held    bool       `json:"held"`
	PID     int        `json:"pid,omitempty"`
	Command string     `json:"command,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
}

// statusCheck is what --check found.
type statusCheck struct {
	OK      bool     `json:"ok"`
	Where   string   `json:"where,omitempty"`
	Missing []string `json:"missing,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// newStatusReport decides what status says from f; runDefaults are the
// defaults of run's flags (StatusOptions.RunDefaults).
func newStatusReport(f statusFacts, runDefaults map[string]string) statusReport {
	r := statusReport{StateDir: f.dir, Verify: f.verify, Lock: lockStatus{Held: f.lock.Held, PID: f.lock.PID, Command: f.lock.Command, Since: timePtr(f.lock.Since)}}
	for _, u := range f.unreadable {
		r.Unreadable = append(r.Unreadable, u.name)
	}
	r.Run = newRunStatus(f, runDefaults)
	r.Replay = newWindowStatus(f.replay, f.lock)
	r.Reverse = newWindowStatus(f.reverse, f.lock)
	r.Next = nextStep(r)
	return r
}

// newRunStatus is the run of f.
func newRunStatus(f statusFacts, defaults map[string]string) runStatus {
	st := f.run
	switch {
	case f.cannotRead(migrate.StateFile):
		return runStatus{State: phaseUnreadable}
	case st == nil:
		return runStatus{State: phaseNone}
	}
	r := runStatus{RunID: st.RunID, Started: timePtr(st.Started), Updated: timePtr(st.Updated), ToolVersion: st.ToolVersion,
		DeadLetterFile: filepath.Join(f.dir, migrate.DeadLetterFile)}
	switch {
	case st.Done:
		r.State, r.Ended = phaseComplete, timePtr(st.Updated)
	case f.lock.Held && f.lock.Command == "run":
		r.State = phaseInProgress
	default:
		r.State = phaseInterrupted
	}
	for _, s := range migrate.ParseFingerprint(st.Fingerprint) {
		if s.Key == "table-prefix" && s.Value == "" {
			continue
		}
		r.Options = append(r.Options, optionPhrase(s.Key, s.Value))
		if d, ok := defaults[resumeFlag(s.Key)]; ok && d != s.Value {
			r.resume = append(r.resume, optionPhrase(s.Key, s.Value))
		}
	}
	for _, ts := range st.Tables {
		t := tableStatus{Table: ts.Table, Done: ts.Done, Rows: ts.Rows, Dispositions: map[string]int64{}}
		for _, d := range dispositionColumns {
			t.Dispositions[string(d)] = sumDisposition(ts.Kinds, string(d))
		}
		r.DeadLetters += t.Dispositions["dead-letter"]
		r.Tables = append(r.Tables, t)
	}
	return r
}

// resumeFlag is the flag of run that sets the fingerprint's setting key
// ("" for the accounts, which the settings give, not a flag of run).
func resumeFlag(key string) string {
	switch {
	case key == "target.database":
		return "database"
	case strings.HasPrefix(key, "target."):
		return ""
	}
	return key
}

// newWindowStatus is the replay or reverse of w (nil: none recorded):
// ended once it recorded its exit status; else in progress while its
// process holds the lock or lives (a --follow between passes), else
// interrupted.
func newWindowStatus(w *windowFacts, lock migrate.LockStatus) *windowStatus {
	switch {
	case w == nil:
		return nil
	case w.rec.ExitCode != nil:
		return &windowStatus{phaseEnded, w.rec}
	case w.alive || lock.Held && lock.PID == w.rec.PID:
		return &windowStatus{phaseInProgress, w.rec}
	}
	return &windowStatus{phaseInterrupted, w.rec}
}

// nextStep is the next thing to do, from r (the first rule that holds):
// wait for the lock's holder; start a migration; resume the run; wait
// for a replay or reverse at work, or run it again if it stopped before
// its end; resolve its conflicts; verify what was written since the last
// verify, or verify in full; read verify's findings; replay after a
// rollback; else cut over.
func nextStep(r statusReport) string {
	dir := ""
	if r.StateDir != migrate.DefaultStateDir {
		dir = " --state-dir " + shellQuote(r.StateDir)
	}
	w, wname := latestWindow(r)
	v := r.Verify
	switch {
	case r.Lock.Held && r.Lock.PID == 0:
		return "wait: another process holds the state directory; status again shows how far it got"
	case r.Lock.Held:
		return fmt.Sprintf("wait: bifrost-migrate %s (PID %d) holds the state directory; status again shows how far it got", r.Lock.Command, r.Lock.PID)
	case r.Run.State == phaseUnreadable:
		return "none until " + filepath.Join(r.StateDir, migrate.StateFile) + " can be read (see the error)"
	case r.Run.State == phaseNone:
		return "bifrost-migrate run --dry-run" + dir + ", then run (no migration here yet; or give the --state-dir of the one you mean)"
	case r.Run.State == phaseInterrupted:
		return "bifrost-migrate run" + dir + strings.TrimRight(" "+strings.Join(r.Run.resume, " "), " ") + ": run again to resume"
	case w != nil && w.State == phaseInProgress:
		return fmt.Sprintf("wait: bifrost-migrate %s --follow (PID %d) is at work; SIGINT ends it after the pass in progress", wname, w.PID)
	case w != nil && (w.State == phaseInterrupted || *w.ExitCode != ExitOK && *w.ExitCode != ExitPartial && *w.ExitCode != ExitConflicts):
		return fmt.Sprintf("bifrost-migrate %s --since %s%s: run it again to finish (it stopped before its end)", wname, w.Since.UTC().Format(time.RFC3339Nano), dir)
	case w != nil && w.ConflictsLeft > 0:
		return fmt.Sprintf("resolve the %d conflict(s) %s left: see docs/rollback.md (4. Reading a conflict)", w.ConflictsLeft, wname)
	case v == nil || v.Last.EndedAt().Before(lastWrite(r)):
		return "bifrost-migrate verify" + dir
	case v.Last.Partial && (v.LastFull == nil || v.LastFull.EndedAt().Before(lastWrite(r))):
		return "bifrost-migrate verify" + dir + ": a full check (the last one was partial)"
	case !v.Last.OK || v.Last.Partial && !v.LastFull.OK:
		return "read what verify found (its --report, docs/operations.md, 5. Verify) before cutting over"
	case wname == "reverse":
		return "bifrost-migrate replay --since <the time the application went back to the tables>" + dir + " before cutting over again: see docs/rollback.md (3. Replay)"
	}
	return fmt.Sprintf("cut over: bifrost-migrate replay --since %s --follow%s (docs/operations.md, 6. Cut over)", r.Run.Started.UTC().Truncate(time.Second).Format(time.RFC3339), dir)
}

// latestWindow is the later of r's replay and reverse (by start), and
// its name; nil when neither is recorded.
func latestWindow(r statusReport) (*windowStatus, string) {
	switch {
	case r.Replay == nil && r.Reverse == nil:
		return nil, ""
	case r.Reverse == nil || r.Replay != nil && r.Replay.Started.After(r.Reverse.Started):
		return r.Replay, "replay"
	}
	return r.Reverse, "reverse"
}

// lastWrite is when the last command that wrote ended: the run, or a
// replay or reverse.
func lastWrite(r statusReport) time.Time {
	var t time.Time
	if r.Run.Updated != nil {
		t = *r.Run.Updated
	}
	for _, w := range []*windowStatus{r.Replay, r.Reverse} {
		if w != nil && w.Last.Ended.After(t) {
			t = w.Last.Ended
		}
	}
	return t
}

// shellQuote quotes s for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"$`\\*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// timePtr is &t, or nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// stamp is t in UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stampOf is stamp(*t), or "an unknown time" for nil.
func stampOf(t *time.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return stamp(*t)
}

// writeStatusText prints r as text.
func writeStatusText(w io.Writer, r statusReport) error {
	fmt.Fprintf(w, "state directory: %s\n", r.StateDir)
	if err := writeRunStatus(w, r.Run, r.Lock); err != nil {
		return err
	}
	writeVerifyStatus(w, r.Verify, r.unreadable(verify.RecordFile))
	writeWindowStatus(w, "replay", r.Replay, r.unreadable(migrate.ReplayRecordFile))
	writeWindowStatus(w, "reverse", r.Reverse, r.unreadable(migrate.ReverseRecordFile))
	switch l := r.Lock; {
	case r.unreadable(migrate.LockFile):
		fmt.Fprintln(w, "lock: cannot tell (see the error)")
	case l.Held && l.PID == 0:
		fmt.Fprintln(w, "lock: held by a process that has not recorded itself")
	case l.Held:
		fmt.Fprintf(w, "lock: held by bifrost-migrate %s (PID %d, since %s)\n", l.Command, l.PID, stampOf(l.Since))
	case l.PID > 0:
		fmt.Fprintf(w, "lock: not held (last held by bifrost-migrate %s, PID %d, since %s)\n", l.Command, l.PID, stampOf(l.Since))
	default:
		fmt.Fprintln(w, "lock: not held")
	}
	if c := r.Check; c != nil {
		switch {
		case !c.OK:
			fmt.Fprintln(w, "check: failed (see the error)")
		case len(c.Missing) > 0:
			fmt.Fprintf(w, "check: every endpoint answered: %s\ncheck: missing: %s: run bifrost-migrate init\n", c.Where, strings.Join(c.Missing, ", "))
		default:
			fmt.Fprintf(w, "check: every endpoint answered: %s\n", c.Where)
		}
	}
	_, err := fmt.Fprintf(w, "next: %s\n", r.Next)
	return err
}

// writeRunStatus prints the run: its state, times and options, its
// tables by disposition and its dead letters.
func writeRunStatus(w io.Writer, r runStatus, lock lockStatus) error {
	switch r.State {
	case phaseNone:
		fmt.Fprintln(w, "run: none recorded (no "+migrate.StateFile+")")
		return nil
	case phaseUnreadable:
		fmt.Fprintln(w, "run: "+migrate.StateFile+" cannot be read (see the error)")
		return nil
	case phaseInProgress:
		fmt.Fprintf(w, "run %s: in progress (PID %d holds the lock)\n", r.RunID, lock.PID)
	case phaseInterrupted:
		fmt.Fprintf(w, "run %s: interrupted: not complete, and no process holds the lock\n", r.RunID)
	default:
		fmt.Fprintf(w, "run %s: complete\n", r.RunID)
	}
	end := "last checkpoint " + stamp(*r.Updated)
	if r.Ended != nil {
		end = "ended " + stamp(*r.Ended)
	}
	fmt.Fprintf(w, "  started %s, %s, by bifrost-migrate %s\n", stamp(*r.Started), end, firstNonEmpty(r.ToolVersion, "(unknown version)"))
	fmt.Fprintf(w, "  options: %s\n", strings.Join(r.Options, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"  TABLE", "STATE", "ROWS"}
	for _, d := range dispositionColumns {
		head = append(head, strings.ToUpper(string(d)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	row := func(t tableStatus, state string) {
		cells := []string{"  " + t.Table, state, fmt.Sprint(t.Rows)}
		for _, d := range dispositionColumns {
			cells = append(cells, fmt.Sprint(t.Dispositions[string(d)]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	total := tableStatus{Table: "TOTAL", Dispositions: map[string]int64{}}
	for _, t := range r.Tables {
		state := "done"
		if !t.Done {
			state = "not done"
		}
		row(t, state)
		total.Rows += t.Rows
		for d, n := range t.Dispositions {
			total.Dispositions[d] += n
		}
	}
	row(total, "")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  dead letters: %d in %s\n", r.DeadLetters, r.DeadLetterFile)
	return nil
}

// writeVerifyStatus prints the last verify and, when it was partial, the
// last full one.
func writeVerifyStatus(w io.Writer, v *verify.Record, unreadable bool) {
	switch {
	case unreadable:
		fmt.Fprintf(w, "verify: %s cannot be read (see the error)\n", verify.RecordFile)
		return
	case v == nil:
		fmt.Fprintf(w, "verify: none recorded (no %s)\n", verify.RecordFile)
		return
	}
	check := func(r *verify.RecordEntry) string {
		switch {
		case r.Partial:
			return "a partial check"
		case !r.Scope.Base.IsZero():
			return "every change since a full check"
		}
		return "a full check"
	}
	fmt.Fprintf(w, "verify: last ended %s, %s, by bifrost-migrate %s\n  %s\n", stamp(v.Last.EndedAt()), check(v.Last), v.Last.ToolVersion, v.Last.Verdict)
	switch {
	case !v.Last.Partial:
	case v.LastFull == nil:
		fmt.Fprintln(w, "  no full check recorded")
	default:
		fmt.Fprintf(w, "  the last full check ended %s: %s\n", stamp(v.LastFull.EndedAt()), v.LastFull.Verdict)
	}
}

// writeWindowStatus prints the last replay or reverse (name).
func writeWindowStatus(w io.Writer, name string, s *windowStatus, unreadable bool) {
	switch {
	case unreadable:
		fmt.Fprintf(w, "%s: %s.json cannot be read (see the error)\n", name, name)
		return
	case s == nil:
		fmt.Fprintf(w, "%s: none recorded\n", name)
		return
	}
	if s.Follow {
		name += " --follow"
	}
	var how string
	switch s.State {
	case phaseEnded:
		how = fmt.Sprintf("ended %s, exit %d", stamp(*s.Ended), *s.ExitCode)
	case phaseInProgress:
		how = fmt.Sprintf("in progress (PID %d)", s.PID)
	default:
		how = fmt.Sprintf("interrupted: PID %d ended before the command did", s.PID)
	}
	fmt.Fprintf(w, "%s: %s; --since %s, %d pass(es), %d conflict(s) left\n", name, how, s.Since.UTC().Format(time.RFC3339Nano), s.Passes, s.ConflictsLeft)
	p := s.Last
	lag := "no change read"
	if p.LagSeconds != nil {
		lag = fmt.Sprintf("lag %.1fs", *p.LagSeconds)
	}
	fmt.Fprintf(w, "  last pass from %s, ended %s: %d written, %d unchanged, %d conflict(s), %d dead letter(s), %s\n",
		p.From.UTC().Format(time.RFC3339Nano), stamp(p.Ended), p.Applied, p.Unchanged, p.Conflicts, p.DeadLetters, lag)
}
