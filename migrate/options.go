package migrate

import (
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// Defaults of the options.
const (
	// DefaultConcurrency is the default of Common.Concurrency.
	DefaultConcurrency = 1024
	// DefaultStateDir is the default of Common.StateDir.
	DefaultStateDir = ".bifrost-migrate"
	// DefaultReplayAttempts is the default of WindowOptions.MaxAttempts.
	DefaultReplayAttempts = 5
)

// Common are the options of every engine: Run, Replay and Reverse.
type Common struct {
	// TablePrefix is put before each table name when reading or writing
	// (tests load fixtures into tables of their own).
	TablePrefix string
	// Transform are the options that change the docs; replay and reverse
	// must be given those of the run that migrated the data.
	// Transform.Now zero means Env.Now() at the start.
	Transform transform.Options
	// Concurrency bounds the items being written at once (--concurrency);
	// 0 means DefaultConcurrency. Env.Flow, if any, sizes the window
	// below it.
	Concurrency int
	// StateDir holds the state, the dead letters and the lock (LockFile)
	// of the command; "" means DefaultStateDir.
	StateDir string
	// DryRun reads everything and writes nothing anywhere, the state
	// directory included: it does not create it, read it or take its
	// lock, so it may run beside a command that holds it. The summary
	// says what would have been written.
	DryRun bool
}

// WindowOptions are the options of the commands that apply the changes of
// a window of time, one direction each (Replay: tables → Cosmos DB;
// Reverse: Cosmos DB → tables).
type WindowOptions struct {
	// Since selects the changes at or after it. Required.
	Since time.Time
	// Force writes over conflicts — items the other side changed too —
	// still with If-Match on what was read.
	Force bool
	// Prune deletes, on the written side, what the tool migrated and the
	// read side no longer has.
	Prune bool
	// MaxAttempts bounds the read-decide-write attempts per item when
	// concurrent writers keep changing it (409, 412, 404 start over); 0
	// means DefaultReplayAttempts. An item that runs out is dead-lettered.
	MaxAttempts int
	// KeepDeadLetters appends to the command's dead-letter file instead
	// of replacing it (the later passes of --follow).
	KeepDeadLetters bool
}

// Env is what an engine reports through, and its clock.
type Env struct {
	// Progress may be nil.
	Progress Progress
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log, when not nil, hears one line per page read, checkpoint,
	// conflict and dead letter (--log-file). The lines carry keys and
	// reasons, never a property's value. It is called from several
	// goroutines.
	Log func(format string, args ...any)
	// Flow, when not nil, sizes the writes in flight from the budget and
	// the latency it observes (SPEC §14, Latency), bounded by
	// Common.Concurrency, and tells the command what it measured; nil
	// keeps Common.Concurrency writes in flight.
	Flow *Flow
}
