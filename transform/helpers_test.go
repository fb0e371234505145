package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

// testNow is the fixed clock of the unit tests.
var testNow = time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)

// testOpts are the default options with the fixed clock.
func testOpts() Options { return Options{Now: testNow} }

// mkRow decodes an annotated-JSON entity of table, the way rows arrive.
func mkRow(t testing.TB, table, entity string) Row {
	t.Helper()
	row, err := DecodeEntity(table, []byte(entity))
	if err != nil {
		t.Fatalf("DecodeEntity(%s): %v", entity, err)
	}
	return row
}

// body returns the JSON of an outcome's doc without _migration.
func body(t testing.TB, o Outcome) string {
	t.Helper()
	if o.Doc == nil {
		return ""
	}
	d := o.Doc
	if n := len(d); n > 0 && d[n-1].Name == "_migration" {
		d = d[:n-1]
	}
	js, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// compact removes insignificant white space from a JSON text written
// readably in a test table.
func compact(t testing.TB, s string) string {
	t.Helper()
	if s == "" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad expected JSON %s: %v", s, err)
	}
	return b.String()
}

// warningsOf renders warnings as "reason: detail" lines.
func warningsOf(o Outcome) []string {
	var out []string
	for _, w := range o.Warnings {
		out = append(out, w.Reason+": "+w.Detail)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rowCase is one row through Transform and everything expected of it.
type rowCase struct {
	name    string
	table   string
	entity  string
	blobs   BlobFacts
	opts    *Options // nil: testOpts()
	disp    Disposition
	id      string
	scope   string
	doc     string // expected doc without _migration (readable JSON)
	warn    []string
	dead    string
	uploads []string // "path size"
}

func runRowCases(t *testing.T, cases []rowCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts()
			if tc.opts != nil {
				opts = *tc.opts
			}
			o := Transform(mkRow(t, tc.table, tc.entity), tc.blobs, opts)
			if o.Disposition != tc.disp {
				t.Fatalf("disposition %q (dead letter %q), want %q", o.Disposition, o.DeadLetter, tc.disp)
			}
			if o.DeadLetter != tc.dead {
				t.Errorf("dead letter\ngot  %q\nwant %q", o.DeadLetter, tc.dead)
			}
			if tc.id != "" && o.ID != tc.id {
				t.Errorf("id %q, want %q", o.ID, tc.id)
			}
			if tc.scope != "" && o.Scope != tc.scope {
				t.Errorf("scope %q, want %q", o.Scope, tc.scope)
			}
			if got, want := body(t, o), compact(t, tc.doc); got != want {
				t.Errorf("doc\ngot  %s\nwant %s", got, want)
			}
			if got := warningsOf(o); !equalStrings(got, tc.warn) {
				t.Errorf("warnings\ngot  %q\nwant %q", got, tc.warn)
			}
			var ups []string
			for _, u := range o.Uploads {
				ups = append(ups, u.Path+" "+itoa(len(u.Data)))
			}
			if !equalStrings(ups, tc.uploads) {
				t.Errorf("uploads %q, want %q", ups, tc.uploads)
			}
			if o.Disposition == DispositionDoc {
				checkDocInvariants(t, o)
			}
		})
	}
}

func itoa(n int) string {
	js, _ := json.Marshal(n)
	return string(js)
}

// checkDocInvariants checks what holds for every doc: id/type/scope first,
// _migration last with the row keys and a hash that Hash recomputes, also
// from the JSON bytes.
func checkDocInvariants(t *testing.T, o Outcome) {
	t.Helper()
	d := o.Doc
	if len(d) < 4 || d[0].Name != "id" || d[1].Name != "type" || d[2].Name != "scope" || d[len(d)-1].Name != "_migration" {
		t.Fatalf("doc layout: %s", o.DocJSON)
	}
	if d[0].Value != o.ID || d[2].Value != o.Scope {
		t.Errorf("doc id/scope %v/%v, outcome %q/%q", d[0].Value, d[2].Value, o.ID, o.Scope)
	}
	mig := d[len(d)-1].Value.(Doc)
	h, _ := mig.Get("hash")
	want, err := Hash(d)
	if err != nil || h != want {
		t.Errorf("_migration.hash %v, Hash(doc) %s (%v)", h, want, err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(o.DocJSON))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("DocJSON is not JSON: %v", err)
	}
	if got, _ := Hash(m); got != want {
		t.Errorf("hash of DocJSON read back %s, want %s", got, want)
	}
	js, _ := d.MarshalJSON()
	if !bytes.Equal(js, o.DocJSON) {
		t.Errorf("DocJSON differs from Doc")
	}
}

// sha16 is the first 16 hex digits of the SHA-256 of s.
func sha16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// sha256Hex is the hex SHA-256 of s.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
