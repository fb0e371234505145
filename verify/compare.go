package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"github.com/bifrost/bifrost-migrate/transform"
)

// systemProps are the Cosmos DB system properties, never compared; ttl is
// compared by its own rule (checkTTL), not by value.
var systemProps = map[string]bool{"_rid": true, "_self": true, "_etag": true, "_ts": true, "_attachments": true, "ttl": true}

// decodeDoc decodes a doc's JSON with numbers as json.Number.
func decodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("doc is not a JSON object")
	}
	return m, nil
}

// fieldDiff is one differing field before it is tied to a doc.
type fieldDiff struct {
	path             string
	problem          string
	expected, actual json.RawMessage
}

// compareDocs returns the differing fields of two decoded docs (values
// from encoding/json with UseNumber), top-level properties in name order,
// ignoring the system properties and ttl. Numbers are compared by their
// value as doubles, as canonical JSON and Cosmos DB see them. Values of
// redacted properties (SPEC §1) are replaced by "***".
func compareDocs(expected, actual map[string]any) []fieldDiff {
	var out []fieldDiff
	for _, k := range unionKeys(expected, actual) {
		if systemProps[k] {
			continue
		}
		e, eok := expected[k]
		a, aok := actual[k]
		var sub []fieldDiff
		compareValue(&sub, fieldPath("", k), e, eok, a, aok)
		for i := range sub {
			sub[i].expected = redactTop(k, sub[i].expected)
			sub[i].actual = redactTop(k, sub[i].actual)
		}
		out = append(out, sub...)
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
	sort.Strings(keys)
	return keys
}

func compareValue(out *[]fieldDiff, path string, e any, eok bool, a any, aok bool) {
	switch {
	case !eok && !aok:
		return
	case !aok:
		*out = append(*out, fieldDiff{path, ProblemMissing, rawJSON(e), nil})
		return
	case !eok:
		*out = append(*out, fieldDiff{path, ProblemUnexpected, nil, rawJSON(a)})
		return
	}
	em, eIsMap := e.(map[string]any)
	am, aIsMap := a.(map[string]any)
	if eIsMap && aIsMap {
		for _, k := range unionKeys(em, am) {
			ev, eok := em[k]
			av, aok := am[k]
			compareValue(out, fieldPath(path, k), ev, eok, av, aok)
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
			compareValue(out, path+"["+strconv.Itoa(i)+"]", ev, i < len(es), av, i < len(as))
		}
		return
	}
	if !sameScalar(e, a) {
		*out = append(*out, fieldDiff{path, ProblemValue, rawJSON(e), rawJSON(a)})
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

// rawJSON marshals a decoded value; it cannot fail for values decoded by
// encoding/json.
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}

// redactTop redacts a value under the top-level property name when SPEC
// §1 says that property's values never reach output (null stays null).
func redactTop(name string, v json.RawMessage) json.RawMessage {
	if v == nil || string(v) == "null" {
		return v
	}
	probe := transform.RedactDoc(map[string]any{name: true}).(map[string]any)
	if probe[name] == transform.Redacted {
		return json.RawMessage(strconv.Quote(transform.Redacted))
	}
	return v
}
