package verify

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRecordBase is the decision of which full verify a --since builds
// on: only the last full one, in sync, of the same target, started at or
// before --since, with its docs in the directory.
func TestRecordBase(t *testing.T) {
	start := time.Date(2026, 11, 27, 4, 10, 12, 345, time.UTC)
	full := RecordEntry{Started: start.Format(time.RFC3339Nano), OK: true, Target: "t", Docs: DocsFile, Verdict: "verify: OK"}
	rec := func(change func(*RecordEntry)) *Record {
		e := full
		change(&e)
		r := &Record{}
		r.Add(e)
		return r
	}
	same := func(*RecordEntry) {}
	yes := func(string) bool { return true }
	cases := []struct {
		name   string
		rec    *Record
		since  time.Time
		target string
		exists func(string) bool
		base   bool
		why    string
	}{
		{"no record", nil, start, "t", yes, false, "no full verify is recorded in dir"},
		{"at its start", rec(same), start, "t", yes, true, "building on the full verify of 2026-11-27T04:10:12.000000345Z (in sync)"},
		{"before its start", rec(same), start.Add(-time.Hour), "t", yes, true, "building on"},
		{"after its start", rec(same), start.Add(time.Nanosecond), "t", yes, false,
			"--since 2026-11-27T04:10:12.000000346Z is after the start of the last full verify (2026-11-27T04:10:12.000000345Z)"},
		{"not in sync", rec(func(e *RecordEntry) { e.OK, e.Verdict = false, "verify: 1 missing, 0 different, 0 orphan doc(s)" }), start, "t", yes, false,
			"was not in sync (verify: 1 missing, 0 different, 0 orphan doc(s))"},
		{"another target", rec(same), start, "u", yes, false, "judged another migration or other options"},
		{"its docs gone", rec(same), start, "t", func(string) bool { return false }, false, "the docs the last full verify"},
		{"no docs recorded", rec(func(e *RecordEntry) { e.Docs = "" }), start, "t", yes, false, "the docs the last full verify"},
		{"a partial check last", func() *Record {
			r := rec(same)
			r.Add(RecordEntry{Partial: true, Started: start.Add(time.Hour).Format(time.RFC3339Nano)})
			return r
		}(),
			start, "t", yes, true, "building on the full verify of 2026-11-27T04:10:12.000000345Z"},
	}
	for _, c := range cases {
		b, why := c.rec.Base("dir", c.since, c.target, c.exists)
		if (b != nil) != c.base || !strings.Contains(why, c.why) {
			t.Errorf("%s: base %v, %q; want base %v and %q", c.name, b, why, c.base, c.why)
			continue
		}
		if b != nil && (!b.Started.Equal(start) || b.DocsFile != filepath.Join("dir", DocsFile)) {
			t.Errorf("%s: base %+v", c.name, b)
		}
	}
}

// A record is saved atomically and read back; a --since or a partial
// check replaces last alone; a file that is not a record is an error
// naming it, and none is no record.
func TestRecordSaveLoad(t *testing.T) {
	dir := t.TempDir()
	if r, err := LoadRecord(dir); r != nil || err != nil {
		t.Fatalf("no file: %v %v", r, err)
	}
	var r Record
	r.Add(RecordEntry{Started: "a", OK: true})
	r.Add(RecordEntry{Started: "b", Scope: Scope{Since: time.Unix(1, 0)}})
	if err := r.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := LoadRecord(dir)
	if err != nil || !reflect.DeepEqual(got.LastFull, &RecordEntry{Started: "a", OK: true}) || got.Last.Started != "b" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, RecordFile+".tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
	if err := os.WriteFile(filepath.Join(dir, RecordFile), []byte(`{"version":9}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRecord(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, RecordFile)+" is not a verify record") {
		t.Errorf("a record of another version: %v", err)
	}
}
