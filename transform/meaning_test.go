package transform

import (
	"bytes"
	"testing"
)

// TestDiffMeaning checks SPEC §12's equality by meaning, and that
// MeaningHash and MigrationMeaning agree with it: docs without
// differences hash the same, docs with one do not.
func TestDiffMeaning(t *testing.T) {
	const tool = `{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.0000000Z",` +
		`"completedAt":"2026-11-27T00:13:01.1620000Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
		`"errorMessage":null,"executedBy":"2026-11-27T00:13:01Z",` +
		`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5000000Z","hash":"aaa"}}`
	for _, tc := range []struct {
		name, table, actual string
		want                []string // differing paths; none means in sync
	}{
		{"the same doc", TableEntities, tool, nil},
		{"toISOString, an optional field null, a number as a double, another hash", TableEntities,
			`{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.000Z",` +
				`"completedAt":"2026-11-27T00:13:01.162Z","durationMs":1162.0,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
				`"errorType":null,"executedBy":"2026-11-27T00:13:01Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5Z","hash":"bbb"}}`, nil},
		{"Python's isoformat, naive and with +00:00, errorMessage absent", TableEntities,
			`{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00",` +
				`"completedAt":"2026-11-27T00:13:01.162000+00:00","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
				`"executedBy":"2026-11-27T00:13:01Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.500000","hash":"aaa"}}`, nil},
		{"a changed value is a difference", TableEntities,
			`{"id":"e1","type":"execution","status":"Failed","startedAt":"2026-11-27T00:13:00.0000000Z",` +
				`"completedAt":"2026-11-27T00:13:01.162Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
				`"errorMessage":null,"executedBy":"2026-11-27T00:13:01Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5000000Z","hash":"aaa"}}`,
			[]string{"status"}},
		{"one millisecond is a difference", TableEntities,
			`{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.0000000Z",` +
				`"completedAt":"2026-11-27T00:13:01.163Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
				`"errorMessage":null,"executedBy":"2026-11-27T00:13:01Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5000000Z","hash":"aaa"}}`,
			[]string{"completedAt"}},
		{"only timestamp fields are read as instants; nested values are data", TableEntities,
			`{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.0000000Z",` +
				`"completedAt":"2026-11-27T00:13:01.1620000Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.1620000Z","extra":null},` +
				`"errorMessage":null,"executedBy":"2026-11-27T00:13:01.000Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5000000Z","hash":"aaa"}}`,
			[]string{"executedBy", "inputData.extra", "inputData.when"}},
		{"another table's timestamps are not this one's", TableConfig, `{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.0000000Z",` +
			`"completedAt":"2026-11-27T00:13:01.162Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
			`"errorMessage":null,"executedBy":"2026-11-27T00:13:01Z",` +
			`"_migration":{"table":"Entities","partitionKey":"o1","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.5000000Z","hash":"aaa"}}`,
			[]string{"completedAt"}},
		{"provenance: another row, another instant", TableEntities,
			`{"id":"e1","type":"execution","status":"Success","startedAt":"2026-11-27T00:13:00.0000000Z",` +
				`"completedAt":"2026-11-27T00:13:01.1620000Z","durationMs":1162,"inputData":{"a":1,"when":"2026-11-27T00:13:01.162Z"},` +
				`"errorMessage":null,"executedBy":"2026-11-27T00:13:01Z",` +
				`"_migration":{"table":"Entities","partitionKey":"o2","rowKey":"execution:1_e1","timestamp":"2026-11-27T00:13:02.501Z","hash":"aaa"}}`,
			[]string{"_migration.partitionKey", "_migration.timestamp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeDoc([]byte(tool))
			if err != nil {
				t.Fatal(err)
			}
			a, err := DecodeDoc([]byte(tc.actual))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range DiffMeaning(tc.table, e, a, nil) {
				got = append(got, d.Path)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("differences %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("differences %q, want %q", got, tc.want)
				}
			}
			eh, err := MeaningHash(tc.table, e)
			if err != nil {
				t.Fatal(err)
			}
			ah, err := MeaningHash(tc.table, a)
			if err != nil {
				t.Fatal(err)
			}
			sameMig := bytes.Equal(MigrationMeaning(e["_migration"]), MigrationMeaning(a["_migration"]))
			if in := len(tc.want) == 0; (eh == ah && sameMig) != in {
				t.Errorf("hashes equal %t and _migration equal %t, want both %t", eh == ah, sameMig, in)
			}
		})
	}
}

// TestNormalizeDoc checks that Normalize treats a Doc as the map it
// encodes to, and returns the doc itself when nothing changes.
func TestNormalizeDoc(t *testing.T) {
	d := Doc{{"id", "x"}, {"completedAt", "2026-11-27T00:13:01.162Z"}, {"errorMessage", nil}, {"startedAt", "not a time"}}
	n, changed := Normalize(TableEntities, d)
	if !changed {
		t.Fatal("changed = false")
	}
	got, _ := n.(Doc).MarshalJSON()
	if want := `{"id":"x","completedAt":"2026-11-27T00:13:01.1620000Z","startedAt":"not a time"}`; string(got) != want {
		t.Errorf("Normalize = %s, want %s", got, want)
	}
	if _, changed := Normalize(TableEntities, Doc{{"id", "x"}, {"completedAt", "2026-11-27T00:13:01.1620000Z"}}); changed {
		t.Error("a doc in the tool's form was changed")
	}
	dh, err := MeaningHash(TableEntities, d)
	if err != nil {
		t.Fatal(err)
	}
	mh, err := MeaningHash(TableEntities, d.Map())
	if err != nil {
		t.Fatal(err)
	}
	if dh != mh {
		t.Errorf("MeaningHash of a Doc %s, of its map %s", dh, mh)
	}
}

// TestMigrationMeaningDirect: MigrationMeaning's direct form (every kept
// member a string or absent) is the canonical JSON of the map, as the
// long way writes it; other members take the long way.
func TestMigrationMeaningDirect(t *testing.T) {
	for _, m := range []map[string]any{
		{"table": "Entities", "partitionKey": "o1", "rowKey": "execution:1_e1", "timestamp": "2026-11-27T00:13:02.5Z", "hash": "aaa"},
		{"table": "Entities", "partitionKey": "o1", "rowKey": "r", "timestamp": "2026-11-27T00:13:02.5000000Z"},
		{"table": "Config", "partitionKey": "GLOBAL", "rowKey": "r", "timestamp": "2026-11-27T00:13:02.500000+00:00"},
		{"table": "Entities", "partitionKey": "o1", "rowKey": "r", "timestamp": "not a time"},
		{"table": "Entities", "partitionKey": "é\u2028\"\\\x01<>&", "rowKey": "\U0001F600\uffff"},
		{"table": "Entities", "partitionKey": "o1", "rowKey": nil, "timestamp": nil},
		{"table": "Entities", "partitionKey": "bad \xff", "rowKey": "r"},
		{"table": 7, "partitionKey": "o1", "rowKey": "r"},
		{"table": "Entities", "partitionKey": "o1", "rowKey": "r", "timestamp": map[string]any{"a": 1}},
		{"hash": "only"},
		{},
	} {
		want := migrationMeaningMap(func(name string) any { return m[name] })
		if got := MigrationMeaning(m); !bytes.Equal(got, want) {
			t.Errorf("MigrationMeaning(%v) = %s, want %s", m, got, want)
		}
		d := Doc{}
		for _, name := range []string{"timestamp", "table", "hash", "rowKey", "partitionKey"} {
			if v, ok := m[name]; ok {
				d = append(d, Field{name, v})
			}
		}
		if got := MigrationMeaning(d); !bytes.Equal(got, want) {
			t.Errorf("MigrationMeaning(Doc %v) = %s, want %s", d, got, want)
		}
	}
}
