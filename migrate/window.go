package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The frame replay and reverse share (docs/engine.md): the options are
// checked before anything else (checkWindow, and each engine's deps),
// then inWindow holds the lock of the state directory and opens the
// dead-letter file, the engine is made with its recorder (newWindow), and
// windowWork does the work: prepare, a pass per group, the prune.

// checkWindow checks the options of a window's engine (what names their
// type in errors; query says whether the engine has a DocQuerier) before
// any lock is taken or file opened, and fills their defaults.
func checkWindow(what string, c *Common, w *WindowOptions, query bool) error {
	c.fillDefaults()
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = DefaultReplayAttempts
	}
	switch {
	case w.Since.IsZero():
		return fmt.Errorf("migrate: %s.Since is required", what)
	case w.Prune && !query:
		return errors.New("migrate: Query is required with Prune")
	}
	t := c.Transform
	if t.Now.IsZero() {
		t.Now = time.Now() // what the engine sets at its start (newEngine)
	}
	return t.Validate()
}

// window is what replay and reverse keep alike: the engine, the services
// of the Cosmos DB side (behind the dry run's decorators in a dry run)
// and the recorder of counts C and conflicts X.
type window[C, X any] struct {
	engine
	docs  DocStore
	blobs BlobStore
	query DocQuerier
	rec   *recorder[C, X]
}

// newWindow returns the window's engine with its recorder, which records
// dead letters in sink. It fails when the transform options are invalid.
func newWindow[C, X any](c *Common, env Env, sink deadLetterSink, docs DocStore, blobs BlobStore, query DocQuerier) (window[C, X], error) {
	e, err := newEngine(c, env)
	if err != nil {
		return window[C, X]{}, err
	}
	if c.DryRun {
		docs, blobs = dryRunStore{inner: docs}, newDryRunBlobs(blobs)
	}
	return window[C, X]{engine: e, docs: docs, blobs: blobs, query: query, rec: newRecorder[C, X](sink, c.DryRun, e.log)}, nil
}

// inWindow runs work holding the lock of the state directory (command;
// now stamps it, nil meaning time.Now) with the dead-letter file open in
// sink: the frame of replay and reverse. A dry run takes no lock and
// keeps its dead letters in memory.
func inWindow[S any](c Common, w WindowOptions, now func() time.Time, command, file string, work func(sink deadLetterSink) (S, error)) (S, error) {
	if now == nil {
		now = time.Now
	}
	return locked(c.StateDir, command, c.DryRun, now, func() (S, error) {
		sink, err := deadLetters(c.StateDir, file, c.DryRun, w.KeepDeadLetters)
		if err != nil {
			var zero S
			return zero, err
		}
		defer sink.Close()
		return work(sink)
	})
}

// windowed is the work of a window's engine (a *replayer or a
// *reverser): prepare, run before the passes (stop ends what it
// started); the groups it reads (the tables or containers), one pass
// each, in order; and its prune.
type windowed interface {
	prepare(ctx context.Context) (stop func(), err error)
	groups() []string
	pass(ctx context.Context, group string) error
	prune(ctx context.Context) error
}

// windowWork is the work of r: prepare, a pass per group, then the prune.
// Each group's start and end go to log.
func windowWork(ctx context.Context, r windowed, progress Progress, log func(string, ...any), prune bool) error {
	stop, err := r.prepare(ctx)
	defer stop()
	if err != nil {
		return err
	}
	for _, g := range r.groups() {
		log("reading %s: started", g)
		if err := r.pass(ctx, g); err != nil {
			return err
		}
		log("reading %s: finished", g)
		progress.TableDone(g)
	}
	if prune {
		log("prune: started")
		return r.prune(ctx)
	}
	return nil
}
