package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/verify"
)

// verifyTo runs `verify` on the env with args and --report report (a
// .json or .html name in a temporary folder) and returns the exit code,
// stdout, stderr and the report file's bytes.
func (e *verifyEnv) verifyTo(report string, args ...string) (code int, stdout, stderr string, file []byte) {
	e.t.Helper()
	name := filepath.Join(e.t.TempDir(), report)
	code, stdout, stderr = e.cli(append([]string{"verify", "--database", e.db, "--table-prefix", e.prefix,
		"--blob-container", e.blobs, "--state-dir", e.stateDir, "--quiet", "--report", name}, args...)...)
	file, err := os.ReadFile(name)
	if err != nil {
		e.t.Fatalf("verify %v: exit %d, no report (%v): %s", args, code, err, stderr)
	}
	return code, stdout, stderr, file
}

// sampledRows counts the rows of the env's tables, and those in a sample
// of fraction f, reading the tables themselves.
func (e *verifyEnv) sampledRows(f float64) (sampled, rows int) {
	e.t.Helper()
	reader := azure.NewTableReader(e.acct, azure.Options{})
	for _, table := range fixtures.Tables() {
		err := store.Scan(context.Background(), reader, "", e.prefix+table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			for _, row := range p.Rows {
				rows++
				if verify.Sampled(table, row.PartitionKey, row.RowKey, f) {
					sampled++
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return sampled, rows
}

// wantPartialOK checks a partial check that found nothing wrong: exit 0,
// last the last line of its stdout, no line of either output the bare
// verdict of a full check ("verify: OK"), and its JSON report (file) ok,
// partial and of scope.
func wantPartialOK(t *testing.T, what string, code int, stdout, stderr string, file []byte, last, scope string) {
	t.Helper()
	if code != ExitOK || lastLine(stdout) != last {
		t.Errorf("%s: exit %d, last line\n%s\nwant exit 0 and\n%s\nstderr: %s", what, code, lastLine(stdout), last, stderr)
	}
	for _, out := range []string{stdout, stderr} {
		if slices.Contains(strings.Split(out, "\n"), "verify: OK") {
			t.Errorf("%s prints the bare full-check verdict \"verify: OK\":\n%s", what, out)
		}
	}
	wantScope(t, what, file, true, true, scope)
}

// wantScope checks the JSON report's verdict: ok, the partial marker and
// the scope, read by their names in the file.
func wantScope(t *testing.T, what string, file []byte, ok, partial bool, scope string) {
	t.Helper()
	var got struct {
		OK      *bool           `json:"ok"`
		Partial *bool           `json:"partial"`
		Scope   json.RawMessage `json:"scope"`
	}
	if err := json.Unmarshal(file, &got); err != nil {
		t.Fatalf("%s: report: %v", what, err)
	}
	var compact bytes.Buffer
	if got.Scope != nil {
		if err := json.Compact(&compact, got.Scope); err != nil {
			t.Fatalf("%s: scope %s: %v", what, got.Scope, err)
		}
	}
	if got.OK == nil || *got.OK != ok || got.Partial == nil || *got.Partial != partial || compact.String() != scope {
		seen, _ := json.Marshal(got)
		t.Errorf("%s: report %s; want ok %v, partial %v, scope %s", what, seen, ok, partial, scope)
	}
}

// verdictBox is the text of the HTML page's verdict box (the element of
// class verdict), whitespace collapsed.
func verdictBox(t *testing.T, page []byte) string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the report does not parse as HTML: %v", err)
	}
	var box *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "class" && slices.Contains(strings.Fields(a.Val), "verdict") && box == nil {
				box = n
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if box == nil {
		t.Fatalf("the page has no verdict box")
	}
	return text(box)
}

// TestVerifyPartialCheckSaysWhatItJudged (SPEC §12): on the fixtures
// migrated, verify --tables Config fails for Config's dead letters and
// says, in its last lines, that it judged Config alone; once the dead
// letters are gone, verify --sample 0.05 and verify --tables Config exit
// 0 with a verdict line that names what they judged (the rows of the
// sample counted from the tables themselves) and never the bare "verify:
// OK"; their JSON reports are marked partial with their scope, and the
// HTML page's verdict box says "Partial check". A full check, and a
// --tables naming every table, still end in the bare "verify: OK".
func TestVerifyPartialCheckSaysWhatItJudged(t *testing.T) {
	e := migratedFixtures(t)

	// A failing partial check: Config holds 4 of the fixtures' dead letters.
	code, stdout, stderr, file := e.verifyTo("failing.json", "--tables", "Config")
	scope := "tables Config: 34 of 34 rows judged"
	if code != ExitPartial || lastLine(stdout) != "verify: 4 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s) in "+scope ||
		lastLine(stderr) != "bifrost-migrate: verify found 4 row(s) not migrated (dead letters; `bifrost-migrate run --dry-run` lists them), 0 missing, 0 different and 0 orphan doc(s) in "+scope {
		t.Errorf("--tables Config, failing: exit %d, last lines\n%s\n%s", code, lastLine(stdout), lastLine(stderr))
	}
	wantScope(t, "--tables Config, failing", file, false, true, `{"sample":1,"tables":["Config"],"rowsJudged":34,"rowsRead":34}`)

	if n := e.dropDeadLetterRows(); n != fixtureDeadLetters {
		t.Fatalf("deleted %d dead-letter rows, want %d", n, fixtureDeadLetters)
	}
	sampled, rows := e.sampledRows(0.05)
	if rows != 140-fixtureDeadLetters || sampled == 0 || sampled == rows {
		t.Fatalf("%d of %d rows in the 5 %% sample: the test needs some in it and some out", sampled, rows)
	}

	// A clean sample.
	code, stdout, stderr, file = e.verifyTo("sample.json", "--sample", "0.05")
	wantPartialOK(t, "--sample 0.05", code, stdout, stderr, file,
		fmt.Sprintf("verify: OK for a 5 %% sample: %d of 134 rows judged", sampled),
		fmt.Sprintf(`{"sample":0.05,"rowsJudged":%d,"rowsRead":134}`, sampled))

	// A clean table, as text and JSON, then as the HTML page.
	code, stdout, stderr, file = e.verifyTo("tables.json", "--tables", "Config")
	wantPartialOK(t, "--tables Config", code, stdout, stderr, file,
		"verify: OK for tables Config: 30 of 30 rows judged",
		`{"sample":1,"tables":["Config"],"rowsJudged":30,"rowsRead":30}`)
	code, _, stderr, page := e.verifyTo("tables.html", "--tables", "Config")
	box := verdictBox(t, page)
	if want := "Partial check of tables Config: 30 of 30 rows judged. In sync: every row judged is where its disposition says. " +
		"Only a full check, of every row of every table, is the signal to cut over."; code != ExitOK || !strings.HasPrefix(box, want) {
		t.Errorf("--tables Config --report .html: exit %d, verdict box\n%s\nwant it to begin\n%s\nstderr: %s", code, box, want, stderr)
	}

	// Full checks: every table named is no selection.
	for _, args := range [][]string{nil, {"--tables", "Config,Entities,Relationships"}} {
		code, stdout, stderr, file = e.verifyTo("full.json", args...)
		if code != ExitOK || lastLine(stdout) != "verify: OK" {
			t.Errorf("verify %v: exit %d, last line %q; want 0 and the bare \"verify: OK\": %s", args, code, lastLine(stdout), stderr)
		}
		wantScope(t, fmt.Sprintf("verify %v", args), file, true, false, `{"sample":1,"rowsJudged":134,"rowsRead":134}`)
	}
	code, _, stderr, page = e.verifyTo("full.html")
	if box := verdictBox(t, page); code != ExitOK || !strings.HasPrefix(box, "In sync: every source row is where its disposition says.") || strings.Contains(box, "artial") {
		t.Errorf("full check --report .html: exit %d, verdict box\n%s\nstderr: %s", code, box, stderr)
	}
}

// TestVerifyTablesWithoutRows: verify --tables Config on a source whose
// Config table holds no rows says "no rows to judge", never the bare
// "verify: OK"; it still judges the docs of Config rows, so docs the
// migration wrote from Config rows since deleted are orphans (exit 3);
// once they are gone too it exits 0, and its page says nothing was judged.
func TestVerifyTablesWithoutRows(t *testing.T) {
	t.Parallel()
	e := newVerifyEnv(t)
	e.loadFixtures()
	e.dropDeadLetterRows()
	e.migrate()
	svc, err := azure.NewTablesClient(e.acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	config := svc.NewClient(e.prefix + "Config")
	reader := azure.NewTableReader(e.acct, azure.Options{})
	err = store.Scan(context.Background(), reader, "", e.prefix+"Config", store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			if _, err := config.DeleteEntity(context.Background(), row.PartitionKey, row.RowKey, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr, file := e.verifyTo("orphans.json", "--tables", "Config")
	var r verify.Report
	if err := json.Unmarshal(file, &r); err != nil {
		t.Fatal(err)
	}
	if code != ExitPartial || len(r.Orphans) != 30 ||
		lastLine(stdout) != "verify: 0 missing, 0 different, 30 orphan doc(s) in tables Config: no rows to judge" ||
		lastLine(stderr) != "bifrost-migrate: verify found 0 missing, 0 different and 30 orphan doc(s) in tables Config: no rows to judge" {
		t.Fatalf("Config emptied, its docs left: exit %d, %d orphans, last lines\n%s\n%s", code, len(r.Orphans), lastLine(stdout), lastLine(stderr))
	}
	for _, o := range r.Orphans {
		e.deleteDoc(o.Container, o.Scope, o.ID)
	}

	code, stdout, stderr, file = e.verifyTo("empty.json", "--tables", "Config")
	wantPartialOK(t, "--tables Config without rows", code, stdout, stderr, file,
		"verify: OK for tables Config: no rows to judge",
		`{"sample":1,"tables":["Config"],"rowsJudged":0,"rowsRead":0}`)
	_, _, _, page := e.verifyTo("empty.html", "--tables", "Config")
	if box, want := verdictBox(t, page), "Partial check of tables Config: no rows to judge. Nothing judged: no row, and no doc in Cosmos DB from a row of the selection."; !strings.HasPrefix(box, want) {
		t.Errorf("verdict box\n%s\nwant it to begin\n%s", box, want)
	}

	// The full check of the same source.
	if code, stdout, stderr, _ = e.verifyTo("full.json"); code != ExitOK || lastLine(stdout) != "verify: OK" {
		t.Errorf("full check: exit %d, last line %q: %s", code, lastLine(stdout), stderr)
	}
}
