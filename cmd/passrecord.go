package cmd

import (
	"context"
	"os"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// passRecorder keeps the record of a replay or reverse in its state
// directory (migrate.PassRecord: replay.json, reverse.json), which
// `bifrost-migrate status` reads: rewritten when each pass ends and when
// the command ends. A dry run records nothing, and neither does a
// command that never got to a pass (refused at its start: the state
// directory in use, a service that cannot be reached). A record that
// cannot be written is a warning: the command's own work is done.
type passRecorder struct {
	o *ui.Output
	// name is the command; dir/file its record.
	name, dir, file string
	now             func() time.Time
	// off: a dry run.
	off bool
	rec migrate.PassRecord
	// conflicts are the docs or rows in conflict over every pass.
	conflicts map[string]bool
}

// newPassRecorder returns the recorder of the replay or reverse of words
// whose options are c and flags, warning on o.
func newPassRecorder(o *ui.Output, words wayWords, c *migrate.Common, flags windowFlags) *passRecorder {
	file := migrate.ReplayRecordFile
	if words.name == reverseWords.name {
		file = migrate.ReverseRecordFile
	}
	return &passRecorder{
		o: o, name: words.name, dir: c.StateDir, file: file, now: time.Now, off: c.DryRun,
		rec:       migrate.PassRecord{PID: os.Getpid(), Since: flags.w.Since, Follow: flags.Follow},
		conflicts: map[string]bool{},
	}
}

// passEnded records the pass whose summary is s, which started at
// started and read from since; a pass that never got to work (refused
// at its start) is not recorded.
func (r *passRecorder) passEnded(started, since time.Time, s windowReport) {
	t := s.tally
	if r.off || !t.ran {
		return
	}
	ended := r.now()
	if r.rec.Passes == 0 {
		r.rec.Started = started
	}
	r.rec.Passes++
	r.rec.Last = migrate.PassFigure{Started: started, Ended: ended, From: since,
		Applied: t.written, Unchanged: t.unchanged, Conflicts: t.conflicts, DeadLetters: t.deadLetters}
	if t.newest != nil {
		lag := ended.Sub(*t.newest).Seconds()
		r.rec.Last.LagSeconds = &lag
	}
	for _, c := range s.conflicts {
		r.conflicts[c.doc] = true
	}
	r.rec.ConflictsLeft = max(int64(len(r.conflicts)), t.conflicts)
	r.write()
}

// end records how the command ended, err being what it returns (ctx
// cancelled: interrupted), and returns err.
func (r *passRecorder) end(ctx context.Context, err error) error {
	if r.off || r.rec.Passes == 0 {
		return err
	}
	ended, code := r.now(), exitCode(err, ctx.Err() != nil)
	r.rec.Ended, r.rec.ExitCode = &ended, &code
	r.write()
	return err
}

// write replaces the record, warning when it cannot.
func (r *passRecorder) write() {
	if err := migrate.WritePassRecord(r.dir, r.file, r.rec); err != nil {
		r.o.Warning("%v: bifrost-migrate status will not show this %s", err, r.name)
	}
}
