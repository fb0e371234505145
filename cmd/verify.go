package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/verify"
)

// VerifyOptions are the flags and dependencies of `bifrost-migrate verify`.
type VerifyOptions struct {
	Out    io.Writer // the report: a table, or one JSON object
	ErrOut io.Writer // status
	JSON   bool
	Quiet  bool
	Now    func() time.Time

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
	// BlobContainer is the container holding execution blobs.
	BlobContainer string
	// PageSize is the most docs per query page.
	PageSize int
	// RU is --max-ru; pacer, made from it, paces every Cosmos DB request.
	RU    ruFlags
	pacer *azure.Pacer

	// Verifier connects to the accounts and returns the engine with its
	// sources, and a description of the targets without secrets.
	Verifier func(ctx context.Context) (*verify.Verifier, string, error)
}

// NewCmdVerify builds `bifrost-migrate verify`. runF replaces the command's
// work in tests; nil means verifyRun.
func NewCmdVerify(f *Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{}
	var tables string
	c := &cobra.Command{
		Use:   "verify [--sample F] [--report FILE]",
		Short: "Compare every source row with what landed in Cosmos DB and Blob Storage",
		Long: `Compare every source row with what the migration left in Cosmos DB and Blob
Storage. For each row verify recomputes the disposition and the doc that
run writes (pass the same --execution-ttl, --blob-threshold,
--relationships and --strict as run), reads the docs of both containers in
bulk (a few large query pages, never one read per row), and compares them
field by field, ignoring the system properties. A doc's ttl only has to
be present under --execution-ttl remaining or full, with 0 < ttl <= 1209600;
executions that are expired now may be present or absent. Every blob path
a doc names must exist in execution-data.

It also finds orphans (docs carrying _migration whose row no longer
expects them), counts docs without _migration (written by the
application; not judged), and reports dangling execution indexes as
data-quality warnings.

Output: a table per table and kind (rows, expected docs, matched,
missing, different, orphans, rows skipped by disposition), then the first
20 differences with their field paths and both values (secrets redacted).
--report FILE writes everything as JSON. --sample F checks a deterministic
fraction of the rows, chosen by a hash of their keys.

Exit 0 only when no doc is missing, different or orphaned; else 3.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Out, opts.ErrOut = f.Out, f.ErrOut
			opts.JSON, opts.Quiet = f.Global.JSON(), f.Global.Quiet
			opts.Now = f.Now
			opts.Database = f.Global.Database
			if !(opts.Sample > 0 && opts.Sample <= 1) {
				return UsageError(fmt.Errorf("--sample must be in (0, 1], got %g", opts.Sample))
			}
			if tables != "" {
				var err error
				if opts.Tables, err = parseTables(tables); err != nil {
					return UsageError(err)
				}
			}
			opts.Verifier = func(ctx context.Context) (*verify.Verifier, string, error) { return newVerifier(ctx, f, opts) }
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return verifyRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.TransformFlags.bind(fl, false)
	fl.Float64Var(&opts.Sample, "sample", 1, "check only this `fraction` of the rows (0 < F <= 1), chosen by a hash of their keys")
	fl.StringVar(&opts.ReportFile, "report", "", "write the whole report as JSON to `FILE`")
	fl.StringVar(&tables, "tables", "", "comma-separated `list` of tables to check (default: Config,Entities,Relationships)")
	fl.StringVar(&opts.TablePrefix, "table-prefix", "", "put this before every table name (tests, benchmarks side by side)")
	fl.StringVar(&opts.BlobContainer, "blob-container", fixtures.BlobContainer, "the blob container of execution data (tests)")
	fl.IntVar(&opts.PageSize, "page-size", store.DefaultQueryPageSize, "docs per query page")
	opts.RU.bind(fl)
	for _, hidden := range []string{"table-prefix", "blob-container", "page-size"} {
		_ = fl.MarkHidden(hidden)
	}
	return c
}

// parseTables checks a --tables list and returns it in read order.
func parseTables(list string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(fixtures.Tables(), t) {
			return nil, fmt.Errorf("--tables: unknown table %q (want Config, Entities, Relationships)", t)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(fixtures.Tables(), a) - slices.Index(fixtures.Tables(), b) })
	return slices.Compact(out), nil
}

// newVerifier connects the engine to the accounts of f, once each
// endpoint answered its start-up check.
func newVerifier(ctx context.Context, f *Factory, opts *VerifyOptions) (*verify.Verifier, string, error) {
	t, err := connectTarget(f, opts.Database, opts.BlobContainer, opts.pacer)
	if err != nil {
		return nil, "", err
	}
	if err := checkEndpoints(ctx, t.probes(opts.TablePrefix+firstTable(opts.Tables))...); err != nil {
		return nil, "", err
	}
	docs, err := azure.NewDocReader(t.client, opts.Database)
	if err != nil {
		return nil, "", err
	}
	v := &verify.Verifier{
		Rows:  azure.NewTableReader(t.tables, f.azureOptions()),
		Docs:  docs,
		Blobs: azure.NewBlobStore(t.blobContainer),
	}
	return v, t.where(), nil
}

// stderrProgress prints verify's phases on stderr: text lines, or with
// --output json {"type":"progress","step":…} lines, with the request
// units per second and the throttled share of the last seconds.
type stderrProgress struct {
	w    io.Writer
	json bool
	ru   ruRecent
}

func (p stderrProgress) Step(msg string) {
	perSecond, share := p.ru()
	if p.json {
		_ = verify.WriteJSON(p.w, struct {
			Type           string  `json:"type"`
			Step           string  `json:"step"`
			RUPerSecond    float64 `json:"ruPerSecond"`
			ThrottledShare float64 `json:"throttledShare"`
		}{"progress", msg, perSecond, share})
		return
	}
	fmt.Fprintf(p.w, "verify: %s\n", msg)
}

// verifyRun runs the engine and prints the report; mismatches return a
// PartialError (exit 3).
func verifyRun(ctx context.Context, opts *VerifyOptions) error {
	if strings.TrimSpace(opts.Database) == "" {
		return UsageError(errors.New("--database must not be empty"))
	}
	topts, err := opts.TransformFlags.options(opts.Now())
	if err != nil {
		return err
	}
	if err := opts.RU.validate(); err != nil {
		return err
	}
	opts.pacer = opts.RU.pacer()
	if opts.RU.MaxRU > 0 {
		// A query page is charged as a whole: keep one page to a small
		// share of the budget, so that no 5-second window exceeds it.
		opts.PageSize = min(opts.PageSize, max(100, int(opts.RU.MaxRU/10)))
	}
	v, where, err := opts.Verifier(ctx)
	if err != nil {
		return err
	}
	if !opts.Quiet {
		v.Progress = stderrProgress{opts.ErrOut, opts.JSON, recentRU(opts.pacer)}
		v.Progress.Step(where)
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
	ru := newRUReport(opts.pacer, 0)
	if !opts.Quiet {
		v.Progress.Step(fmt.Sprintf("%d rows in %.1fs (%.0f rows/s)", r.Totals.Rows, r.ElapsedSeconds, float64(r.Totals.Rows)/max(r.ElapsedSeconds, 1e-9)))
		if !opts.JSON {
			ru.writeText(prefixed{opts.ErrOut, "verify: "})
		}
	}
	if opts.ReportFile != "" {
		if err := writeReportFile(opts.ReportFile, r); err != nil {
			return err
		}
	}
	if opts.JSON {
		err = verify.WriteJSON(opts.Out, struct {
			*verify.Report
			RU ruReport `json:"ru"`
		}{r.Summary(), ru})
	} else {
		err = r.WriteText(opts.Out)
	}
	if err != nil {
		return err
	}
	if !r.OK {
		return PartialError(fmt.Errorf("verify found %d missing, %d different and %d orphan doc(s)", r.Totals.Missing, r.Totals.Different, r.Totals.Orphans))
	}
	return nil
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
	if err := enc.Encode(r); err != nil {
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
