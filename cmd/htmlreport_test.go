package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/verify"
)

// externalRefs walks the parsed page and returns every reference that
// leaves it: a src, href, action, poster, srcset, xlink:href or
// (anywhere, <style> included) url(...) or @import whose target is not
// in the page itself (a fragment) or inline (data:).
func externalRefs(doc *html.Node) []string {
	var out []string
	check := func(ref string) {
		ref = strings.Trim(strings.TrimSpace(ref), `'"`)
		if ref == "" || strings.HasPrefix(ref, "#") || strings.HasPrefix(strings.ToLower(ref), "data:") {
			return
		}
		out = append(out, ref)
	}
	cssRefs := func(css string) {
		for _, marker := range []string{"url(", "@import"} {
			rest := css
			for {
				i := strings.Index(strings.ToLower(rest), marker)
				if i < 0 {
					break
				}
				rest = rest[i+len(marker):]
				end := strings.IndexAny(rest, ");")
				if end < 0 {
					end = len(rest)
				}
				check(rest[:end])
			}
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				switch strings.ToLower(a.Key) {
				case "src", "href", "action", "poster", "srcset", "xlink:href", "formaction", "data", "manifest":
					check(a.Val)
				case "style":
					cssRefs(a.Val)
				}
				if a.Namespace == "xlink" && a.Key == "href" {
					check(a.Val)
				}
			}
		}
		if n.Type == html.TextNode && n.Parent != nil && n.Parent.Data == "style" {
			cssRefs(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// text is the page's visible text, whitespace collapsed.
func text(doc *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "script") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return strings.Join(strings.Fields(b.String()), " ")
}

// TestVerifyHTMLReport: verify --report FILE.html of the fixtures that
// run migrated writes one page that parses as HTML, references nothing
// outside itself, states the verdict first, names every table and kind,
// the reason of every dead letter, the tool's version and the run's id,
// charts as inline SVG, and no key; the JSON report of the same verify
// carries the version, the run id, verify's start and end, the endpoints,
// account and database names, the command line and the dead letters.
// --report-format html writes HTML whatever the name.
func TestVerifyHTMLReport(t *testing.T) {
	e := newReplayEnv(t) // the fixtures, migrated by run
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	args := []string{"verify", "--database", e.db, "--table-prefix", e.prefix, "--blob-container", e.blobs, "--state-dir", e.stateDir, "--quiet"}
	if code, _, stderr := e.cli(append(args, "--report", page)...); code != ExitPartial {
		t.Fatalf("verify --report report.html: exit %d, want 3 (the fixtures' dead letters): %s", code, stderr)
	}
	_, _, r := e.verify()
	st, err := migrate.LoadState(e.stateDir)
	if err != nil || st == nil {
		t.Fatalf("run's state: %v, %v", st, err)
	}

	// The JSON report's sign-off facts.
	if r.RunID != st.RunID || r.Migration == nil || r.Migration.RunID != st.RunID || !r.Migration.Done {
		t.Errorf("JSON report: runId %q, migration %+v; want run %s, done", r.RunID, r.Migration, st.RunID)
	}
	if r.Started == "" || r.Ended == "" || !strings.Contains(r.CommandLine, "bifrost-migrate verify") {
		t.Errorf("JSON report: started %q, ended %q, command line %q", r.Started, r.Ended, r.CommandLine)
	}
	ep := r.Endpoints
	if ep == nil || ep.Cosmos.Database != e.db || ep.Tables.Account != e.acct.Name || ep.Blobs.Container != e.blobs ||
		ep.Tables.Endpoint != e.acct.TableEndpoint || ep.Cosmos.Endpoint == "" || ep.Cosmos.Auth != "account key" {
		t.Errorf("JSON report endpoints %+v; want database %s, account %s, container %s", ep, e.db, e.acct.Name, e.blobs)
	}
	if len(r.DeadLetters) != fixtureDeadLetters || r.NotMigrated != fixtureDeadLetters {
		t.Fatalf("JSON report: %d dead letters listed, %d not migrated; want %d", len(r.DeadLetters), r.NotMigrated, fixtureDeadLetters)
	}
	for _, dl := range r.DeadLetters {
		if dl.Reason == "" || dl.Kind == "" || !json.Valid(dl.Row) {
			t.Errorf("dead letter %+v: no reason, kind or row", dl)
		}
	}

	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the report does not parse as HTML: %v", err)
	}
	if refs := externalRefs(doc); len(refs) > 0 {
		t.Errorf("the report references outside itself: %q", refs)
	}
	for _, s := range []string{"://", "//fonts", "<script"} {
		if strings.Contains(string(b), s) && (s != "://" || !onlyEndpoints(string(b), r)) {
			t.Errorf("the page holds %q", s)
		}
	}
	words := text(doc)
	if i := strings.Index(words, "Not in sync: 6 row(s) are not migrated"); i < 0 || i > 200 {
		t.Errorf("the verdict is not at the top of the page (at %d):\n%.400s", i, words)
	}
	for _, k := range r.Tables {
		if !strings.Contains(words, k.Table+" · "+k.Kind) || !strings.Contains(words, k.Table+" "+k.Kind+" ") {
			t.Errorf("the page does not name table %s kind %s in its chart and its table", k.Table, k.Kind)
		}
	}
	for _, dl := range r.DeadLetters {
		if !strings.Contains(words, strings.Join(strings.Fields(dl.Reason), " ")) {
			t.Errorf("the page does not give the reason of dead letter %s/%s: %q", dl.PartitionKey, dl.RowKey, dl.Reason)
		}
	}
	for _, want := range []string{version.String(), st.RunID, e.db} {
		if !strings.Contains(words, want) {
			t.Errorf("the page does not hold %q", want)
		}
	}
	if n := strings.Count(string(b), "<svg"); n < 2 {
		t.Errorf("%d inline SVG charts, want the dispositions and the throughput", n)
	}
	for _, key := range []string{azure.DevStorageKey, azure.EmulatorCosmosKey} {
		if strings.Contains(string(b), key[:12]) {
			t.Errorf("the page holds a piece of a key")
		}
	}
	if !strings.Contains(words, `"Value":"***"`) && !strings.Contains(words, `"***"`) {
		t.Errorf("no redacted value among the dead letters' rows")
	}

	// By format, whatever the name.
	named := filepath.Join(dir, "report.txt")
	if code, _, stderr := e.cli(append(args, "--report", named, "--report-format", "html")...); code != ExitPartial {
		t.Fatalf("verify --report-format html: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(named); err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Errorf("--report-format html wrote %.40q (%v)", b, err)
	}
}

// onlyEndpoints reports whether every "://" in page belongs to one of
// the report's endpoints, which the page names as text.
func onlyEndpoints(page string, r *verify.Report) bool {
	if r.Endpoints == nil {
		return false
	}
	for _, ep := range []string{r.Endpoints.Tables.Endpoint, r.Endpoints.Blobs.Endpoint, r.Endpoints.Cosmos.Endpoint} {
		page = strings.ReplaceAll(page, ep, "")
	}
	return !strings.Contains(page, "://")
}
