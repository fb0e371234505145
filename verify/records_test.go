package verify

import (
	"testing"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TestRecordKeysAndDispositions: keys with and without zero bytes of
// their own, and every disposition (and one unknown), read back as they
// were written, followed by the fields after them; a key cut short
// fails the record.
func TestRecordKeysAndDispositions(t *testing.T) {
	for _, s := range []seenRow{
		{"Entities", "org-1", "execution:1_e1", transform.DispositionDoc},
		{"", "", "", transform.DispositionDroppedIndex},
		{"a\x00", "\x00", "b\x00\x00c\x00\x01", transform.DispositionKeptInTables},
		{"\x01", "x\x00y", "\xff\x00", transform.DispositionExpired},
		{"Config", "GLOBAL", "k", transform.DispositionDeadLetter},
		{"Config", "GLOBAL", "k", transform.Disposition("not one of transform's")},
	} {
		var w recWriter
		w.seen(s)
		w.seq(7)
		r := recReader{b: w.b}
		if got := r.seen(); got != s || r.seq() != 7 || r.err != nil || len(r.b) != 0 {
			t.Errorf("%q: read back %q (err %v, %d bytes left)", s, got, r.err, len(r.b))
		}
	}
	var w recWriter
	w.key("abc")
	r := recReader{b: w.b[:len(w.b)-1]}
	if got := r.key(); got != "" || r.err != errRecord {
		t.Errorf("a key cut short: %q, %v; want a failed record", got, r.err)
	}
}
