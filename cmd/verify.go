package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/verify"
)

// VerifyOptions are the flags and dependencies of `bifrost-migrate verify`.
type VerifyOptions struct {
	IO
	Database string
	// Sample is the fraction of rows checked (0 < Sample ≤ 1).
	Sample float64
	// ReportFile, when not empty, receives the whole report as JSON.
	ReportFile string
	// The transform options run used.
	TransformFlags
	// Tables limits the tables checked; empty means all.
	Tables      []string
	TablePrefix string
	// testNames holds BlobContainer, the container of execution blobs.
	testNames
	// PageSize is the most docs per query page.
	PageSize int
	// StateDir is run's state directory, where verify looks for the
	// dead-letter file it names when rows are not migrated.
	StateDir string
	// RU is --max-ru; pacer, made from it, paces every Cosmos DB request.
	RU    ruFlags
	pacer *azure.Pacer

	// Connect connects to the accounts and returns the engine with its
	// sources, where they are and what of init's resources is missing.
	Connect func(ctx context.Context) (verifyServices, error)
}

// verifyServices is what VerifyOptions.Connect returns.
type verifyServices = services[*verify.Verifier]

// verifyFlags are the flags of verify alone: --sample, --report and the
// hidden --page-size.
type verifyFlags struct{ o *VerifyOptions }

func (v verifyFlags) bind(fl *pflag.FlagSet) {
	fl.Float64Var(&v.o.Sample, "sample", 1, "check only this `fraction` of the rows (0 < F <= 1), chosen by a hash of their keys")
	fl.StringVar(&v.o.ReportFile, "report", "", "write the whole report as JSON to `FILE`")
	fl.IntVar(&v.o.PageSize, "page-size", store.DefaultQueryPageSize, "docs per query page")
	_ = fl.MarkHidden("page-size")
}

func (v verifyFlags) validate() error {
	if !(v.o.Sample > 0 && v.o.Sample <= 1) {
		return UsageError(fmt.Errorf("--sample must be in (0, 1], got %g", v.o.Sample))
	}
	return nil
}

// NewCmdVerify builds `bifrost-migrate verify`. runF replaces the command's
// work in tests; nil means verifyRun.
func NewCmdVerify(f *Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{}
	opts.testNames.prefix = &opts.TablePrefix
	opts.Connect = func(ctx context.Context) (verifyServices, error) { return connectVerify(ctx, f, opts) }
	c := newCommand(verifyDoc, func(c *cobra.Command) error {
		opts.IO, opts.Database = f.IO(), f.Global.Database
		return runWith(c, opts, runF, verifyRun)
	})
	addFlags(c, verifyFlags{opts}, &tablesFlag{what: "check", tables: &opts.Tables}, &opts.TransformFlags, &opts.testNames,
		stateDirFlag{&opts.StateDir, "run's state, whose dead-letter.jsonl lists the rows not migrated"}, &opts.RU)
	return c
}

// connectVerify connects the engine to the accounts of f.
func connectVerify(ctx context.Context, f *Factory, opts *VerifyOptions) (verifyServices, error) {
	c, err := connect(ctx, f, needs{uses: tablesRead | blobsRead | cosmosRead, database: opts.Database, blobContainer: opts.BlobContainer,
		probeTable: opts.TablePrefix + firstTable(opts.Tables), pacer: opts.pacer})
	return verifyServices{conn: c, deps: &verify.Verifier{Rows: c.rowReader, Docs: c.docReader, Blobs: c.blobStore}}, err
}

// verifyProgress reports verify's phases to its output: "verify: step"
// status lines on stderr, or with --output json stepProgress lines, with
// the request units per second and the throttled share of the last
// seconds. It is safe for concurrent use.
type verifyProgress struct {
	o  *output
	ru ruRecent
}

func (p verifyProgress) Step(msg string) {
	if p.o.json() {
		// A write error is kept by lines and returned by the summary's emit.
		_ = p.o.lines.emit(lineProgress, stepProgress{Step: msg, ruNow: newRUNow(p.ru)})
		return
	}
	p.o.status("%s", msg)
}

// verifyRun runs the engine and prints the report; rows not migrated and
// mismatches return a PartialError (exit 3); a missing table, database or
// container is an error (exit 1) before anything is compared.
func verifyRun(ctx context.Context, opts *VerifyOptions) error {
	topts, err := opts.TransformFlags.options(opts.Now())
	if err != nil {
		return err
	}
	opts.pacer = opts.RU.pacer()
	if opts.RU.MaxRU > 0 {
		// A query page is charged as a whole: keep one page to a small
		// share of the budget, so that no 5-second window exceeds it.
		opts.PageSize = min(opts.PageSize, max(100, int(opts.RU.MaxRU/10)))
	}
	o := opts.output("verify")
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	v := svc.deps
	if !opts.Quiet {
		v.Progress = verifyProgress{o, opts.RU.recent()}
	}
	if err := ready(ctx, o, svc.conn, opts.TablePrefix, opts.Tables); err != nil {
		return err
	}
	r, err := v.Run(ctx, verify.Options{
		Transform:   topts,
		Tables:      opts.Tables,
		TablePrefix: opts.TablePrefix,
		Sample:      opts.Sample,
		PageSize:    opts.PageSize,
		Database:    opts.Database,
	})
	if err != nil {
		return err
	}
	ru := opts.RU.report(0)
	r.DeadLetterFile = filepath.Join(opts.StateDir, migrate.DeadLetterFile)
	if _, serr := os.Stat(r.DeadLetterFile); serr == nil {
		r.DeadLetterFileFound = true
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("--state-dir: %w", serr)
	}
	o.status("%d rows in %.1fs (%.0f rows/s)", r.Totals.Rows, r.ElapsedSeconds, float64(r.Totals.Rows)/max(r.ElapsedSeconds, 1e-9))
	if !opts.Quiet && !o.json() {
		// With --output json, the summary's "ru" says the same.
		ru.writeText(prefixed{opts.ErrOut, "verify: "})
	}
	if opts.ReportFile != "" {
		if err := writeReportFile(opts.ReportFile, r); err != nil {
			return err
		}
	}
	if o.json() {
		err = o.lines.emit(lineSummary, struct {
			*verify.Report
			RU ruReport `json:"ru"`
		}{r.Summary(), ru})
	} else {
		err = r.WriteText(opts.Out)
	}
	if err != nil {
		return err
	}
	switch {
	case r.OK:
		return nil
	case r.NotMigrated > 0:
		return PartialError(fmt.Errorf("verify found %d row(s) not migrated (dead letters, see %s), %d missing, %d different and %d orphan doc(s)",
			r.NotMigrated, r.DeadLetterFile, r.Totals.Missing, r.Totals.Different, r.Totals.Orphans))
	}
	return PartialError(fmt.Errorf("verify found %d missing, %d different and %d orphan doc(s)", r.Totals.Missing, r.Totals.Different, r.Totals.Orphans))
}

// writeReportFile writes the report as indented JSON, through a temporary
// file so that a half-written report never replaces a complete one.
func writeReportFile(name string, r *verify.Report) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	// The file is one document, not --output json lines; its "type" says
	// what it is.
	if err := enc.Encode(struct {
		Type        string `json:"type"`
		ToolVersion string `json:"toolVersion"`
		*verify.Report
	}{"verify", version.String(), r}); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--report: %w", err)
	}
	// fsync before the rename, so that after a crash the report is either
	// the old one or the complete new one, never an empty file.
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--report: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--report: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// verifyDoc is the help of `bifrost-migrate verify`.
var verifyDoc = cmdDoc{
	use:   "verify [--sample F] [--report FILE]",
	short: "Compare every source row with what landed in Cosmos DB and Blob Storage",
	long: `Compare every source row with what the migration left in Cosmos DB and Blob
Storage. For each row verify recomputes the disposition and the doc that
run writes (pass the same --execution-ttl, --blob-threshold,
--relationships and --strict as run), reads the docs of both containers in
bulk (a few large query pages, never one read per row), and compares them
field by field, ignoring the system properties. A doc's ttl only has to
be present under --execution-ttl remaining or full, with 0 < ttl <= 1209600;
executions that are expired now may be present or absent. Every blob path
a doc names must exist in execution-data.

It also finds orphans (docs carrying _migration whose row no longer
expects them) and counts docs without _migration (written by the
application; not judged).

Access patterns: the execution index rows of Relationships (userexec,
workflowexec, formexec, status) are not migrated, since Cosmos DB answers
their questions with queries on the execution docs. verify checks every
index row against its execution: dangling (no such execution), stale (its
user, workflow, partition, form or status differs from the execution's),
and every migrated execution without a userexec or workflowexec row
(unindexed). These are data-quality findings, not failures: the counts and
the first 20 of each are printed, and --report lists every dangling and
stale row (up to 1,000 of each) under "accessPatterns". The check needs
both Entities and Relationships in --tables; with --sample it judges the
sampled index rows and executions against every execution.

Every source row must be accounted for: a row that run dead-letters is
not in Cosmos DB, so it fails verify like a missing doc; verify counts
these rows and names run's dead-letter file (dead-letter.jsonl in
--state-dir, default .bifrost-migrate), which lists them with their
reasons. A selected table that does not exist is an error (exit 1), never
an empty table; so is a missing database or container (run
'bifrost-migrate init').

Output: a table per table and kind (rows, expected docs, matched,
missing, different, orphans, rows skipped by disposition), then the first
20 differences with their field paths and both values (secrets redacted).
--report FILE writes everything as JSON. --sample F checks a deterministic
fraction of the rows, chosen by a hash of their keys. With --output json,
stdout gets {"type":"progress"} lines (the phases) and "status" lines, then
one {"type":"summary"} object with the first 20 of each list (and a
{"type":"error"} line when verify fails).

Exit 0 ("verify: OK") only when no row is dead-lettered and no doc is
missing, different or orphaned; else 3.`,
}
