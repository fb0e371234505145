package transform

import (
	"slices"
	"strings"
	"testing"
)

// withField returns a kind table like defaultKinds in which kind k has
// one more field, f, right after its field named after: the one edit that
// adding a property to a kind takes.
func withField(t *testing.T, k *kindSpec, f field, after string) *kindTable {
	t.Helper()
	i := slices.IndexFunc(k.fields, func(g field) bool { return g.name == after })
	if i < 0 {
		t.Fatalf("kind %s has no field %s", k.docType, after)
	}
	added := *k
	added.fields = slices.Insert(slices.Clone(k.fields), i+1, f)
	kinds := slices.Clone(allKinds)
	kinds[slices.Index(kinds, k)] = &added
	return newKindTable(kinds, allIndexes)
}

// jsonValue is the doc value of a JSON text, as a doc read back from
// Cosmos DB holds it.
func jsonValue(t *testing.T, text string) any {
	t.Helper()
	d, err := DecodeDocOrdered([]byte(`{"v":` + text + `}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := d.Get("v")
	return v
}

// fieldJSON is doc field name of d as JSON text ("" when absent).
func fieldJSON(t *testing.T, d Doc, name string) string {
	t.Helper()
	v, ok := d.Get(name)
	if !ok {
		return ""
	}
	js, err := Doc{{name, v}}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(js), `{"`+name+`":`), "}")
}

// TestKindTableAddProperty: a property added to one kind in a test-only
// kind table, and nowhere else, is carried by both directions, with its
// source name, its mapping (Int64, timestamp, JSON) and its place. run
// calls Transform and reverse calls ReverseDoc, which are transformWith
// and reverseDocWith on defaultKinds; here they run on the test table.
// Each case also runs the default table on the same row and doc, to show
// that what the test table gives comes from the added field.
func TestKindTableAddProperty(t *testing.T) {
	opts := Options{Now: testNow, ExecutionTTL: TTLFull}
	cases := []struct {
		name  string
		kind  *kindSpec
		add   field
		after string
		table string
		// row is a row of the kind with the new property.
		row string
		// doc is the field's value in Transform's doc, as JSON; dflt the
		// doc field and value the default table gives the property (an
		// unlisted one).
		doc, dfltName, dflt string
		// changed is a new value of the field (JSON); withRow the property
		// ReverseDoc writes for it with the row existing, created without
		// (a doc the application created), dfltCreated with the default
		// table (which names the property by the field, in PascalCase).
		changed                       string
		withRow, created, dfltCreated Value
		dfltCreatedName               string
		dfltWarnings                  []string
	}{
		{
			name: "user Int64 with its own source name", kind: kindUser, after: "email", table: TableEntities,
			add: propFrom("costCentre", "CostCentreCode"),
			row: strings.Replace(benchUserRow, `"DisplayName"`,
				`"CostCentreCode@odata.type":"Edm.Int64","CostCentreCode":"4200000000","DisplayName"`, 1),
			doc: "4200000000", dfltName: "costCentreCode", dflt: "4200000000",
			changed: "4200000001",
			withRow: Value{Type: EdmInt64, Int: 4200000001}, created: Value{Type: EdmInt64, Int: 4200000001},
			dfltCreatedName: "CostCentre", dfltCreated: Value{Type: EdmInt64, Int: 4200000001},
		},
		{
			name: "oauth timestamp", kind: kindOAuth, after: "updatedBy", table: TableConfig,
			add: stamp("rotatedAt"),
			row: strings.Replace(benchOAuthRow, `"Description"`, `"RotatedAt":"2026-11-21T14:05:00.5+02:00","Description"`, 1),
			// A timestamp of the table: re-formatted in UTC; unlisted, the
			// string stays as it is.
			doc: `"2026-11-21T12:05:00.5000000Z"`, dfltName: "rotatedAt", dflt: `"2026-11-21T14:05:00.5+02:00"`,
			changed: `"2026-11-22T08:00:00.0000000Z"`,
			// Back as the application writes timestamps.
			withRow: String("2026-11-22T08:00:00"), created: String("2026-11-22T08:00:00"),
			dfltCreatedName: "RotatedAt", dfltCreated: String("2026-11-22T08:00:00.0000000Z"),
		},
		{
			name: "form JSON", kind: kindForm, after: "formSchema", table: TableEntities,
			add: jsonProp("layout"),
			row: `{"PartitionKey":"GLOBAL","RowKey":"form:d4c3b2a1-9f8e-4d7c-8b6a-5f4e3d2c1b0a","Name":"New user onboarding",` +
				`"FormSchema":"{\"fields\": []}","Layout":"{\"columns\": [1, 2], \"dense\": true}","IsActive":true,` +
				`"CreatedAt":"2025-01-10T10:00:00"}`,
			doc: `{"columns":[1,2],"dense":true}`, dfltName: "layout", dflt: `"{\"columns\": [1, 2], \"dense\": true}"`,
			changed: `{"columns":[3],"title":"Zoë"}`,
			// json.dumps text, as the application writes a JSON field.
			withRow: String(`{"columns": [3], "title": "Zo\u00eb"}`), created: String(`{"columns": [3], "title": "Zo\u00eb"}`),
			// Unlisted, an object is written as JSON text too, with a warning.
			dfltCreatedName: "Layout", dfltCreated: String(`{"columns": [3], "title": "Zo\u00eb"}`),
			dfltWarnings: []string{ReasonJSONAsText + ": Layout"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kt := withField(t, c.kind, c.add, c.after)
			row := mkRow(t, c.table, c.row)

			// Forward: the field, in its place; null when the row lacks
			// the property.
			o := transformWith(kt, row, BlobFacts{}, opts, extrasNone)
			if o.Disposition != DispositionDoc || len(o.Warnings) != 0 {
				t.Fatalf("forward: %s %s %v", o.Disposition, o.DeadLetter, o.Warnings)
			}
			if got := fieldJSON(t, o.Doc, c.add.name); got != c.doc {
				t.Errorf("forward: %s is %s, want %s", c.add.name, got, c.doc)
			}
			if i := slices.IndexFunc(o.Doc, func(f Field) bool { return f.Name == c.add.name }); i < 1 || o.Doc[i-1].Name != c.after {
				t.Errorf("forward: %s is not right after %s: %v", c.add.name, c.after, docNames(o.Doc))
			}
			if o.Doc.Has(c.dfltName) && c.dfltName != c.add.name {
				t.Errorf("forward: the property is also copied as %s", c.dfltName)
			}
			without := row
			without.Props = propsWithout(row.Props, c.add.src)
			if got := fieldJSON(t, transformWith(kt, without, BlobFacts{}, opts, extrasNone).Doc, c.add.name); got != "null" {
				t.Errorf("forward without the property: %s is %q, want null", c.add.name, got)
			}
			dflt := Transform(row, BlobFacts{}, opts)
			if got := fieldJSON(t, dflt.Doc, c.dfltName); got != c.dflt {
				t.Errorf("forward, default table: %s is %s, want %s", c.dfltName, got, c.dflt)
			}
			if names := docNames(dflt.Doc); names[len(names)-2] != c.dfltName {
				t.Errorf("forward, default table: %s is not the last (only unlisted) property: %v", c.dfltName, names)
			}

			doc, err := DecodeDocOrdered(o.DocJSON)
			if err != nil {
				t.Fatal(err)
			}
			// Reverse of the unchanged doc with its row: the row exactly,
			// the property's Edm type and value included.
			existing := row
			ro, err := reverseDocWith(kt, doc, &existing, opts)
			if err != nil || ro.DeadLetter != nil {
				t.Fatalf("reverse: %v %+v", err, ro.DeadLetter)
			}
			if d := DiffRows(ro.Row, row); d != nil || len(ro.Warnings) != 0 {
				t.Errorf("reverse unchanged: differs in %v, warnings %v", d, ro.Warnings)
			}

			// Reverse of a changed value, with the row and without it.
			changed := setField(doc, c.add.name, jsonValue(t, c.changed))
			ro, err = reverseDocWith(kt, changed, &existing, opts)
			if err != nil || ro.DeadLetter != nil || len(ro.Warnings) != 0 {
				t.Fatalf("reverse changed: %v %+v %v", err, ro.DeadLetter, ro.Warnings)
			}
			checkProp(t, "reverse changed", ro.Row, c.add.src, c.withRow)
			if d := DiffRows(ro.Row, row); !slices.Equal(d, []string{c.add.src}) {
				t.Errorf("reverse changed: differs in %v, want only %s", d, c.add.src)
			}
			created := withoutMigration(changed)
			ro, err = reverseDocWith(kt, created, nil, opts)
			if err != nil || ro.DeadLetter != nil || len(ro.Warnings) != 0 {
				t.Fatalf("reverse created: %v %+v %v", err, ro.DeadLetter, ro.Warnings)
			}
			if ro.Row.PartitionKey != row.PartitionKey || ro.Row.RowKey != row.RowKey {
				t.Errorf("reverse created: keys %q %q", ro.Row.PartitionKey, ro.Row.RowKey)
			}
			checkProp(t, "reverse created", ro.Row, c.add.src, c.created)
			if _, ok := ro.Row.Props[c.dfltCreatedName]; ok && c.dfltCreatedName != c.add.src {
				t.Errorf("reverse created: also wrote %s", c.dfltCreatedName)
			}
			dfltRo, err := ReverseDoc(created, nil, opts)
			if err != nil || dfltRo.DeadLetter != nil {
				t.Fatalf("reverse created, default table: %v %+v", err, dfltRo.DeadLetter)
			}
			checkProp(t, "reverse created, default table", dfltRo.Row, c.dfltCreatedName, c.dfltCreated)
			var reasons []string
			for _, w := range dfltRo.Warnings {
				reasons = append(reasons, w.Reason+": "+w.Detail)
			}
			if !slices.Equal(reasons, c.dfltWarnings) {
				t.Errorf("reverse created, default table: warnings %q, want %q", reasons, c.dfltWarnings)
			}
		})
	}
}

func docNames(d Doc) []string {
	var names []string
	for _, f := range d {
		names = append(names, f.Name)
	}
	return names
}

// propsWithout returns props without the property named drop.
func propsWithout(props map[string]Value, drop string) map[string]Value {
	out := make(map[string]Value, len(props))
	for n, v := range props {
		if n != drop {
			out[n] = v
		}
	}
	return out
}

// setField returns a copy of d with field name set to v.
func setField(d Doc, name string, v any) Doc {
	out := slices.Clone(d)
	for i := range out {
		if out[i].Name == name {
			out[i].Value = v
		}
	}
	return out
}

func checkProp(t *testing.T, what string, row Row, name string, want Value) {
	t.Helper()
	got, ok := row.Props[name]
	if !ok || !sameValue(got, want) || got.Type != want.Type {
		t.Errorf("%s: %s is %+v (present %t), want %+v", what, name, got, ok, want)
	}
}

// TestKindTableTimestamps: each table's timestamps, which the kind table
// derives from its kinds' fields, are the SPEC's lists (§6 for Config,
// §7 and §8 for Entities; none in Relationships).
func TestKindTableTimestamps(t *testing.T) {
	want := map[string][]string{
		TableConfig: {"UpdatedAt", "CreatedAt", "ExpiresAt", "LastUsedAt", "RevokedAt", "NextRunAt", "LastRunAt",
			"StartTime", "EndTime", "LastRefreshAt", "LastTestAt"},
		TableEntities: {"CreatedAt", "UpdatedAt", "LastLogin", "LastEntraIdSync", "StartedAt", "CompletedAt"},
	}
	for _, table := range Tables() {
		var got []string
		for src := range defaultKinds.stamps[table] {
			got = append(got, src)
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want[table]))
		if !slices.Equal(got, w) {
			t.Errorf("%s timestamps %v, want %v", table, got, w)
		}
	}
}

// TestKindTableConsistent checks the kind table for slips one edit could
// make: a doc field or source property listed twice in a kind, a source
// property that is a timestamp in one kind of a table but not in another,
// a rule without what it needs, two kinds of a table matching one RowKey.
func TestKindTableConsistent(t *testing.T) {
	stampOf := map[string]map[string]bool{} // table → src → stamp
	for _, k := range allKinds {
		names, srcs := map[string]bool{}, map[string]bool{}
		for _, f := range k.fields {
			fieldNames := []string{f.name}
			if f.rule == ruleGroup {
				fieldNames = groupFields[f.group]
			}
			for _, n := range fieldNames {
				if n == "" || names[n] || reservedName(n) {
					t.Errorf("%s %s: doc field %q empty, listed twice or reserved", k.table, k.prefix, n)
				}
				names[n] = true
			}
			if f.src != "" {
				if srcs[f.src] {
					t.Errorf("%s %s: property %s listed twice", k.table, k.prefix, f.src)
				}
				srcs[f.src] = true
				if s, seen := stampOf[k.table][f.src]; seen && s != f.stamp {
					t.Errorf("%s: %s is a timestamp in one kind and not in another", k.table, f.src)
				}
				if stampOf[k.table] == nil {
					stampOf[k.table] = map[string]bool{}
				}
				stampOf[k.table][f.src] = f.stamp
			}
			var ok bool
			switch f.rule {
			case ruleFromKey:
				ok = f.src == ""
			case ruleDerived: // src optional: a property the field stands for
				ok = f.derive != nil
			case ruleGroup:
				ok = f.src == "" && f.group != 0
			default:
				ok = f.src != ""
			}
			if !ok || (f.rule == ruleDerived) != (f.derive != nil) || (f.rule == ruleGroup) != (f.group != 0) {
				t.Errorf("%s %s: field %+v lacks what its rule needs, or has what it does not", k.table, k.prefix, f)
			}
		}
		if k.id != idUnknown && k.table != TableRelationships {
			if got, _ := defaultKinds.classify(k.table, k.prefix+"x"); got != k && strings.HasSuffix(k.prefix, ":") {
				t.Errorf("%s %s: a RowKey of the kind classifies as %s", k.table, k.prefix, got.prefix)
			}
			if got, _ := defaultKinds.classify(k.table, k.prefix); got != k && !strings.HasSuffix(k.prefix, ":") {
				t.Errorf("%s %s: its RowKey classifies as %s", k.table, k.prefix, got.prefix)
			}
		}
	}
}

// TestIndexKindsDriveBothDirections: the execution index kinds are one
// table both directions read. In a test-only table, userexec copies only
// Status and a new index kind tagexec files an execution under its
// workflow: the forward transform then drops tagexec rows (and run and
// verify check them as indexes), and reverse writes tagexec rows and
// userexec rows with only those properties. The default table, on the
// same row and doc, keeps tagexec rows in the tables and writes no such
// row.
func TestIndexKindsDriveBothDirections(t *testing.T) {
	indexes := make([]*indexSpec, 0, len(allIndexes)+1)
	for _, x := range allIndexes {
		c := *x
		if c.kind == "userexec" {
			c.props = []string{"Status"}
		}
		indexes = append(indexes, &c)
	}
	indexes = append(indexes, &indexSpec{kind: "tagexec", key: "WorkflowName", props: []string{"Status", "DurationMs"}})
	kt := newKindTable(allKinds, indexes)
	opts := Options{Now: testNow, ExecutionTTL: TTLFull}

	row := mkRow(t, TableRelationships, `{"PartitionKey":"GLOBAL","RowKey":"tagexec:wf:e1"}`)
	if o := transformWith(kt, row, BlobFacts{}, opts, extrasNone); o.Disposition != DispositionDroppedIndex || o.IndexExecutionID != "e1" {
		t.Errorf("test table: tagexec row %s (%s), want dropped-index of e1", o.Disposition, o.IndexExecutionID)
	}
	if ix, ok := kt.parseIndex(row.RowKey); !ok || ix.Key != "wf" || ix.ExecutionID != "e1" {
		t.Errorf("test table: parseIndex = %+v %v", ix, ok)
	}
	if o := transformWith(defaultKinds, row, BlobFacts{}, opts, extrasNone); o.Disposition != DispositionKeptInTables {
		t.Errorf("default table: tagexec row %s, want kept-in-tables", o.Disposition)
	}

	exec := mkRow(t, TableEntities, `{"PartitionKey":"o1","RowKey":"execution:8235000000000_e1","ExecutionId":"e1",`+
		`"WorkflowName":"wf","ExecutedBy":"u1","Status":"Success","DurationMs":5,"StartedAt":"2026-11-20T08:00:00"}`)
	o := Transform(exec, BlobFacts{}, opts)
	doc, err := DecodeDocOrdered(o.DocJSON)
	if err != nil {
		t.Fatal(err)
	}
	doc = withoutMigration(doc)
	written := func(kt *kindTable) map[string]string {
		ro, err := reverseDocWith(kt, doc, nil, opts)
		if err != nil || ro.DeadLetter != nil {
			t.Fatalf("reverse: %v %+v", err, ro.DeadLetter)
		}
		out := map[string]string{}
		for _, r := range ro.Index {
			out[r.RowKey] = string(EncodeEntity(r))
		}
		return out
	}
	got := written(kt)
	if want := `{"PartitionKey":"GLOBAL","RowKey":"tagexec:wf:e1","DurationMs":5,"ExecutionId":"e1","OrganizationId":"o1","Status":"Success"}`; got["tagexec:wf:e1"] != want {
		t.Errorf("test table: tagexec row %s, want %s", got["tagexec:wf:e1"], want)
	}
	if want := `{"PartitionKey":"GLOBAL","RowKey":"userexec:u1:e1","ExecutionId":"e1","OrganizationId":"o1","Status":"Success"}`; got["userexec:u1:e1"] != want {
		t.Errorf("test table: userexec row %s, want %s", got["userexec:u1:e1"], want)
	}
	def := written(defaultKinds)
	if _, ok := def["tagexec:wf:e1"]; ok || !strings.Contains(def["userexec:u1:e1"], `"WorkflowName":"wf"`) {
		t.Errorf("default table: index rows %v, want no tagexec row and userexec with WorkflowName", def)
	}
}
