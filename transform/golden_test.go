package transform

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	fixturesDir = "../fixtures"
	goldenDir   = "testdata/golden"
)

// goldenNow is the clock of the goldens, the "now" of
// fixtures/inventory.json: every fixture execution is inside the 14-day
// window except E14, which is expired.
var goldenNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixtureRow is one fixture line, decoded.
type fixtureRow struct {
	row  Row
	line int
}

// loadFixtureTable reads fixtures/tables/<table>.jsonl in key order
// (PartitionKey, then RowKey), the order Table Storage returns rows in.
func loadFixtureTable(t testing.TB, dir, table string) []fixtureRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "tables", table+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []fixtureRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		row, err := DecodeEntity(table, line)
		if err != nil {
			t.Fatalf("%s.jsonl:%d: %v", table, n, err)
		}
		rows = append(rows, fixtureRow{row, n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(rows, func(a, b fixtureRow) int {
		if c := strings.Compare(a.row.PartitionKey, b.row.PartitionKey); c != 0 {
			return c
		}
		return strings.Compare(a.row.RowKey, b.row.RowKey)
	})
	return rows
}

// loadFixtureBlobs builds BlobFacts per execution id from the
// fixtures/blobs/<executionId>/<file> tree.
func loadFixtureBlobs(t testing.TB, dir string) map[string]BlobFacts {
	t.Helper()
	facts := map[string]BlobFacts{}
	root := filepath.Join(dir, "blobs")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f BlobFacts
		for _, file := range files {
			name, ok := ParseBlobName(file.Name())
			if !ok {
				continue
			}
			info, err := file.Info()
			if err != nil {
				t.Fatal(err)
			}
			f.Set(name, info.Size())
		}
		facts[e.Name()] = f
	}
	return facts
}

// goldenOutcome is an Outcome as a reviewer reads it.
type goldenOutcome struct {
	Table            string          `json:"table"`
	PartitionKey     string          `json:"partitionKey"`
	RowKey           string          `json:"rowKey"`
	Kind             string          `json:"kind"`
	Disposition      Disposition     `json:"disposition"`
	DeadLetter       string          `json:"deadLetter,omitempty"`
	Container        string          `json:"container,omitempty"`
	ID               string          `json:"id,omitempty"`
	RawID            string          `json:"rawId,omitempty"`
	Scope            string          `json:"scope,omitempty"`
	IndexExecutionID string          `json:"indexExecutionId,omitempty"`
	Warnings         []Warning       `json:"warnings,omitempty"`
	Uploads          []goldenUpload  `json:"uploads,omitempty"`
	Doc              json.RawMessage `json:"doc,omitempty"`
}

type goldenUpload struct {
	Path        string `json:"path"`
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
	SHA256      string `json:"sha256"`
}

func toGolden(row Row, o Outcome) goldenOutcome {
	g := goldenOutcome{
		Table: row.Table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Kind: o.Kind,
		Disposition: o.Disposition, DeadLetter: o.DeadLetter, Container: o.Container,
		ID: o.ID, Scope: o.Scope, IndexExecutionID: o.IndexExecutionID, Warnings: o.Warnings,
		Doc: o.DocJSON,
	}
	if o.RawID != o.ID {
		g.RawID = o.RawID
	}
	for _, u := range o.Uploads {
		sum := sha256.Sum256(u.Data)
		g.Uploads = append(g.Uploads, goldenUpload{u.Path, u.ContentType, len(u.Data), hex.EncodeToString(sum[:])})
	}
	return g
}

// goldenFileName turns a RowKey into a portable file name: letters,
// digits, '.', '-' and '_' stay, ':' becomes '+', every other byte %XX.
// The PartitionKey is appended after '@' when the same RowKey occurs in
// more than one partition of the table.
func goldenFileName(rowKey, partitionKey string, ambiguous bool) string {
	enc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.' || c == '-' || c == '_':
				b.WriteByte(c)
			case c == ':':
				b.WriteByte('+')
			default:
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	name := enc(rowKey)
	if ambiguous {
		name += "@" + enc(partitionKey)
	}
	if len(name) > 180 {
		sum := sha256.Sum256([]byte(name))
		name = name[:160] + "~" + hex.EncodeToString(sum[:8])
	}
	return name + ".golden"
}

// transformFixtures runs every fixture row through Transform and an IDSet
// in read order and returns the outcomes by table.
func transformFixtures(t testing.TB, opts Options) map[string][]struct {
	Row     Row
	Outcome Outcome
} {
	t.Helper()
	blobs := loadFixtureBlobs(t, fixturesDir)
	ids := NewIDSet()
	out := map[string][]struct {
		Row     Row
		Outcome Outcome
	}{}
	for _, table := range []string{TableConfig, TableEntities, TableRelationships} {
		for _, fr := range loadFixtureTable(t, fixturesDir, table) {
			var bf BlobFacts
			if table == TableEntities && Kind(fr.row.RowKey) == "execution" {
				bf = blobs[ExecutionID(fr.row)]
			}
			o := ids.Check(Transform(fr.row, bf, opts))
			out[table] = append(out[table], struct {
				Row     Row
				Outcome Outcome
			}{fr.row, o})
		}
	}
	return out
}

// fixturesPresent fails the test when the committed fixtures are missing:
// the goldens and the inventory check must never pass by not running.
func fixturesPresent(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(fixturesDir, "tables", "Entities.jsonl")); err != nil {
		t.Fatal("fixtures not present: ", err)
	}
}

// TestGolden compares the outcome of every fixture row with
// testdata/golden/<Table>/<RowKey>.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	fixturesPresent(t)
	results := transformFixtures(t, Options{Now: goldenNow})
	for table, rows := range results {
		partitions := map[string]map[string]bool{}
		for _, r := range rows {
			if partitions[r.Row.RowKey] == nil {
				partitions[r.Row.RowKey] = map[string]bool{}
			}
			partitions[r.Row.RowKey][r.Row.PartitionKey] = true
		}
		dir := filepath.Join(goldenDir, table)
		if *update {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]bool{}
		for _, r := range rows {
			name := goldenFileName(r.Row.RowKey, r.Row.PartitionKey, len(partitions[r.Row.RowKey]) > 1)
			if want[name] {
				t.Fatalf("two fixture rows map to golden file %s", name)
			}
			want[name] = true
			got, err := json.MarshalIndent(toGolden(r.Row, r.Outcome), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join(dir, name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: %v (run go test ./transform -update)", path, err)
				continue
			}
			if !bytes.Equal(old, got) {
				t.Errorf("%s differs (run go test ./transform -update and review the diff):\n%s", path, got)
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !want[e.Name()] {
				t.Errorf("stale golden file %s (run go test ./transform -update)", filepath.Join(dir, e.Name()))
			}
		}
	}
}

// TestFixtureInventory checks the dispositions per table and kind, the
// collisions and the sanitized ids against fixtures/inventory.json, which
// the fixture author wrote independently from the SPEC.
func TestFixtureInventory(t *testing.T) {
	fixturesPresent(t)
	raw, err := os.ReadFile(filepath.Join(fixturesDir, "inventory.json"))
	if err != nil {
		t.Fatal("no inventory: ", err)
	}
	var inv struct {
		Now    time.Time                               `json:"now"`
		Tables map[string]map[string]map[string]int    `json:"tables"`
		Totals map[string]map[string]int               `json:"totals"`
		Colls  []struct{ Container, Scope, ID string } `json:"collisions"`
		IDs    []string                                `json:"sanitizedIds"`
		Blobs  struct{ UploadedByRun []string }        `json:"blobs"`
	}
	if err := json.Unmarshal(raw, &inv); err != nil {
		t.Fatal(err)
	}
	if !inv.Now.Equal(goldenNow) {
		t.Errorf("inventory now %v, goldens use %v", inv.Now, goldenNow)
	}
	results := transformFixtures(t, Options{Now: inv.Now})
	got := map[string]map[string]map[string]int{}
	var collisions, sanitized, uploads []string
	for table, rows := range results {
		got[table] = map[string]map[string]int{}
		for _, r := range rows {
			o := r.Outcome
			if got[table][o.Kind] == nil {
				got[table][o.Kind] = map[string]int{}
			}
			got[table][o.Kind][string(o.Disposition)]++
			if strings.HasPrefix(o.DeadLetter, "id collision") {
				collisions = append(collisions, o.Container+" "+o.Scope+" "+o.ID)
			}
			for _, w := range o.Warnings {
				if w.Reason == ReasonIDEncoded {
					sanitized = append(sanitized, o.ID)
				}
			}
			for _, u := range o.Uploads {
				uploads = append(uploads, u.Path)
			}
		}
	}
	gotJS, _ := json.MarshalIndent(got, "", " ")
	wantJS, _ := json.MarshalIndent(inv.Tables, "", " ")
	if !bytes.Equal(gotJS, wantJS) {
		t.Errorf("dispositions per table and kind\ngot  %s\nwant %s", gotJS, wantJS)
	}
	var wantColl []string
	for _, c := range inv.Colls {
		wantColl = append(wantColl, c.Container+" "+c.Scope+" "+c.ID)
	}
	if !equalStrings(collisions, wantColl) {
		t.Errorf("collisions %q, want %q", collisions, wantColl)
	}
	slices.Sort(sanitized)
	slices.Sort(inv.IDs)
	if !equalStrings(sanitized, inv.IDs) {
		t.Errorf("sanitized ids %q, want %q", sanitized, inv.IDs)
	}
	var wantUp []string
	for _, u := range inv.Blobs.UploadedByRun {
		wantUp = append(wantUp, strings.Fields(u)[0])
	}
	slices.Sort(uploads)
	slices.Sort(wantUp)
	if !equalStrings(uploads, wantUp) {
		t.Errorf("uploads %q, want %q", uploads, wantUp)
	}
}
