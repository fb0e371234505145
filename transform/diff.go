package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
)

// DecodeDoc decodes a doc's JSON with numbers as json.Number, the form
// DiffDocs compares. It returns an error when b is not valid JSON or not
// a JSON object ("doc is not a JSON object").
func DecodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("doc is not a JSON object")
	}
	return m, nil
}

// FieldDiff is one differing field of two docs. Path names it the way a
// reader writes it: inputData.user.name, tags[2], m["a.b"]. Expected and
// Actual are its values as JSON, nil when the field is absent from that
// doc (a null value is "null", not nil).
type FieldDiff struct {
	Path             string
	Expected, Actual json.RawMessage
}

// DiffDocs returns the differing fields of two docs decoded by DecodeDoc,
// top-level properties in name order, then depth first; objects are
// compared by property, arrays by index. Top-level properties for which
// ignore returns true are not compared (ignore may be nil). Numbers are
// equal when their double values are, as canonical JSON, the hash and
// Cosmos DB see them; other values only when of the same type and equal.
// Values under a top-level property that RedactDoc redacts (SPEC §1) are
// "***" on both sides; null stays null. It has no side effects.
func DiffDocs(expected, actual map[string]any, ignore func(name string) bool) []FieldDiff {
	return diffTop(expected, actual, ignore, nil)
}

// DiffMeaning is DiffDocs by meaning (SPEC §12, Normalize): a top-level
// field that is null on one side and absent on the other is no
// difference, nor are two values of one of table's timestamp fields that
// name the same instant; _migration is compared without its hash, its
// timestamp as an instant. The values listed are the docs' own. Two docs
// without differences have the same MeaningHash and MigrationMeaning.
func DiffMeaning(table string, expected, actual map[string]any, ignore func(name string) bool) []FieldDiff {
	stamps := defaultKinds.stampNames(table)
	em, eok := expected["_migration"].(map[string]any)
	am, aok := actual["_migration"].(map[string]any)
	if eok && aok {
		em, am = maps.Clone(em), maps.Clone(am)
		delete(em, "hash")
		delete(am, "hash")
		if sameInstant(em["timestamp"], am["timestamp"]) {
			am["timestamp"] = em["timestamp"]
		}
		expected, actual = maps.Clone(expected), maps.Clone(actual)
		expected["_migration"], actual["_migration"] = em, am
	}
	return diffTop(expected, actual, ignore, func(name string, e, a any) bool {
		return (e == nil && a == nil) || (stamps[name] && sameInstant(e, a))
	})
}

// sameInstant reports whether e and a are strings that parse as
// timestamps naming the same instant.
func sameInstant(e, a any) bool {
	es, eok := e.(string)
	as, aok := a.(string)
	if !eok || !aok {
		return false
	}
	et, eok := ParseTimestamp(es)
	at, aok := ParseTimestamp(as)
	return eok && aok && et.Equal(at)
}

// diffTop is DiffDocs; when same is not nil, a top-level property for
// which same(name, expected value, actual value) returns true is no
// difference (an absent value is nil, as null is).
func diffTop(expected, actual map[string]any, ignore func(name string) bool, same func(name string, e, a any) bool) []FieldDiff {
	var out []FieldDiff
	for _, k := range unionKeys(expected, actual) {
		if ignore != nil && ignore(k) {
			continue
		}
		e, eok := expected[k]
		a, aok := actual[k]
		if same != nil && same(k, e, a) {
			continue
		}
		n := len(out)
		diffValue(&out, fieldPath("", k), e, eok, a, aok)
		for i := n; i < len(out); i++ {
			out[i].Expected = redactTop(k, out[i].Expected)
			out[i].Actual = redactTop(k, out[i].Actual)
		}
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func diffValue(out *[]FieldDiff, path string, e any, eok bool, a any, aok bool) {
	switch {
	case !eok && !aok:
		return
	case !eok || !aok:
		d := FieldDiff{Path: path}
		if eok {
			d.Expected = valueJSON(e)
		}
		if aok {
			d.Actual = valueJSON(a)
		}
		*out = append(*out, d)
		return
	}
	em, eIsMap := e.(map[string]any)
	am, aIsMap := a.(map[string]any)
	if eIsMap && aIsMap {
		for _, k := range unionKeys(em, am) {
			ev, eok := em[k]
			av, aok := am[k]
			diffValue(out, fieldPath(path, k), ev, eok, av, aok)
		}
		return
	}
	es, eIsArr := e.([]any)
	as, aIsArr := a.([]any)
	if eIsArr && aIsArr {
		for i := range max(len(es), len(as)) {
			var ev, av any
			if i < len(es) {
				ev = es[i]
			}
			if i < len(as) {
				av = as[i]
			}
			diffValue(out, path+"["+strconv.Itoa(i)+"]", ev, i < len(es), av, i < len(as))
		}
		return
	}
	if !sameScalar(e, a) {
		*out = append(*out, FieldDiff{Path: path, Expected: valueJSON(e), Actual: valueJSON(a)})
	}
}

// sameScalar compares two JSON values that are not both objects or both
// arrays. Numbers are equal when their double values are.
func sameScalar(e, a any) bool {
	en, eIsNum := e.(json.Number)
	an, aIsNum := a.(json.Number)
	if eIsNum && aIsNum {
		ef, err1 := en.Float64()
		af, err2 := an.Float64()
		if err1 != nil || err2 != nil {
			return en == an
		}
		return ef == af
	}
	switch ev := e.(type) {
	case nil:
		return a == nil
	case string:
		av, ok := a.(string)
		return ok && ev == av
	case bool:
		av, ok := a.(bool)
		return ok && ev == av
	}
	return false
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// fieldPath appends a property name: ".name" when it is an identifier,
// otherwise ["name"] with the name quoted as JSON.
func fieldPath(parent, name string) string {
	if identifier.MatchString(name) {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	q, _ := json.Marshal(name)
	return parent + "[" + string(q) + "]"
}

// valueJSON marshals a decoded value. Values decoded by encoding/json
// always marshal; anything else that does not is shown as its quoted
// fmt.Sprint.
func valueJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}

// redactTop redacts a value under the top-level property name when SPEC
// §1 says that property's values never reach output; null, booleans and
// numbers stay (RedactDoc: no secret).
func redactTop(name string, v json.RawMessage) json.RawMessage {
	if v == nil || (v[0] != '"' && v[0] != '{' && v[0] != '[') {
		return v
	}
	probe := RedactDoc(map[string]any{name: "x"}).(map[string]any)
	if probe[name] == Redacted {
		return json.RawMessage(strconv.Quote(Redacted))
	}
	return v
}
