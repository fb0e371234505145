package cmd

import (
	"context"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// engineOptions are what run, replay and reverse share: the I/O, the
// database, the flags of the engine (engineFlags) and the pacer that
// start makes from --max-ru.
type engineOptions struct {
	IO
	Database string
	engineFlags
	pacer *azure.Pacer
	// migration are the options the command works with (its transform
	// options and table prefix), once start computed them from the flags
	// (and the migration's state): it says where they came from once the
	// command is at work.
	migration migrationOptions
	// out is the command's output, once start made it: the start-up
	// checks say there what they wait for.
	out *ui.Output
}

// from takes the I/O, the database and the target from f, once the flags
// are parsed, and makes the metrics of the command name when they are
// asked for.
func (e *engineOptions) from(f *Factory, name string) {
	e.IO, e.Database = f.IO(), f.Global.Database
	e.TransformFlags.target = f.targetFingerprint(e.Database, e.BlobContainer)
	e.Observe.attach(f, name)
}

// start is what the engine's commands do first, once the flags are
// valid: it computes the options the command works with once (migration:
// the flags', and for replay and reverse the migration's for those not
// given) and puts them in c, the engine's own options (the transform
// options' Now is the command's clock now); then it makes the pacer of
// every Cosmos DB request, and the output of the command name.
func (e *engineOptions) start(name string, c *migrate.Common) (*ui.Output, error) {
	o := e.output(name)
	e.out = o
	if !c.DryRun {
		// It will hold the lock, the state and the dead letters: a folder
		// that cannot be written is said before any request.
		if err := checkStateDir(c.StateDir); err != nil {
			return nil, err
		}
	}
	m, err := e.TransformFlags.migration(name, c.StateDir, c.TablePrefix, true)
	if err != nil {
		return nil, err
	}
	e.migration = m
	c.Transform, c.TablePrefix = m.Transform, m.TablePrefix
	c.Transform.Now = e.Now().UTC()
	e.pacer = e.RU.pacer()
	return o, nil
}

// connect connects to the accounts of f for an engine that uses uses,
// the start-up check of the tables reading table (unprefixed).
func (e *engineOptions) connect(ctx context.Context, f *Factory, uses need, table string) (conn, error) {
	return connect(ctx, f, needs{uses: uses, database: e.Database, blobContainer: e.BlobContainer,
		probeTable: e.migration.TablePrefix + table, pacer: e.pacer, out: e.out})
}

// env is the engine's clock, its log (--log-file) and its flow: the
// requests in flight sized by the pacer's rate × the latency measured
// (SPEC §14, Latency).
func (e *engineOptions) env(f *Factory) migrate.Env {
	return migrate.Env{Now: e.Now, Log: f.log.Logf(), Flow: e.RU.flow()}
}

// services are what the Connect of an engine's command returns: the
// engine's services D and the connection they come from (where it
// works, what is missing).
type services[D any] struct {
	deps D
	conn
}
