package migrate

import (
	"errors"
	"fmt"
	"time"
)

// What replay and reverse share beyond the pool (docs/engine.md): their
// options are checked before anything else (checkWindow, and each
// engine's deps), then they hold the state directory's lock and their
// dead-letter file while they work (holdWindow), record what they did in a
// ledger, and say it in a summary with a WindowSummary. Each reads top to
// bottom in its own file: Replay (replay.go), Reverse (reverse.go).

// checkWindow checks the window options of an engine (what names their
// type in errors; query says whether the engine has a DocQuerier) before
// any lock is taken or file opened, and fills their default.
func checkWindow(what string, w *WindowOptions, query bool) error {
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = DefaultReplayAttempts
	}
	switch {
	case w.Since.IsZero():
		return fmt.Errorf("migrate: %s.Since is required", what)
	case w.Prune && !query:
		return errors.New("migrate: Query is required with Prune")
	}
	return nil
}

// held is what replay and reverse hold while they work: the state
// directory's lock (none in a dry run) and their dead-letter file (a
// list in memory in a dry run).
type held struct {
	release func() error
	sink    deadLetterSink
}

// holdWindow takes the lock of c's state directory for command, stamped
// now (none in a dry run, which writes nothing there), and opens the
// dead-letter file there (replaced, or with keep added to).
func holdWindow(c Common, keep bool, now time.Time, command, file string) (held, error) {
	release, err := lockStateDir(c.StateDir, command, c.DryRun, now)
	if err != nil {
		return held{}, err
	}
	sink, err := deadLetters(c.StateDir, file, c.DryRun, keep)
	if err != nil {
		return held{}, errors.Join(err, release())
	}
	return held{release: release, sink: sink}, nil
}

// close closes the dead-letter file and releases the lock; it returns err
// with their errors joined to it.
func (h held) close(err error) error {
	return errors.Join(err, h.sink.Close(), h.release())
}

// lockStateDir takes the lock of the state directory dir for command
// (LockStateDir), stamped now; a dry run, which writes nothing there,
// takes none (its release does nothing).
func lockStateDir(dir, command string, dryRun bool, now time.Time) (release func() error, err error) {
	if dryRun {
		return func() error { return nil }, nil
	}
	return LockStateDir(dir, command, now)
}
