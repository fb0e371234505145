package migrate

import (
	"context"
	"fmt"
)

// newWindowEngine is newEngine for the engines of a window (replay,
// reverse): it checks w and the services first (what names the options
// type in errors; services says whether the required services, named by
// required, are there; query whether Query is), and fills w's defaults.
func newWindowEngine(c *Common, w *WindowOptions, env Env, what string, services bool, required string, query bool) (engine, error) {
	switch {
	case w.Since.IsZero():
		return engine{}, fmt.Errorf("migrate: %s.Since is required", what)
	case !services:
		return engine{}, fmt.Errorf("migrate: %s are required", required)
	case w.Prune && !query:
		return engine{}, fmt.Errorf("migrate: Query is required with Prune")
	}
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = DefaultReplayAttempts
	}
	return newEngine(c, env)
}

// windowCore is what replay and reverse keep alike: the engine, the
// services of the Cosmos DB side (behind the dry run's decorators in a dry
// run) and the recorder, which windowRun opens.
type windowCore[C, X any] struct {
	engine
	docs  DocStore
	blobs BlobStore
	query DocQuerier
	rec   *recorder[C, X]
}

func newWindowCore[C, X any](e engine, dryRun bool, docs DocStore, blobs BlobStore, query DocQuerier) windowCore[C, X] {
	if dryRun {
		docs, blobs = dryRunStore{inner: docs}, newDryRunBlobs(blobs)
	}
	return windowCore[C, X]{engine: e, docs: docs, blobs: blobs, query: query}
}

// windowed is an engine of a window (a *replayer or a *reverser): its
// frame (the engine, its options, where its recorder goes); prepare, run
// before the passes (stop ends what it started); the groups it reads (the
// tables or containers), one pass each, in order; its prune; and its
// summary S.
type windowed[S, C, X any] interface {
	frame() (engine, Common, WindowOptions, **recorder[C, X])
	prepare(ctx context.Context) (stop func(), err error)
	groups() []string
	pass(ctx context.Context, group string) error
	prune(ctx context.Context) error
	summary() S
}

// windowRun runs r, made with the error err (when not nil, windowRun
// returns it at once): it holds the lock of the state directory
// (command), opens the dead-letter file and r's recorder, does r's work
// (windowWork), and returns r's summary with the work's error. A dry run takes no lock and
// keeps its dead letters in memory.
func windowRun[S, C, X any, W windowed[S, C, X]](ctx context.Context, command, file string, r W, err error) (S, error) {
	var zero S
	if err != nil {
		return zero, err
	}
	e, c, w, rec := r.frame()
	return locked(c.StateDir, command, c.DryRun, e.now, func() (S, error) {
		sink, err := deadLetters(c.StateDir, file, c.DryRun, w.KeepDeadLetters)
		if err != nil {
			return zero, err
		}
		defer sink.Close()
		*rec = newRecorder[C, X](sink, c.DryRun, e.log)
		err = windowWork(ctx, r, e.progress, e.log, w.Prune)
		return r.summary(), err
	})
}

// windowWork is the work of r: prepare, a pass per group, then the prune.
// Each group's start and end go to log.
func windowWork[S, C, X any, W windowed[S, C, X]](ctx context.Context, r W, progress Progress, log func(string, ...any), prune bool) error {
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
