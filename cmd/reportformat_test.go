package cmd

import (
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/verify"
)

// csvFormat is a report format defined here, in one file, and given to
// the Factory: one line per table and kind with its counts.
type csvFormat struct{}

func (csvFormat) Name() string   { return "csv" }
func (csvFormat) Exts() []string { return []string{".csv"} }

func (csvFormat) Write(w io.Writer, r *verify.Report, meta verify.Meta) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"table", "kind", "rows", "matched", "missing", "dead-letter", "tool"})
	for _, k := range r.Tables {
		_ = cw.Write([]string{k.Table, k.Kind, strconv.Itoa(k.Rows), strconv.Itoa(k.Matched), strconv.Itoa(k.Missing),
			strconv.Itoa(k.DeadLetter), meta.ToolVersion})
	}
	cw.Flush()
	return cw.Error()
}

// TestANewReportFormat: a format given to the Factory is offered by
// --report-format (accepted, and listed when a value is refused, with its
// extension when a --report name is), by its help and by the shell's
// completion, and verify writes the report in it, chosen by the name or
// by --report-format.
func TestANewReportFormat(t *testing.T) {
	formats := append(verify.Formats(), csvFormat{})
	factory := func(env map[string]string) (*Factory, *strings.Builder, *strings.Builder) {
		f, out, errOut := newTestFactory(env)
		f.ReportFormats = formats
		var o, e strings.Builder
		f.Out, f.ErrOut = io.MultiWriter(out, &o), io.MultiWriter(errOut, &e)
		return f, &o, &e
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--report", "r.json", "--report-format", "xml"}, `--report-format "xml": want json, html or csv`},
		{[]string{"verify", "--report", "verify.pdf"},
			`--report "verify.pdf": want a name ending in .json, .html, .htm or .csv, or the format given with --report-format json, html or csv`},
	} {
		f, out, errOut := factory(nil)
		want := "bifrost-migrate: " + tc.want + "\nRun 'bifrost-migrate verify --help' for usage.\n"
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage || errOut.String() != want || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and:\n%s", tc.args, code, errOut, want)
		}
	}
	f, out, _ := factory(nil)
	if code := Execute(context.Background(), f, []string{"verify", "--help"}); code != ExitOK ||
		!strings.Contains(out.String(), "the --report file's format: json, html or csv (default: by its name)") {
		t.Errorf("verify --help: exit %d, does not offer csv:\n%s", code, out)
	}
	f, out, errOut := factory(nil)
	if code := Execute(context.Background(), f, []string{"__complete", "verify", "--report-format", ""}); code != ExitOK ||
		out.String() != "json\tthe format of a name ending in .json\nhtml\tthe format of a name ending in .html or .htm\n"+
			"csv\tthe format of a name ending in .csv\n:4\n" {
		t.Errorf("__complete verify --report-format '': exit %d:\n%s%s", code, out, errOut)
	}

	// verify writes it: the fixtures, loaded and not migrated (every doc
	// missing), by the name and by --report-format.
	e := newVerifyEnv(t)
	e.loadFixtures()
	_, _, r := e.verify()
	dir := t.TempDir()
	for _, report := range [][]string{{"--report", filepath.Join(dir, "verify.csv")}, {"--report", filepath.Join(dir, "verify.out"), "--report-format", "csv"}} {
		f, _, errOut := factory(e.env)
		args := append([]string{"verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir, "--quiet"}, report...)
		if code := Execute(context.Background(), f, args); code != ExitPartial {
			t.Fatalf("%q: exit %d, want 3 (nothing migrated): %s", report, code, errOut)
		}
		b, err := os.ReadFile(report[1])
		if err != nil {
			t.Fatal(err)
		}
		lines, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil || len(lines) != 1+len(r.Tables) || len(r.Tables) == 0 {
			t.Fatalf("%q: %d lines (%v), want a header and %d:\n%s", report, len(lines), err, len(r.Tables), b)
		}
		for i, k := range r.Tables {
			want := []string{k.Table, k.Kind, strconv.Itoa(k.Rows), "0", strconv.Itoa(k.Missing), strconv.Itoa(k.DeadLetter), "(devel)"}
			if !slices.Equal(lines[i+1], want) {
				t.Errorf("%q: line %d %q, want %q", report, i+1, lines[i+1], want)
			}
		}
	}
}
