package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// Judging docs by meaning (SPEC §12). After a cutover the application
// writes docs in its own forms (a timestamp from JavaScript's
// toISOString(), an optional field as null), and after reverse the row is
// made from such a doc; the two sides are in sync when they mean the same.
// Two docs mean the same when they are equal after Normalize: the
// timestamp fields of the table (the properties the table lists as
// timestamps, SPEC §6–§9, under their doc names) written in
// TimestampLayout, and null top-level fields left out. Numbers are equal
// by value in canonical JSON already. _migration is provenance: its hash
// records the row version a doc was first made from and is not compared,
// its timestamp is compared as an instant (MigrationMeaning).

// stampNames returns the doc names of table's timestamp properties.
func (t *kindTable) stampNames(table string) map[string]bool {
	return t.docStamps[table]
}

// Normalize returns doc as it is judged by meaning: a copy with table's
// timestamp fields that parse (ParseTimestamp) written in
// TimestampLayout and its null top-level fields left out; changed reports
// whether the copy differs from doc (when it does not, doc itself is
// returned). doc is a Doc or a map[string]any; anything else is returned
// as it is. Nested values are not touched: they are the application's
// own data (inputData, a result). It does not change doc.
func Normalize(table string, doc any) (normalized any, changed bool) {
	stamps := defaultKinds.stampNames(table)
	switch d := doc.(type) {
	case Doc:
		if !normalizes(stamps, d) {
			return d, false
		}
		out := make(Doc, 0, len(d))
		for _, f := range d {
			switch {
			case f.Value == nil:
				continue
			case normalizedStamp(stamps, f.Name, f.Value) != nil:
				f.Value = *normalizedStamp(stamps, f.Name, f.Value)
			}
			out = append(out, f)
		}
		return out, true
	case map[string]any:
		changed := false
		for k, v := range d {
			if v == nil || normalizedStamp(stamps, k, v) != nil {
				changed = true
				break
			}
		}
		if !changed {
			return d, false
		}
		out := make(map[string]any, len(d))
		for k, v := range d {
			switch {
			case v == nil:
				continue
			case normalizedStamp(stamps, k, v) != nil:
				v = *normalizedStamp(stamps, k, v)
			}
			out[k] = v
		}
		return out, true
	}
	return doc, false
}

// normalizes reports whether Normalize changes d, a doc of the table
// whose timestamp fields are stamps.
func normalizes(stamps map[string]bool, d Doc) bool {
	return slices.ContainsFunc(d, func(f Field) bool { return f.Value == nil || normalizedStamp(stamps, f.Name, f.Value) != nil })
}

// normalizedStamp returns the TimestampLayout form of v when name is one
// of stamps and v a string that parses as a timestamp in another form;
// nil when v stays as it is.
func normalizedStamp(stamps map[string]bool, name string, v any) *string {
	s, ok := v.(string)
	if !ok || !stamps[name] {
		return nil
	}
	t, ok := ParseTimestamp(s)
	if !ok {
		return nil
	}
	if f := FormatTimestamp(t); f != s {
		return &f
	}
	return nil
}

// inLayout reports whether s is a timestamp that Normalize leaves as it
// is because FormatTimestamp writes it so (normalizedStamp is nil for
// it): one that parses and is written back the same.
func inLayout(s []byte) bool {
	if len(s) != len(TimestampLayout) {
		return false
	}
	t, ok := ParseTimestamp(string(s))
	var buf [len(TimestampLayout)]byte
	return ok && bytes.Equal(appendTimestamp(buf[:0], t), s)
}

// MeaningHash returns the hash of doc by meaning: Hash of Normalize(table,
// doc). Two docs of table that mean the same (SPEC §12) have the same
// MeaningHash; a doc whose timestamps are in TimestampLayout and that has
// no null field has its Hash as MeaningHash. Errors are Hash's.
func MeaningHash(table string, doc any) (string, error) {
	n, _ := Normalize(table, doc)
	return Hash(n)
}

// meaningOfCanonical returns MeaningHash(table, doc), given canon, the
// canonical JSON of doc that Hash hashes, and hash, its Hash: doc's own
// hash when Normalize leaves it as it is, else the hash of canon without
// its top-level nulls and with its timestamps in TimestampLayout — the
// canonical JSON of the normalized doc, since leaving members out and
// rewriting a string keep the others in their canonical order. It
// returns "" when MeaningHash fails (not reached: canon is doc's).
func meaningOfCanonical(table string, doc Doc, canon []byte, hash string) string {
	stamps := defaultKinds.stampNames(table)
	if !normalizes(stamps, doc) {
		return hash
	}
	bp := canonBufs.Get().(*[]byte)
	out := append((*bp)[:0], '{')
	defer func() {
		if cap(out) <= maxPooledCanon {
			*bp = out
			canonBufs.Put(bp)
		}
	}()
	// canon is canonical JSON, compact and valid: its members are found
	// by their strings and brackets alone.
	for i := 1; i < len(canon) && canon[i] == '"'; {
		nameEnd := stringEnd(canon, i)
		end := valueEnd(canon, nameEnd+2)
		quoted, value := canon[i:nameEnd+1], canon[nameEnd+2:end]
		i = end + 1 // past the ',' or the final '}'
		name := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var err error
			if name, err = jsontext.AppendUnquote(nil, quoted); err != nil {
				return meaningHashOr(table, doc) // not reached
			}
		}
		keep, value := meaningMember(stamps, name, value)
		if !keep {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, quoted...), ':'), value...)
	}
	out = append(out, '}')
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}

// valueEnd returns the index just past the value that starts at b[i], in
// compact valid JSON: the ',', '}' or ']' after it, or len(b).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// meaningHashOr is MeaningHash(table, doc), or "" when it fails.
func meaningHashOr(table string, doc Doc) string {
	h, err := MeaningHash(table, doc)
	if err != nil {
		return ""
	}
	return h
}

// MigrationMeaning returns _migration (mig, a Doc or a map[string]any) as
// it is judged: the canonical JSON of its row keys and its timestamp, the
// timestamp as an instant in TimestampLayout; the hash left out, since it
// records what the doc was made from, not what it holds. A mig of another
// type gives nil.
func MigrationMeaning(mig any) []byte {
	get := func(name string) any { return nil }
	switch m := mig.(type) {
	case Doc:
		get = func(name string) any { v, _ := m.Get(name); return v }
	case map[string]any:
		get = func(name string) any { return m[name] }
	default:
		return nil
	}
	if b, ok := appendMigrationMeaning(make([]byte, 0, 256), get); ok {
		return b
	}
	return migrationMeaningMap(get)
}

// migrationMeaningMap is MigrationMeaning of the members get returns,
// the long way: a map encoded as canonical JSON.
func migrationMeaningMap(get func(string) any) []byte {
	keys := map[string]any{}
	for _, name := range []string{"table", "partitionKey", "rowKey", "timestamp"} {
		if v := get(name); v != nil {
			keys[name] = v
		}
	}
	if p := normalizedStamp(map[string]bool{"timestamp": true}, "timestamp", keys["timestamp"]); p != nil {
		keys["timestamp"] = *p
	}
	b, err := Canonical(keys)
	if err != nil {
		// A value canonical JSON refuses (invalid UTF-8) is compared as
		// encoding/json writes it.
		b, _ = json.Marshal(keys)
	}
	return b
}

// appendMigrationMeaning appends MigrationMeaning's canonical JSON when
// every member it keeps (get) is a string or absent, written directly as
// canonical JSON writes it (the names in their order, strings as
// AppendQuote quotes them); ok is false for anything else, which
// MigrationMeaning encodes the long way.
func appendMigrationMeaning(b []byte, get func(string) any) (out []byte, ok bool) {
	b = append(b, '{')
	for _, name := range [...]string{"partitionKey", "rowKey", "table", "timestamp"} {
		v := get(name)
		if v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return nil, false
		}
		if name == "timestamp" {
			if t, ok := ParseTimestamp(s); ok {
				s = FormatTimestamp(t)
			}
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		var err error
		if b, err = jsontext.AppendQuote(append(append(append(b, '"'), name...), '"', ':'), s); err != nil {
			return nil, false
		}
	}
	return append(b, '}'), true
}
