package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// VerifyOptions are the flags and dependencies of `bifrost-migrate verify`.
type VerifyOptions struct {
	IO
	Database string
	// Sample is the fraction of rows checked (0 < Sample ≤ 1).
	Sample float64
	// ReportFile, when not empty, receives the whole report, in the
	// format ReportFormat names, else the one its name says
	// (formatByName).
	ReportFile   string
	ReportFormat string
	// Formats are the formats --report offers (Factory.ReportFormats).
	Formats []verify.Format
	// commandLine is the command line, connection strings as "***", for
	// the report.
	commandLine string
	// The transform options run used (from --state-dir unless given).
	TransformFlags
	// Tables limits the tables checked; empty means all.
	Tables      []string
	TablePrefix string
	// testNames holds BlobContainer, the container of execution blobs.
	testNames
	// PageSize is the most docs per query page.
	PageSize int
	// Since is --since as given (RFC 3339); since, parsed, makes the
	// check judge what changed at or after it (verify.Options.Since).
	Since string
	since time.Time
	// StateDir is run's state directory, where verify looks for the
	// dead-letter file it names when rows are not migrated.
	StateDir string
	// RU is --max-ru; pacer, made from it, paces every Cosmos DB request.
	RU    ruFlags
	pacer *azure.Pacer
	// Observe are --progress-interval and --metrics-addr.
	Observe observeFlags

	// Connect connects to the accounts and returns the engine with its
	// sources, where they are and what of init's resources is missing.
	Connect func(ctx context.Context) (verifyServices, error)
	// out is the command's output, once verifyRun made it: the start-up
	// checks say there what they wait for.
	out *ui.Output
	// migration are the options verify judges with (its transform
	// options and table prefix: the flags', and the migration's for
	// those not given), once verifyRun computed them.
	migration migrationOptions
	// serviceNow is the time the services stamp changes with: verify's
	// start on that clock is what changes in flight are measured from,
	// and what its record keeps for a later --since.
	serviceNow func() time.Time
}

// verifyServices is what VerifyOptions.Connect returns.
type verifyServices = services[*verify.Verifier]

// verifyFlags are the flags of verify alone: --sample, --report and the
// hidden --page-size.
type verifyFlags struct{ o *VerifyOptions }

func (v verifyFlags) bind(fl *pflag.FlagSet) {
	fl.Float64Var(&v.o.Sample, "sample", 1, "check only this `fraction` of the rows (0 < F <= 1), chosen by a hash of their keys")
	fl.StringVar(&v.o.ReportFile, "report", "", "write the whole report to `FILE`: JSON, or one HTML page for a .html name")
	fl.StringVar(&v.o.ReportFormat, "report-format", "", "the --report file's `format`: "+joinOr(formatNames(v.o.Formats))+" (default: by its name)")
	fl.StringVar(&v.o.Since, "since", "", "judge only the rows and docs changed at or after this RFC 3339 `TIME` (e.g. "+sinceExample+
		"); on a clean full verify that started at or after it, the whole")
	fl.IntVar(&v.o.PageSize, "page-size", verify.DefaultPageSize, "docs per query page")
	_ = fl.MarkHidden("page-size")
}

func (v verifyFlags) validate() error {
	if !(v.o.Sample > 0 && v.o.Sample <= 1) {
		return badValue("--sample", v.o.Sample, "a fraction F with 0 < F <= 1")
	}
	if v.o.ReportFormat != "" && formatNamed(v.o.Formats, v.o.ReportFormat) == nil {
		return badValue("--report-format", v.o.ReportFormat, joinOr(formatNames(v.o.Formats)))
	}
	if v.o.ReportFormat != "" && v.o.ReportFile == "" {
		return UsageError(errors.New("--report-format needs --report FILE"))
	}
	if v.o.ReportFile != "" && v.o.ReportFormat == "" && formatByName(v.o.Formats, v.o.ReportFile) == nil {
		// Before any work: x.pdf would get JSON, which is not what was asked.
		return badValue("--report", v.o.ReportFile, "a name ending in "+joinOr(formatExts(v.o.Formats))+
			", or the format given with --report-format "+joinOr(formatNames(v.o.Formats)))
	}
	if v.o.Since != "" {
		since, err := parseSince(v.o.Since)
		if err != nil {
			return UsageError(err)
		}
		v.o.since = since
	}
	return nil
}

// reportFormat is the format of the --report file: --report-format, else
// the one its name says (formatByName); nil for neither, which validate
// refuses.
func (o *VerifyOptions) reportFormat() verify.Format {
	if o.ReportFormat != "" {
		return formatNamed(o.Formats, o.ReportFormat)
	}
	return formatByName(o.Formats, o.ReportFile)
}

// formatNamed is the format of formats called name; nil for none.
func formatNamed(formats []verify.Format, name string) verify.Format {
	for _, f := range formats {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// formatByName is the format of formats a file name says by its
// extension, in any case (.html, .HTM); the first of them for a name
// without one (/dev/stdout); nil for any other extension (.pdf, .txt),
// which verify refuses.
func formatByName(formats []verify.Format, name string) verify.Format {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == "" && len(formats) > 0 {
		return formats[0]
	}
	for _, f := range formats {
		if slices.Contains(f.Exts(), ext) {
			return f
		}
	}
	return nil
}

// formatNames are the names of formats, in their order.
func formatNames(formats []verify.Format) []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name()
	}
	return names
}

// formatExts are the extensions of formats, in their order.
func formatExts(formats []verify.Format) []string {
	var exts []string
	for _, f := range formats {
		exts = append(exts, f.Exts()...)
	}
	return exts
}

// NewCmdVerify builds `bifrost-migrate verify`. runF replaces the command's
// work in tests; nil means verifyRun.
func NewCmdVerify(f *Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{Formats: f.reportFormats(), serviceNow: f.serviceNow}
	opts.testNames.prefix = &opts.TablePrefix
	opts.Connect = func(ctx context.Context) (verifyServices, error) { return connectVerify(ctx, f, opts) }
	c := newCommand(verifyDoc, func(c *cobra.Command) error {
		opts.IO, opts.Database = f.IO(), f.Global.Database
		opts.TransformFlags.target = f.targetFingerprint(opts.Database, opts.BlobContainer)
		opts.Observe.attach(f, c.Name())
		opts.commandLine = strings.Join(append([]string{"bifrost-migrate"}, redactArgs(f.args)...), " ")
		return runWith(c, opts, runF, verifyRun)
	})
	addFlags(c, verifyFlags{opts}, &tablesFlag{what: "check", tables: &opts.Tables}, &opts.TransformFlags, &opts.testNames,
		stateDirFlag{&opts.StateDir, "run's state, whose dead-letter.jsonl lists the rows not migrated"}, &opts.RU, &opts.Observe)
	return c
}

// connectVerify connects the engine to the accounts of f.
func connectVerify(ctx context.Context, f *Factory, opts *VerifyOptions) (verifyServices, error) {
	uses := tablesRead | blobsRead | cosmosRead
	if !opts.since.IsZero() {
		uses |= changeFeed
	}
	c, err := connect(ctx, f, needs{uses: uses, database: opts.Database, blobContainer: opts.BlobContainer,
		probeTable: opts.migration.TablePrefix + firstTable(opts.Tables), pacer: opts.pacer, out: opts.out})
	v := &verify.Verifier{Rows: c.rowReader, Docs: c.docReader, Blobs: c.blobStore}
	if !opts.since.IsZero() {
		v.Changes, v.Position = c.docReader, azure.ChangeFeedSince
	}
	return verifyServices{conn: c, deps: v}, err
}

// verifyRun runs the engine and prints the report; rows not migrated and
// mismatches return a PartialError (exit 3); a missing table, database or
// container is an error (exit 1) before anything is compared.
func verifyRun(ctx context.Context, opts *VerifyOptions) error {
	o := opts.output("verify")
	opts.out = o
	started, serviceStarted := opts.Now(), opts.serviceNow()
	if opts.ReportFile != "" {
		// Before any reading: a report that cannot be written would only
		// be found out after hours.
		if err := checkWritable("--report", opts.ReportFile); err != nil {
			return err
		}
	}
	// verify records its verdict (and a full one the docs it read) in the
	// state directory, and sorts beyond memory there.
	if err := checkStateDir(opts.StateDir); err != nil {
		return err
	}
	ranges, err := store.LoadRanges(opts.StateDir)
	if err != nil {
		return InputError(err)
	}
	if !opts.since.IsZero() && opts.since.After(serviceStarted) {
		return UsageError(futureSince(opts.Since, opts.since, serviceStarted))
	}
	mig, err := opts.TransformFlags.migration("verify", opts.StateDir, opts.TablePrefix, false)
	if err != nil {
		return err
	}
	opts.migration = mig
	topts := mig.Transform
	topts.Now = opts.Now().UTC()
	opts.pacer = opts.RU.pacer()
	p, err := opts.Observe.progress(opts.IO, o, "verify", opts.RU.meters(), ui.Words{}, "")
	if err != nil {
		return err
	}
	defer p.Finish()
	if opts.RU.MaxRU > 0 {
		// A query page is charged as a whole: keep one page to a small
		// share of the budget, so that no 5-second window exceeds it.
		opts.PageSize = min(opts.PageSize, max(100, int(opts.RU.MaxRU/10)))
	}
	svc, err := opts.Connect(ctx)
	if err != nil {
		return err
	}
	v := svc.deps
	// Its phases: status lines (--output json: progress lines) and the
	// progress lines' phase.
	v.Progress = p
	if err := ready(ctx, o, svc.conn, svc.conn.rowReader, mig.TablePrefix, opts.Tables); err != nil {
		return err
	}
	mig.say(o)
	recordTarget := verifyTarget(svc.conn.target, mig.TablePrefix, topts)
	vopts := verify.Options{
		Transform:   topts,
		Tables:      opts.Tables,
		TablePrefix: mig.TablePrefix,
		Sample:      opts.Sample,
		PageSize:    opts.PageSize,
		Database:    opts.Database,
		Since:       opts.since,
		Started:     serviceStarted,
		DocsDir:     opts.StateDir,
		Ranges:      ranges,
	}
	if vopts.TempDir, err = prepareStateDir(opts.StateDir); err != nil {
		return err
	}
	if !opts.since.IsZero() {
		vopts.Base = sinceBase(o, opts.StateDir, opts.since, recordTarget)
	}
	r, err := v.Run(ctx, vopts)
	if err != nil {
		return err
	}
	signOff(r, opts, svc.conn.target, started)
	ru := opts.RU.report(0)
	r.DeadLetterFile = filepath.Join(opts.StateDir, migrate.DeadLetterFile)
	if _, serr := os.Stat(r.DeadLetterFile); serr == nil {
		r.DeadLetterFileFound = true
	} else if !errors.Is(serr, fs.ErrNotExist) {
		o.Warning("%s cannot be read: %v", r.DeadLetterFile, unwrapPath(serr))
	}
	o.Status("%s in %.1fs (%.0f rows/s)", words.Count(int64(r.Totals.Rows), "row", "rows"), r.ElapsedSeconds, float64(r.Totals.Rows)/max(r.ElapsedSeconds, 1e-9))
	if !opts.Quiet && !o.JSON() {
		// With --output json, the summary's "ru" says the same.
		ru.WriteText(ui.Prefixed{W: opts.ErrOut, Prefix: "verify: "})
	}
	verdict := verifyVerdict(r)
	if err := writeVerifySummary(o, opts.Out, r, ru); err != nil {
		return err
	}
	if err := saveRecord(opts.StateDir, verify.NewRecordEntry(r, opts.serviceNow(), version.String(), recordTarget)); err != nil {
		what := r.VerdictLine()
		if verdict != nil {
			what = verdict.Error()
		}
		return fmt.Errorf("%s; but its record was not written: %w", what, err)
	}
	if opts.ReportFile != "" {
		if err := writeReportFile(opts.ReportFile, opts.reportFormat(), r, reportMeta(o, opts.StateDir, r.RunID)); err != nil {
			// The verdict is printed: say it again, and that the report
			// the operator asked for is not there.
			what := r.VerdictLine()
			if verdict != nil {
				what = verdict.Error()
			}
			return fmt.Errorf("%s; but the report was not written: %w", what, err)
		}
	}
	return verdict
}

// writeVerifySummary prints the report: the summary line with ru
// (--output json), or the text.
func writeVerifySummary(o *ui.Output, out io.Writer, r *verify.Report, ru ui.RUReport) error {
	var err error
	if o.JSON() {
		err = o.Lines().Emit(ui.LineSummary, struct {
			*verify.Report
			RU ui.RUReport `json:"ru"`
		}{r.Summary(), ru})
	} else {
		err = verify.Text{}.Write(out, r, verify.Meta{})
	}
	return err
}

// verifyVerdict is the error verify ends with for r: nil when r is OK,
// else a PartialError (exit 3) that counts what failed and, for a
// partial check, says in what.
func verifyVerdict(r *verify.Report) error {
	switch {
	case r.OK:
		return nil
	case r.NotMigrated > 0:
		listed := "see " + r.DeadLetterFile
		if !r.DeadLetterFileFound {
			listed = "`bifrost-migrate run --dry-run` lists them"
		}
		return PartialError(fmt.Errorf("verify found %d row(s) not migrated (dead letters; %s), %d missing, %d different and %d orphan doc(s)%s%s",
			r.NotMigrated, listed, r.Totals.Missing, r.Totals.Different, r.Totals.Orphans, r.PartialSuffix(), r.InFlightSuffix()))
	}
	return PartialError(fmt.Errorf("verify found %d missing, %d different and %d orphan doc(s)%s%s",
		r.Totals.Missing, r.Totals.Different, r.Totals.Orphans, r.PartialSuffix(), r.InFlightSuffix()))
}

// verifyTempDir begins the name of the directory in the state directory
// where a verify keeps what it sorts beyond memory: one of its own, so
// that two verifies on one state directory never share it, removed when
// it ends (one a verify that was killed left behind can be removed).
const verifyTempDir = "verify.tmp-"

// prepareStateDir makes the state directory, and in it the directory of
// this verify's sorted runs, whose path it returns (verify makes it again
// when it first needs it, and removes it).
func prepareStateDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--state-dir %s: %v", dir, unwrapPath(err))
	}
	tmp, err := os.MkdirTemp(dir, verifyTempDir)
	if err != nil {
		return "", fmt.Errorf("--state-dir %s: %v", dir, unwrapPath(err))
	}
	// verify makes it again at its first sorted run, and removes it at
	// the end; one that holds no run is not left behind.
	return tmp, os.Remove(tmp)
}

// verifyTarget names what a verify judges, as its record keeps it: the
// accounts, database and blob container (t.fingerprint), the table
// prefix and the transform options, never a secret.
func verifyTarget(t target, prefix string, o transform.Options) string {
	return fmt.Sprintf("%s;table-prefix=%s;execution-ttl=%s;blob-threshold=%d;relationships=%s;strict=%v",
		t.fingerprint(), prefix, o.ExecutionTTL, o.BlobThreshold, o.Relationships, o.Strict)
}

// sinceBase is the full verify recorded in dir that a --since of target
// at since builds on (verify.Record.Base), nil when none; it says in a
// status line on o which, or why none.
func sinceBase(o *ui.Output, dir string, since time.Time, target string) *verify.Base {
	alone := "; this check covers the changes since " + since.UTC().Format(time.RFC3339) + " alone"
	rec, err := verify.LoadRecord(dir)
	if err != nil {
		o.Warning("%v%s", err, alone)
		return nil
	}
	base, why := rec.Base(dir, since, target, func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	})
	if base == nil {
		o.Status("%s%s", why, alone)
		return nil
	}
	o.Status("%s", why)
	return base
}

// saveRecord adds e to the record in dir.
func saveRecord(dir string, e verify.RecordEntry) error {
	rec, err := verify.LoadRecord(dir)
	if err != nil || rec == nil {
		// One that cannot be read is replaced: it says nothing usable.
		rec = &verify.Record{}
	}
	rec.Add(e)
	return rec.Save(dir)
}

// checkWritable returns a usage error naming flag and name when a file
// cannot be created at name (its folder missing or not writable, or name
// a folder), having created and removed a temporary file beside it.
func checkWritable(flag, name string) error {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return UsageError(fmt.Errorf("%s %s: is a folder; give a file name", flag, name))
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return UsageError(fmt.Errorf("%s %s: cannot write there: %v", flag, name, unwrapPath(err)))
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkStateDir returns a usage error naming --state-dir and dir when dir
// could not be created or written (a file where a folder is needed, a
// read-only folder). It creates nothing that stays: it writes a
// temporary file into dir, or into its nearest existing parent when dir
// does not exist yet.
func checkStateDir(dir string) error {
	p := dir
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return UsageError(fmt.Errorf("--state-dir %s: cannot create it: %s is not a directory", dir, p))
		case err == nil:
			f, err := os.CreateTemp(p, ".bifrost-migrate-check.*")
			if err != nil {
				return UsageError(fmt.Errorf("--state-dir %s: cannot write there: %v", dir, unwrapPath(err)))
			}
			f.Close()
			return os.Remove(f.Name())
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return UsageError(fmt.Errorf("--state-dir %s: %v", dir, unwrapPath(err)))
		case filepath.Dir(p) == p:
			return nil
		}
		p = filepath.Dir(p)
	}
}

// unwrapPath is the reason of a file-system error without the operation
// and path the sentence around it names ("permission denied").
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// signOff fills what the report says of where and when it was made: the
// migration's run (from the state directory), verify's start (started)
// and end, the command line and the endpoints of t, without secrets.
func signOff(r *verify.Report, opts *VerifyOptions, t target, started time.Time) {
	r.Started, r.Ended = started.UTC().Format(time.RFC3339), opts.Now().UTC().Format(time.RFC3339)
	r.CommandLine = opts.commandLine
	r.Endpoints = &verify.Endpoints{
		Tables: verify.Endpoint{Endpoint: t.tables.TableEndpoint, Account: t.tables.Name, Auth: t.tables.Auth()},
		Blobs:  verify.Endpoint{Endpoint: t.blobs.BlobEndpoint, Account: t.blobs.Name, Container: t.blobName, Auth: t.blobs.Auth()},
		Cosmos: verify.Endpoint{Endpoint: t.cosmos.Endpoint, Database: t.database, Auth: cosmosAuth(t.cosmos)},
	}
	// migration read the same state at the start; a state that cannot be read
	// was said then.
	if st, err := migrate.LoadState(opts.StateDir); err == nil && st != nil {
		r.RunID = st.RunID
		r.Migration = &verify.Migration{RunID: st.RunID, StateDir: opts.StateDir, Started: st.Started.UTC().Format(time.RFC3339),
			Updated: st.Updated.UTC().Format(time.RFC3339), Done: st.Done, ToolVersion: st.ToolVersion}
	}
}

// reportMeta is what the report file shows beyond the report: the
// version, and the throughput samples of run runID in stateDir, read
// only by a format that charts them (a file that cannot be read is a
// warning, and the charts are left out).
func reportMeta(o *ui.Output, stateDir, runID string) verify.Meta {
	m := verify.Meta{ToolVersion: version.String(), RatesFrom: filepath.Join(stateDir, migrate.SamplesFile)}
	m.Rates = func() []verify.RatePoint {
		if runID == "" {
			return nil
		}
		samples, err := migrate.LoadSamples(stateDir, runID)
		if err != nil {
			o.Warning("%s cannot be read (%v): the report has no throughput charts", m.RatesFrom, unwrapPath(err))
			return nil
		}
		rates := make([]verify.RatePoint, len(samples))
		for i, s := range samples {
			rates[i] = verify.RatePoint{Time: s.Time, RowsPerSecond: s.RowsPerSecond, DocsPerSecond: s.DocsPerSecond, RUPerSecond: s.RUPerSecond}
		}
		return rates
	}
	return m
}

// writeReportFile writes the report in format, with meta, through a
// temporary file so that a half-written report never replaces a complete
// one.
func writeReportFile(name string, format verify.Format, r *verify.Report, meta verify.Meta) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("--report %s: %v", name, unwrapPath(err))
	}
	err = format.Write(f, r, meta)
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--report %s: %v", name, unwrapPath(err))
	}
	// fsync before the rename, so that after a crash the report is either
	// the old one or the complete new one, never an empty file.
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("--report %s: %v", name, unwrapPath(err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--report %s: %v", name, unwrapPath(err))
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("--report %s: %v", name, unwrapPath(err))
	}
	return nil
}

// verifyDoc is the help of `bifrost-migrate verify`.
var verifyDoc = cmdDoc{
	use:   "verify [--sample F] [--since TIME] [--report FILE]",
	short: "Prove the migration: every source row against Cosmos DB and Blob Storage",
	long: `Recompute the doc of every source row with the migration's options (from
--state-dir), read the docs in bulk and compare them field by field, by
meaning: timestamps as instants, a null field as an absent one. It reports
missing, different and orphan docs, rows not migrated (dead letters), and
where users will see executions differently after cutover (access
patterns). A full check's "verify: OK" (exit 0) is the signal to cut over.
Findings are read again at the end: what changed while verify ran (a
replay --follow, the application) is counted apart, not as a difference.
With --sample or --tables the check is partial: its verdict line says what
it judged ("verify: OK for a 1 % sample: 209 of 20,000 rows judged"), and
its exit 0 speaks for those rows alone. With --since it judges what
changed since then, in the tables and in Cosmos DB (its change feed); on
a clean full verify that started at or after then, recorded with the docs
it read in --state-dir (verify.json), it proves the whole: the cutover's
last step.`,
	example: `  bifrost-migrate verify
  # a page to sign the cutover off with (or .json: everything, as JSON)
  bifrost-migrate verify --report verify.html
  # at the write stop: what changed since the full verify started (its start is in verify.json)
  bifrost-migrate verify --since 2026-11-27T04:10:12Z
  # a quick look at 1 % of the rows, chosen by a hash of their keys (a partial check)
  bifrost-migrate verify --sample 0.01`,
}
