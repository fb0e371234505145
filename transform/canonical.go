package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of v:
// object properties sorted by their UTF-16 code units, no whitespace,
// numbers in the ECMAScript shortest round-trip form of their IEEE 754
// double value, strings with minimal escaping.
//
// v may be built of nil, bool, string, any Go integer type, float32,
// float64, json.Number, Doc, *JSON, []any and map[string]any — that is, a Doc
// produced by Transform, or any value encoding/json decodes (with or
// without UseNumber). It returns an error for NaN or ±Inf, a number that
// does not fit a double, a string that is not valid UTF-8, a Doc with two
// properties of the same name, or a value of any other type.
//
// v is written as JSON (the doc encoding) and that text is canonicalized
// by jsontext.Value.Canonicalize.
func Canonical(v any) ([]byte, error) {
	b, err := appendValue(make([]byte, 0, 512), v)
	if err != nil {
		return nil, err
	}
	return canonicalizeFrom(b, 0)
}

// Hash returns the provenance hash of a document (SPEC §10): the lower-case
// hex SHA-256 of the RFC 8785 canonical JSON of doc without its top-level
// properties _migration, ttl and the service's system properties _rid,
// _self, _etag, _ts, _attachments and _lsn (the change feed adds _lsn).
//
// doc is a Doc or a map[string]any. Because canonical JSON depends only on
// the values (every number is taken as a double, property order does not
// matter), a doc written as JSON and decoded again — numbers as float64 or
// json.Number, "5.0" read back as 5 — hashes the same as the Doc Transform
// produced. It returns an error when Canonical would, or when doc is neither
// a Doc nor a map.
func Hash(doc any) (string, error) {
	var b []byte
	var err error
	switch d := doc.(type) {
	case Doc:
		b, err = appendCanonicalDoc(make([]byte, 0, 1024), d, hashExcluded)
	case map[string]any:
		b, err = appendMap(make([]byte, 0, 1024), d, hashExcluded)
	default:
		return "", fmt.Errorf("hash: unsupported document type %T", doc)
	}
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// hashExcluded reports whether a top-level property is left out of Hash.
func hashExcluded(name string) bool {
	switch name {
	case "_migration", "ttl", "_rid", "_self", "_etag", "_ts", "_attachments", "_lsn":
		return true
	}
	return false
}

// appendCanonicalDoc appends the canonical JSON of d without the
// top-level properties for which skip (which may be nil) returns true.
func appendCanonicalDoc(b []byte, d Doc, skip func(string) bool) ([]byte, error) {
	b, _, err := appendCanonicalDocLen(b, d, skip)
	return b, err
}

// appendCanonicalDocLen is appendCanonicalDoc, and the length of the
// JSON of the members it keeps as appendObject writes them before they
// are canonicalized (docJSONLen).
func appendCanonicalDocLen(b []byte, d Doc, skip func(string) bool) (out []byte, kept int, err error) {
	// Members are written in the byte order of their names, which spares
	// Canonicalize most of its sorting: byte order is RFC 8785's UTF-16
	// order except where a character above U+FFFF meets one in
	// U+E000–U+FFFF, and Canonicalize sorts what is not in its order.
	var small [48]int
	order := small[:0]
	for i, f := range d {
		if skip == nil || !skip(f.Name) {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(d[x].Name, d[y].Name) })
	start := len(b)
	if b, err = appendObject(b, d, order); err != nil {
		return b, 0, err
	}
	kept = len(b) - start
	b, err = canonicalizeFrom(b, start)
	return b, kept, err
}

// docJSONLen returns len(appendDoc(nil, d)) without writing it whole,
// given kept, the length of the JSON that appendObject writes of the
// members of d that skip does not leave out (in any order): each member
// is written alone, whatever the others, so only the members left out
// are written, into scratch (returned, to reuse). It returns appendDoc's
// error for a member left out.
func docJSONLen(d Doc, kept int, skip func(string) bool, scratch []byte) (int, []byte, error) {
	// An object's JSON is its braces, its members and a comma between
	// each two.
	keptN, leftOut, sum := 0, 0, 0
	for _, f := range d {
		if !skip(f.Name) {
			keptN++
			continue
		}
		var err error
		if scratch, err = appendString(scratch[:0], f.Name); err != nil {
			return 0, scratch, err
		}
		if scratch, err = appendValue(append(scratch, ':'), f.Value); err != nil {
			return 0, scratch, err
		}
		sum += len(scratch)
		leftOut++
	}
	sum += kept - 2 - max(keptN-1, 0)
	return 2 + sum + max(keptN+leftOut-1, 0), scratch, nil
}

// canonicalizeFrom replaces the JSON text b[start:] by its RFC 8785 form.
// It returns an error for a name that occurs twice in an object or for
// invalid UTF-8; the doc encoding refuses every other value that has no
// canonical form (NaN, ±Inf, numbers beyond a double) before this.
func canonicalizeFrom(b []byte, start int) ([]byte, error) {
	v := jsontext.Value(b[start:])
	if err := v.Canonicalize(); err != nil {
		return b, err
	}
	return append(b[:start], v...), nil
}
