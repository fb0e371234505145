package migrate

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"

	"github.com/bifrost/bifrost-migrate/transform"
)

// diffIgnored are the top-level properties a conflict does not list: the
// system properties, ttl (recomputed at every write) and _migration
// (provenance, not content).
var diffIgnored = map[string]bool{
	"_rid": true, "_self": true, "_etag": true, "_ts": true, "_attachments": true, "_lsn": true,
	"ttl": true, "_migration": true,
}

// diffDocs returns the differing fields of the row's doc (tables) and the
// doc in Cosmos DB (cosmos), both decoded with json.Number, in path
// order. Numbers are equal when their double values are (as canonical
// JSON and the hash see them). Values of redacted properties are "***".
func diffDocs(tables, cosmos map[string]any) []FieldDiff {
	var out []FieldDiff
	for _, k := range diffKeys(tables, cosmos) {
		if diffIgnored[k] {
			continue
		}
		t, tok := tables[k]
		c, cok := cosmos[k]
		n := len(out)
		diffValue(&out, diffPath("", k), t, tok, c, cok)
		for i := n; i < len(out); i++ {
			out[i].Tables = diffRedact(k, out[i].Tables)
			out[i].Cosmos = diffRedact(k, out[i].Cosmos)
		}
	}
	return out
}

func diffKeys(a, b map[string]any) []string {
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

func diffValue(out *[]FieldDiff, path string, t any, tok bool, c any, cok bool) {
	switch {
	case !tok && !cok:
		return
	case !tok || !cok:
		d := FieldDiff{Path: path}
		if tok {
			d.Tables = diffJSON(t)
		}
		if cok {
			d.Cosmos = diffJSON(c)
		}
		*out = append(*out, d)
		return
	}
	tm, tIsMap := t.(map[string]any)
	cm, cIsMap := c.(map[string]any)
	if tIsMap && cIsMap {
		for _, k := range diffKeys(tm, cm) {
			tv, tok := tm[k]
			cv, cok := cm[k]
			diffValue(out, diffPath(path, k), tv, tok, cv, cok)
		}
		return
	}
	ta, tIsArr := t.([]any)
	ca, cIsArr := c.([]any)
	if tIsArr && cIsArr {
		for i := range max(len(ta), len(ca)) {
			var tv, cv any
			if i < len(ta) {
				tv = ta[i]
			}
			if i < len(ca) {
				cv = ca[i]
			}
			diffValue(out, path+"["+strconv.Itoa(i)+"]", tv, i < len(ta), cv, i < len(ca))
		}
		return
	}
	if !diffSameScalar(t, c) {
		*out = append(*out, FieldDiff{Path: path, Tables: diffJSON(t), Cosmos: diffJSON(c)})
	}
}

// diffSameScalar compares two JSON values that are not both objects or both
// arrays.
func diffSameScalar(a, b any) bool {
	an, aIsNum := a.(json.Number)
	bn, bIsNum := b.(json.Number)
	if aIsNum && bIsNum {
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		if err1 != nil || err2 != nil {
			return an == bn
		}
		return af == bf
	}
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	}
	return false
}

var diffIdentifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// diffPath appends a property name: ".name" when it is an diffIdentifier,
// otherwise ["name"] with the name quoted as JSON.
func diffPath(parent, name string) string {
	if diffIdentifier.MatchString(name) {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	q, _ := json.Marshal(name)
	return parent + "[" + string(q) + "]"
}

// diffJSON marshals a decoded value (which cannot fail for values
// encoding/json decoded).
func diffJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(strconv.Quote("?"))
	}
	return b
}

// diffRedact redacts a value under a top-level property whose values never
// reach output (SPEC §1); null stays null.
func diffRedact(name string, v json.RawMessage) json.RawMessage {
	if v == nil || string(v) == "null" {
		return v
	}
	probe := transform.RedactDoc(map[string]any{name: true}).(map[string]any)
	if probe[name] == transform.Redacted {
		return json.RawMessage(strconv.Quote(transform.Redacted))
	}
	return v
}
