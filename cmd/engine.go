package cmd

import (
	"context"

	"github.com/bifrost/bifrost-migrate/azure"
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
}

// from takes the I/O and the database from f, once the flags are parsed.
func (e *engineOptions) from(f *Factory) {
	e.IO, e.Database = f.IO(), f.Global.Database
}

// start is what the engine's commands do first, once the flags are
// valid: the transform options at now into c, the pacer of every Cosmos
// DB request, and the output of the command name.
func (e *engineOptions) start(name string, c *migrate.Common) (*output, error) {
	var err error
	if c.Transform, err = e.TransformFlags.options(e.Now()); err != nil {
		return nil, err
	}
	e.pacer = e.RU.pacer()
	return e.output(name), nil
}

// connect connects to the accounts of f for an engine that uses uses,
// the start-up check of the tables reading table (unprefixed).
func (e *engineOptions) connect(ctx context.Context, f *Factory, uses need, table string) (conn, error) {
	return connect(ctx, f, needs{uses: uses, database: e.Database, blobContainer: e.BlobContainer,
		probeTable: e.common.TablePrefix + table, pacer: e.pacer})
}

// env is the engine's clock, its log (--log-file) and its flow: the
// requests in flight sized by the pacer's rate × the latency measured
// (SPEC §14, Latency).
func (e *engineOptions) env(f *Factory) migrate.Env {
	return migrate.Env{Now: e.Now, Log: f.log.logf(), Flow: e.RU.flow()}
}

// services are what the Connect of an engine's command returns: the
// engine's services D and the connection they come from (where it
// works, what is missing).
type services[D any] struct {
	deps D
	conn
}
