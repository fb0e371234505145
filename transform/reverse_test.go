package transform

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// revCase is one doc through ReverseDoc and what is expected of it. Rows
// are compared as EncodeEntity writes them (annotated JSON, properties in
// name order), so Edm types and exact values are part of the comparison.
type revCase struct {
	name     string
	doc      string // the doc's JSON
	existing string // the existing row's annotated JSON; "" for none
	opts     *Options
	table    string // want Row.Table
	row      string // want EncodeEntity(Row)
	index    []string
	deletes  []string // "Table PartitionKey RowKey"
	uploads  []string // "path size content-type"
	warn     []string
	dead     ReverseReason
	detail   string // want dead-letter detail
}

func revOpts() Options { return Options{Now: testNow} }

func runRevCases(t *testing.T, cases []revCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ro := runRev(t, tc.doc, tc.existing, tc.table, tc.opts)
			if tc.dead != "" || ro.DeadLetter != nil {
				if ro.DeadLetter == nil || ro.DeadLetter.Reason != tc.dead || (tc.detail != "" && ro.DeadLetter.Detail != tc.detail) {
					t.Fatalf("dead letter %+v, want %q %q", ro.DeadLetter, tc.dead, tc.detail)
				}
				if ro.Row.Props != nil || ro.Index != nil || ro.Delete != nil || ro.Uploads != nil {
					t.Errorf("a dead letter with rows: %+v", ro)
				}
				return
			}
			if ro.Row.Table != tc.table {
				t.Errorf("table %q, want %q", ro.Row.Table, tc.table)
			}
			if got := string(EncodeEntity(ro.Row)); got != compact(t, tc.row) {
				t.Errorf("row\ngot  %s\nwant %s", got, compact(t, tc.row))
			}
			if tc.index != nil { // nil: not checked
				var got, want []string
				for _, r := range ro.Index {
					got = append(got, string(EncodeEntity(r)))
				}
				for _, r := range tc.index {
					want = append(want, compact(t, r))
				}
				if !slices.Equal(got, want) {
					t.Errorf("index rows\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
				}
			}
			if tc.deletes != nil {
				var got []string
				for _, d := range ro.Delete {
					got = append(got, d.Table+" "+d.PartitionKey+" "+d.RowKey)
				}
				if !slices.Equal(got, tc.deletes) {
					t.Errorf("deletes\ngot  %q\nwant %q", got, tc.deletes)
				}
			}
			var ups []string
			for _, u := range ro.Uploads {
				ups = append(ups, fmt.Sprintf("%s %d %s", u.Path, len(u.Data), u.ContentType))
			}
			if !slices.Equal(ups, tc.uploads) {
				t.Errorf("uploads %q, want %q", ups, tc.uploads)
			}
			if got := warningsOf(Outcome{Warnings: ro.Warnings}); !slices.Equal(got, tc.warn) {
				t.Errorf("warnings\ngot  %q\nwant %q", got, tc.warn)
			}
		})
	}
}

// runRev decodes the doc and the existing row and runs ReverseDoc.
func runRev(t *testing.T, docJSON, existing, table string, opts *Options) ReverseOutcome {
	t.Helper()
	doc, err := DecodeDocOrdered([]byte(docJSON))
	if err != nil {
		t.Fatalf("doc %s: %v", docJSON, err)
	}
	var ex *Row
	if existing != "" {
		row := mkRow(t, table, existing)
		ex = &row
	}
	o := revOpts()
	if opts != nil {
		o = *opts
	}
	ro, err := ReverseDoc(doc, ex, o)
	if err != nil {
		t.Fatalf("ReverseDoc: %v", err)
	}
	return ro
}

// The normalizations (docs/design.md, "Back to the tables"), one test each.

func TestReverseNormalizationTimestamp(t *testing.T) {
	runRevCases(t, []revCase{{
		name:  "no row: naive UTC, microseconds, no fraction when zero",
		doc:   `{"id":"role-r1","type":"role","scope":"GLOBAL","name":"R","createdAt":"2025-11-20T14:03:12.5000000Z","updatedAt":"2025-11-20T14:03:12.0000000Z"}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"role:r1","CreatedAt":"2025-11-20T14:03:12.500000","Name":"R","UpdatedAt":"2025-11-20T14:03:12"}`,
	}, {
		name: "changed: an offset timestamp comes back in UTC",
		doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":"R","createdAt":"2025-11-19T14:30:00.0000000Z","updatedAt":"2025-11-21T08:00:00.0000000Z",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"role:r1","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"role:r1","Name":"R","CreatedAt":"2025-11-19T16:30:00+02:00","UpdatedAt":"2025-11-20T16:30:00+02:00"}`,
		table:    TableEntities,
		// CreatedAt is unchanged and keeps its text; UpdatedAt changed.
		row: `{"PartitionKey":"GLOBAL","RowKey":"role:r1","CreatedAt":"2025-11-19T16:30:00+02:00","Name":"R","UpdatedAt":"2025-11-21T08:00:00"}`,
	}, {
		name:  "an unparseable timestamp is written as it is",
		doc:   `{"id":"role-r1","type":"role","scope":"GLOBAL","createdAt":"2026-13-45T25:61:00"}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"role:r1","CreatedAt":"2026-13-45T25:61:00"}`,
		warn:  []string{"unparseable timestamp: CreatedAt"},
	}, {
		name:  "Relationships have no timestamps: the text stays",
		doc:   `{"id":"userrole-u-r","type":"relationship","scope":"GLOBAL","relationship":"userrole","userId":"u","roleId":"r","assignedAt":"2025-11-20T14:03:12.5000000Z"}`,
		table: TableRelationships,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"userrole:u:r","AssignedAt":"2025-11-20T14:03:12.5000000Z","RoleId":"r","UserId":"u"}`,
	}})
}

func TestReverseNormalizationSeventhDigit(t *testing.T) {
	runRevCases(t, []revCase{{
		name:  "the seventh fractional digit is truncated in the application's string",
		doc:   `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","lastLogin":"2026-11-21T02:00:03.1234567Z","createdAt":"2026-11-21T02:00:03.0000009Z"}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","CreatedAt":"2026-11-21T02:00:03","Email":"a@x","LastLogin":"2026-11-21T02:00:03.123456"}`,
	}, {
		name: "an Edm.DateTime keeps all seven digits",
		doc: `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","lastLogin":"2026-11-22T02:00:03.1234567Z",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"user:a@x","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","LastLogin@odata.type":"Edm.DateTime","LastLogin":"2026-11-21T02:00:03.1234567Z"}`,
		table:    TableEntities,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","LastLogin@odata.type":"Edm.DateTime","LastLogin":"2026-11-22T02:00:03.1234567Z"}`,
	}})
}

func TestReverseNormalizationDateTimeAsString(t *testing.T) {
	// The doc of a row with LastLogin as Edm.DateTime, without that row.
	row := mkRow(t, TableEntities, `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","LastLogin@odata.type":"Edm.DateTime","LastLogin":"2026-11-19T06:00:00Z"}`)
	o := Transform(row, BlobFacts{}, testOpts())
	runRevCases(t, []revCase{{
		name:  "without the row a DateTime is the application's string",
		doc:   string(o.DocJSON),
		table: TableEntities,
		// The doc carries _migration: the keys are the row's.
		row: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","LastLogin":"2026-11-19T06:00:00"}`,
	}})
}

func TestReverseNormalizationGuidAndBinary(t *testing.T) {
	runRevCases(t, []revCase{{
		name:  "without the row a Guid and a Binary are strings (base64)",
		doc:   `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","entraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f","thumbprint":"ABEiM0RVZneImaq7zN3u/w=="}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f","Thumbprint":"ABEiM0RVZneImaq7zN3u/w=="}`,
	}, {
		name: "with the row they keep their types when changed",
		doc: `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","entraUserId":"00000000-0000-4000-8000-000000000001","thumbprint":"AAE=",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"user:a@x","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f","Thumbprint@odata.type":"Edm.Binary","Thumbprint":"ABEiM0RVZneImaq7zN3u/w=="}`,
		table:    TableEntities,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"00000000-0000-4000-8000-000000000001","Thumbprint@odata.type":"Edm.Binary","Thumbprint":"AAE="}`,
	}, {
		name: "a changed value that no longer fits the type is typed as Python would",
		doc: `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","entraUserId":"not a guid",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"user:a@x","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f"}`,
		table:    TableEntities,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","EntraUserId":"not a guid"}`,
		warn:     []string{"edm type changed: EntraUserId"},
	}})
}

func TestReverseNormalizationNumbers(t *testing.T) {
	mig := `"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"user:a@x","timestamp":null,"hash":"x"}`
	runRevCases(t, []revCase{{
		name: "without the row: int → Int32 when it fits, else Int64; a float → Double; numbers turned into strings stay strings",
		doc: `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","small":42,"big":4294967296,"whole":5.0,"exp":1E2,
			"count":"9007199254740993","score":"NaN","ratio":"Infinity","neg":-0}`,
		table: TableEntities,
		row: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Big@odata.type":"Edm.Int64","Big":"4294967296","Count":"9007199254740993",
			"Email":"a@x","Exp@odata.type":"Edm.Double","Exp":100.0,"Neg":0,"Ratio":"Infinity","Score":"NaN","Small":42,
			"Whole@odata.type":"Edm.Double","Whole":5.0}`,
	}, {
		name: "with the row: changed values back in the row's types, strings of the forward transform parsed back",
		doc:  `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","small":43,"count":"9007199254740995","score":"-Infinity","whole":6,` + mig + `}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","Small@odata.type":"Edm.Int64","Small":"42",
			"Count@odata.type":"Edm.Int64","Count":"9007199254740993","Score@odata.type":"Edm.Double","Score":"NaN","Whole@odata.type":"Edm.Double","Whole":5.0}`,
		table: TableEntities,
		row: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Count@odata.type":"Edm.Int64","Count":"9007199254740995","Email":"a@x",
			"Score@odata.type":"Edm.Double","Score":"-Infinity","Small@odata.type":"Edm.Int64","Small":"43","Whole@odata.type":"Edm.Double","Whole":6.0}`,
	}, {
		name:     "an Int32 that grows beyond 32 bits becomes an Int64, a fraction a Double",
		doc:      `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","small":2147483648,"half":0.5,` + mig + `}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","Small":1,"Half":1}`,
		table:    TableEntities,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","Half@odata.type":"Edm.Double","Half":0.5,"Small@odata.type":"Edm.Int64","Small":"2147483648"}`,
		warn:     []string{"edm type changed: Small", "edm type changed: Half"},
	}, {
		name:  "an integer beyond Int64 is refused by the Python SDK",
		doc:   `{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","huge":9223372036854775808}`,
		dead:  ReverseIntegerRange,
		table: TableEntities, detail: "Huge",
	}})
}

func TestReverseNormalizationJSON(t *testing.T) {
	runRevCases(t, []revCase{{
		name: "a JSON-valued field is json.dumps text: order kept, ', ' and ': ', non-ASCII escaped, numbers as Python writes them",
		doc: `{"id":"integration-halo","type":"integration","scope":"GLOBAL","name":"halo","integrationType":"psa","enabled":true,
			"settings":{"b":1,"a":"é","c":[1.50,2.0,1E16,"x/y"],"d":{}},"updatedAt":null,"updatedBy":null}`,
		table: TableConfig,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Enabled":true,"Settings":"{\"b\": 1, \"a\": \"\\u00e9\", \"c\": [1.5, 2.0, 1e+16, \"x/y\"], \"d\": {}}","Type":"psa"}`,
	}, {
		name: "unchanged (the same value in another form) keeps the stored text",
		doc: `{"id":"integration-halo","type":"integration","scope":"GLOBAL","name":"halo","settings":{"a":[1,2]},
			"_migration":{"table":"Config","partitionKey":"GLOBAL","rowKey":"integration:halo","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Settings":"{ \"a\" : [1.0, 2e0] }"}`,
		table:    TableConfig,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Settings":"{ \"a\" : [1.0, 2e0] }"}`,
	}, {
		name:  "a JSON field holding null is left out",
		doc:   `{"id":"form-f1","type":"form","scope":"GLOBAL","name":"F","formSchema":null,"allowedQueryParams":["x"],"isGlobal":true}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"form:f1","AllowedQueryParams":"[\"x\"]","Name":"F"}`,
	}, {
		name:  "an object in a property that is not JSON-valued is written as its JSON text",
		doc:   `{"id":"role-r1","type":"role","scope":"GLOBAL","tags":["a","ü"]}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"role:r1","Tags":"[\"a\", \"\\u00fc\"]"}`,
		warn:  []string{"object written as JSON text: Tags"},
	}})
}

func TestReverseNormalizationEtagDropped(t *testing.T) {
	src := `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x","etag":"W/\"datetime'2026-11-20T17%3A45%3A00.1234567Z'\""}`
	o := Transform(mkRow(t, TableEntities, src), BlobFacts{}, testOpts())
	runRevCases(t, []revCase{{
		name:  "without the row the dropped etag is gone",
		doc:   string(o.DocJSON),
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","Email":"a@x"}`,
	}, {
		name:     "with the row it is kept",
		doc:      string(o.DocJSON),
		existing: src,
		table:    TableEntities,
		row:      src,
	}})
}

func TestReverseNormalizationNotCarried(t *testing.T) {
	form := `{"PartitionKey":"7c9e","RowKey":"form:f1","Name":"F","IsGlobal":true}`
	globalKey := `{"PartitionKey":"GLOBAL","RowKey":"systemconfig:globalkey:k1","KeyId":"k1","IsGlobal":false}`
	exec := `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","ExecutionId":"e1","WorkflowName":"wf","ExecutedBy":"a@x",
		"Status":"Success","InputData":"{}","StartedAt":"2025-11-20T14:03:12","ResultInBlob":true,"Result":"stale",
		"Logs":"[{\"msg\": \"hi\"}]"}`
	var cases []revCase
	for _, c := range []struct{ name, src, table, noRow, withRow string }{
		{"a form's IsGlobal", form, TableEntities,
			`{"PartitionKey":"7c9e","RowKey":"form:f1","Name":"F"}`, form},
		{"a global key's IsGlobal", globalKey, TableConfig,
			`{"PartitionKey":"GLOBAL","RowKey":"systemconfig:globalkey:k1","KeyId":"k1"}`, globalKey},
		{"a legacy execution's inline Logs and a Result next to ResultInBlob", exec, TableEntities,
			`{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","ExecutedBy":"a@x","ExecutionId":"e1","InputData":"{}","ResultInBlob":true,"StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf"}`,
			exec},
	} {
		o := Transform(mkRow(t, c.table, c.src), BlobFacts{}, Options{Now: testNow, ExecutionTTL: TTLFull})
		if o.Disposition != DispositionDoc {
			t.Fatalf("%s: %s", c.name, o.DeadLetter)
		}
		cases = append(cases,
			revCase{name: c.name + ": without the row", doc: string(o.DocJSON), table: c.table, row: c.noRow},
			revCase{name: c.name + ": with the row", doc: string(o.DocJSON), existing: c.src, table: c.table, row: c.withRow})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ro := runRev(t, tc.doc, tc.existing, tc.table, nil)
			if d := DiffRows(ro.Row, mkRow(t, tc.table, tc.row)); ro.DeadLetter != nil || d != nil {
				t.Errorf("dead letter %+v, differs in %v\ngot  %s\nwant %s", ro.DeadLetter, d, EncodeEntity(ro.Row), tc.row)
			}
		})
	}
}

func TestReverseNormalizationWrittenByApp(t *testing.T) {
	// A legacy execution row without ExecutionId and ResultInBlob.
	src := `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","WorkflowName":"wf","ExecutedBy":"a@x","Status":"Failed","InputData":"{}","StartedAt":"2025-11-20T14:03:12"}`
	o := Transform(mkRow(t, TableEntities, src), BlobFacts{}, Options{Now: testNow, ExecutionTTL: TTLFull})
	noRow := runRev(t, string(o.DocJSON), "", "", nil)
	if got, want := string(EncodeEntity(noRow.Row)), compact(t, `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1",
		"ExecutedBy":"a@x","ExecutionId":"e1","InputData":"{}","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12","Status":"Failed","WorkflowName":"wf"}`); got != want {
		t.Errorf("without the row\ngot  %s\nwant %s", got, want)
	}
	withRow := runRev(t, string(o.DocJSON), src, TableEntities, nil)
	if d := DiffRows(withRow.Row, mkRow(t, TableEntities, src)); withRow.DeadLetter != nil || d != nil {
		t.Errorf("with the row: %+v, differs in %v", withRow.DeadLetter, d)
	}
	// Key properties the kind's rows carry: a user's Email, a workflow
	// key's KeyId, a job's JobName.
	for _, c := range []struct{ table, src, want string }{
		{TableEntities, `{"PartitionKey":"GLOBAL","RowKey":"user:a@x","DisplayName":"A"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"user:a@x","DisplayName":"A","Email":"a@x"}`},
		{TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"workflowkey:k1","WorkflowId":"wf"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowkey:k1","KeyId":"k1","WorkflowId":"wf"}`},
		{TableConfig, `{"PartitionKey":"SYSTEM","RowKey":"jobstatus:sync","Status":"completed"}`,
			`{"PartitionKey":"SYSTEM","RowKey":"jobstatus:sync","JobName":"sync","Status":"completed"}`},
		// Not an integration's Name or a connection's ConnectionName.
		{TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Type":"psa"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Type":"psa"}`},
		{TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"oauth:graph","Status":"ok"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"oauth:graph","Status":"ok"}`},
	} {
		o := Transform(mkRow(t, c.table, c.src), BlobFacts{}, testOpts())
		ro := runRev(t, string(o.DocJSON), "", "", nil)
		if got := string(EncodeEntity(ro.Row)); ro.DeadLetter != nil || got != compact(t, c.want) {
			t.Errorf("%s without the row: %+v\ngot  %s\nwant %s", c.src, ro.DeadLetter, got, c.want)
		}
	}
}

func TestReverseNormalizationConfigValues(t *testing.T) {
	cfg := func(typ, value string) string {
		return `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":` + value + `,"secretRef":null,"configType":"` + typ + `"}`
	}
	row := func(typ, value string) string {
		return `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"` + typ + `","Value":` + value + `}`
	}
	runRevCases(t, []revCase{
		{name: "bool is written true/false", doc: cfg("bool", "false"), table: TableConfig, row: row("bool", `"false"`)},
		{name: "int as its digits", doc: cfg("int", "25"), table: TableConfig, row: row("int", `"25"`)},
		{name: "int above 2^53 (a string in the doc)", doc: cfg("int", `"9007199254740993"`), table: TableConfig, row: row("int", `"9007199254740993"`)},
		{name: "json as json.dumps text", doc: cfg("json", `{"a":[true,0.25]}`), table: TableConfig, row: row("json", `"{\"a\": [true, 0.25]}"`)},
		{name: "json holding a string", doc: cfg("json", `"x"`), table: TableConfig, row: row("json", `"\"x\""`)},
		{name: "string", doc: cfg("string", `"Europe/London"`), table: TableConfig, row: row("string", `"Europe/London"`)},
		{name: "unknown type keeps the value's type", doc: cfg("boolean", `true`), table: TableConfig,
			row: `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"boolean","Value":"true"}`},
		{name: "secret_ref: the Key Vault name in Value", table: TableConfig,
			doc: `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":null,"secretRef":"kv-name","configType":"secret_ref"}`,
			row: row("secret_ref", `"kv-name"`)},
		{name: "secret_ref with a value: the value is not written", table: TableConfig,
			doc:  `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":"v","secretRef":"kv-name","configType":"secret_ref"}`,
			row:  row("secret_ref", `"kv-name"`),
			warn: []string{"doc field not written: value"}},
		{name: "a secret_ref row's SecretRef property is carried as sourceSecretRef", table: TableConfig,
			doc: `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":null,"secretRef":"kv-name","configType":"secret_ref","sourceSecretRef":"old"}`,
			row: `{"PartitionKey":"GLOBAL","RowKey":"config:k","SecretRef":"old","Type":"secret_ref","Value":"kv-name"}`},
		{name: "changed bool with the row: its spelling is lost", table: TableConfig,
			doc: `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":true,"secretRef":null,"configType":"bool",
				"_migration":{"table":"Config","partitionKey":"GLOBAL","rowKey":"config:k","timestamp":null,"hash":"x"}}`,
			existing: `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"bool","Value":"False","Description":"d"}`,
			row:      `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"bool","Value":"true"}`},
		{name: "unchanged bool with the row: stored text kept", table: TableConfig,
			doc: `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":false,"secretRef":null,"configType":"bool","description":"d",
				"_migration":{"table":"Config","partitionKey":"GLOBAL","rowKey":"config:k","timestamp":null,"hash":"x"}}`,
			existing: `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"bool","Value":" False ","Description":"d"}`,
			row:      `{"PartitionKey":"GLOBAL","RowKey":"config:k","Description":"d","Type":"bool","Value":" False "}`},
	})
}

func TestReverseNormalizationResultToBlob(t *testing.T) {
	exec := func(result, typ string) string {
		return `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"Success",
			"inputData":{},"result":` + result + `,"resultType":` + typ + `,"resultInBlob":false,"startedAt":"2025-11-20T14:03:12.0000000Z"}`
	}
	row := func(extra string) string {
		return `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","ExecutedBy":"a@x","ExecutionId":"e1","InputData":"{}",` +
			extra + `,"StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf"}`
	}
	small := Options{Now: testNow, BlobThreshold: 10}
	runRevCases(t, []revCase{{
		name: "json above the threshold (its json.dumps text) goes to result.json", opts: &small, table: TableEntities,
		doc: exec(`{"a":"bcdef"}`, `"json"`), row: row(`"ResultInBlob":true`),
		uploads: []string{"e1/result.json 14 application/json"},
	}, {
		name: "exactly the threshold stays inline", opts: &small, table: TableEntities,
		doc: exec(`"0123456789"`, `"text"`), row: row(`"Result":"0123456789","ResultInBlob":false`),
	}, {
		name: "html", opts: &small, table: TableEntities,
		doc: exec(`"  <p>hello</p>"`, `"html"`), row: row(`"ResultInBlob":true`),
		uploads: []string{"e1/result.html 14 text/html; charset=utf-8"},
	}, {
		name: "text", opts: &small, table: TableEntities,
		doc: exec(`"hello world"`, `"text"`), row: row(`"ResultInBlob":true`),
		uploads: []string{"e1/result.txt 11 text/plain; charset=utf-8"},
	}, {
		name: "a string result of type json is its JSON text", table: TableEntities,
		doc: exec(`"x"`, `"json"`), row: row(`"Result":"\"x\"","ResultInBlob":false`),
	}, {
		name: "already in a blob", table: TableEntities,
		doc: strings.Replace(exec(`null`, `"json"`), `"resultInBlob":false`, `"resultInBlob":true`, 1), row: row(`"ResultInBlob":true`),
	}})
}

func TestReverseNormalizationOrgKeys(t *testing.T) {
	runRevCases(t, []revCase{{
		name:  "without _migration an organization's row is org:{uuid} in GLOBAL",
		doc:   `{"id":"org-3f25","type":"organization","scope":"org-3f25","name":"N","isActive":false}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"org:3f25","IsActive":false,"Name":"N"}`,
	}, {
		name:  "with _migration the keys are the row's",
		doc:   `{"id":"org-3f25","type":"organization","scope":"org-3f25","name":"N","_migration":{"table":"Entities","partitionKey":"2f1a","rowKey":"org:org-3f25","timestamp":null,"hash":"x"}}`,
		table: TableEntities,
		row:   `{"PartitionKey":"2f1a","RowKey":"org:org-3f25","Name":"N"}`,
	}})
}

func TestReverseNormalizationNames(t *testing.T) {
	runRevCases(t, []revCase{{
		name:  "without the row an unlisted field's first letter is upper-cased; sourceX is X when x is taken",
		doc:   `{"id":"role-r1","type":"role","scope":"GLOBAL","name":"R","preferredLanguage":"de","sourceType":"t","sourceThing":"s","sourceName":"n"}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"role:r1","Name":"R","PreferredLanguage":"de","SourceThing":"s","Type":"t"}`,
		// sourceName would write Name, which the listed field name took.
		warn: []string{"doc field not written: sourceName"},
	}, {
		name:     "with the row the row's own names are used",
		doc:      `{"id":"role-r1","type":"role","scope":"GLOBAL","name":"R","fooBar":"y","_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"role:r1","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"role:r1","Name":"R","fooBar":"x"}`,
		table:    TableEntities,
		row:      `{"PartitionKey":"GLOBAL","RowKey":"role:r1","Name":"R","fooBar":"y"}`,
	}})
}

func TestReverseNormalizationUnknownKind(t *testing.T) {
	src := `{"PartitionKey":"GLOBAL","RowKey":"notificationtemplate:welcome_email","Subject":"Hi","Version":3,"UpdatedAt":"2026-11-02T10:00:00"}`
	o := Transform(mkRow(t, TableConfig, src), BlobFacts{}, testOpts())
	runRevCases(t, []revCase{{
		name:  "with _migration an unknown kind comes back",
		doc:   string(o.DocJSON),
		table: TableConfig,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"notificationtemplate:welcome_email","Subject":"Hi","UpdatedAt":"2026-11-02T10:00:00","Version":3}`,
	}, {
		name:   "without it its RowKey and table are unknown",
		doc:    string(MustJSON(withoutMigration(o.Doc))),
		dead:   ReverseNoKeys,
		detail: `a doc of unknown type "notificationtemplate" has no _migration: its RowKey and table are known only from there`,
	}})
}

// MustJSON marshals a Doc built by a test.
func MustJSON(d Doc) []byte {
	js, err := d.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return js
}

// TestReverseKeys: the keys of a doc without _migration, the inverse of
// the id rules, for every kind; and the docs whose keys cannot be known.
func TestReverseKeys(t *testing.T) {
	long := strings.Repeat("é", 130) + "@x" // its id is truncated
	longID, _, _ := SanitizeID("user-" + long)
	cases := []struct {
		name, doc           string
		table, pk, rk, dead string
	}{
		{"config: the key field, _ kept", `{"id":"config-smtp-port","type":"config","scope":"org-7c9e","key":"smtp_port","configType":"int","value":1}`,
			TableConfig, "7c9e", "config:smtp_port", ""},
		{"config: a key that does not give the id", `{"id":"config-smtp-port","type":"config","scope":"GLOBAL","key":"smtp_host"}`, "", "", "", "config key does not give the doc id"},
		{"integration", `{"id":"integration-halo","type":"integration","scope":"GLOBAL"}`, TableConfig, "GLOBAL", "integration:halo", ""},
		{"oauth", `{"id":"oauth-graph","type":"oauth_connection","scope":"SYSTEM"}`, TableConfig, "SYSTEM", "oauth:graph", ""},
		{"workflow key", `{"id":"workflowkey-k1","type":"workflow_key","scope":"GLOBAL","isGlobal":false}`, TableConfig, "GLOBAL", "workflowkey:k1", ""},
		{"global workflow key", `{"id":"workflowkey-k1","type":"workflow_key","scope":"GLOBAL","isGlobal":true}`, TableConfig, "GLOBAL", "systemconfig:globalkey:k1", ""},
		{"schedule", `{"id":"schedule-nightly_sync","type":"schedule","scope":"GLOBAL"}`, TableConfig, "GLOBAL", "schedule:nightly_sync", ""},
		{"branding", `{"id":"branding-org-7c9e","type":"branding","scope":"org-7c9e"}`, TableConfig, "7c9e", "branding", ""},
		{"branding of another scope", `{"id":"branding-GLOBAL","type":"branding","scope":"org-7c9e"}`, "", "", "", "branding doc id is not branding- + scope"},
		{"github", `{"id":"github-GLOBAL","type":"github_config","scope":"GLOBAL"}`, TableConfig, "GLOBAL", "github", ""},
		{"job status", `{"id":"jobstatus-sync","type":"job_status","scope":"SYSTEM"}`, TableConfig, "SYSTEM", "jobstatus:sync", ""},
		{"user, percent-encoded id", `{"id":"user-100%25dev@x","type":"user","scope":"GLOBAL","email":"100%dev@x"}`, TableEntities, "GLOBAL", "user:100%dev@x", ""},
		{"user, truncated id: the key field", `{"id":"` + longID + `","type":"user","scope":"GLOBAL","email":"` + long + `"}`, TableEntities, "GLOBAL", "user:" + long, ""},
		{"user, truncated id without the key field", `{"id":"` + longID + `","type":"user","scope":"GLOBAL"}`, "", "", "", "user id does not map back to a RowKey"},
		{"role", `{"id":"role-r1","type":"role","scope":"org-2f1a"}`, TableEntities, "2f1a", "role:r1", ""},
		{"form", `{"id":"form-f1","type":"form","scope":"GLOBAL"}`, TableEntities, "GLOBAL", "form:f1", ""},
		{"execution: reverse timestamp from startedAt", `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","startedAt":"2025-11-20T14:03:12.3456789Z"}`,
			TableEntities, "GLOBAL", "execution:8236352607654_e1", ""},
		{"execution without startedAt", `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1"}`, "", "", "", "execution has no parseable startedAt, which its RowKey needs"},
		{"execution whose executionId is not its id", `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e2","startedAt":"2025-11-20T14:03:12Z"}`, "", "", "", "executionId does not give the doc id"},
		{"relationship", `{"id":"userperm-a@x-7c9e","type":"relationship","scope":"GLOBAL","relationship":"userperm","userId":"a@x","orgId":"7c9e"}`,
			TableRelationships, "GLOBAL", "userperm:a@x:7c9e", ""},
		{"relationship whose properties do not give the id", `{"id":"userperm-a@x-7c9e","type":"relationship","scope":"GLOBAL","relationship":"userperm","userId":"b@x","orgId":"7c9e"}`,
			"", "", "", "userperm relationship: userId and orgId do not give the doc id"},
		{"scope that is no scope", `{"id":"role-r1","type":"role","scope":"tenant-1"}`, "", "", "", "scope is not GLOBAL, SYSTEM or org-{id}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ro := runRev(t, c.doc, "", "", nil)
			if c.dead != "" {
				if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseNoKeys || ro.DeadLetter.Detail != c.dead {
					t.Fatalf("dead letter %+v, want %q", ro.DeadLetter, c.dead)
				}
				return
			}
			if ro.DeadLetter != nil {
				t.Fatalf("dead letter %+v", *ro.DeadLetter)
			}
			if ro.Row.Table != c.table || ro.Row.PartitionKey != c.pk || ro.Row.RowKey != c.rk {
				t.Errorf("%s %q %q, want %s %q %q", ro.Row.Table, ro.Row.PartitionKey, ro.Row.RowKey, c.table, c.pk, c.rk)
			}
		})
	}
}

// TestReverseForbiddenKeyChars: keys Table Storage refuses are dead
// letters, for the row and for an execution's index rows.
func TestReverseForbiddenKeyChars(t *testing.T) {
	for _, c := range []struct{ name, doc, detail string }{
		{"slash in a RowKey", `{"id":"user-a%2Fb@x","type":"user","scope":"GLOBAL","email":"a/b@x"}`, "RowKey of the row has U+002F"},
		{"backslash", `{"id":"role-a%5Cb","type":"role","scope":"GLOBAL"}`, "RowKey of the row has U+005C"},
		{"hash", `{"id":"role-a%23b","type":"role","scope":"GLOBAL"}`, "RowKey of the row has U+0023"},
		{"question mark", `{"id":"role-a%3Fb","type":"role","scope":"GLOBAL"}`, "RowKey of the row has U+003F"},
		{"control character", `{"id":"role-a%01b","type":"role","scope":"GLOBAL"}`, "RowKey of the row has U+0001"},
		{"C1 control character", `{"id":"role-a\u0085b","type":"role","scope":"GLOBAL"}`, "RowKey of the row has U+0085"},
		{"in a PartitionKey from _migration", `{"id":"role-r","type":"role","scope":"org-a/b","_migration":{"table":"Entities","partitionKey":"a/b","rowKey":"role:r","timestamp":null,"hash":"x"}}`,
			"PartitionKey of the row has U+002F"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ro := runRev(t, c.doc, "", "", nil)
			if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseForbiddenKeyChar || ro.DeadLetter.Detail != c.detail {
				t.Fatalf("dead letter %+v, want %q", ro.DeadLetter, c.detail)
			}
		})
	}
	// Allowed: percent, apostrophe, non-ASCII, U+00A0.
	ro := runRev(t, `{"id":"role-100%25 o'br\u00e9\u00a0n","type":"role","scope":"GLOBAL"}`, "", "", nil)
	if ro.DeadLetter != nil || ro.Row.RowKey != "role:100% o'bré\u00a0n" {
		t.Errorf("%+v %q", ro.DeadLetter, ro.Row.RowKey)
	}
}

// TestReverseImpossibleIndexRow: an index row whose key Table Storage
// refuses is dead-lettered alone (SPEC §15): the execution's row and its
// other index rows are written, and a stale row under an impossible key is
// not deleted (no table holds it).
func TestReverseImpossibleIndexRow(t *testing.T) {
	doc := `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","workflowName":"wf","formId":"f1","executedBy":"a/b+c@contoso.example","status":"Success","startedAt":"2025-11-20T14:03:12Z"}`
	existing := &Row{Table: TableEntities, PartitionKey: "GLOBAL", RowKey: "execution:8236352607999_e1", Props: map[string]Value{
		"ExecutionId": String("e1"), "WorkflowName": String("wf"), "ExecutedBy": String("x#y"), "Status": String("Running"),
		"StartedAt": String("2025-11-20T14:03:12"),
	}}
	d, err := DecodeDocOrdered([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ro, err := ReverseDoc(d, existing, revOpts())
	if err != nil {
		t.Fatal(err)
	}
	if ro.DeadLetter != nil {
		t.Fatalf("whole doc dead-lettered: %+v", *ro.DeadLetter)
	}
	if ro.Row.RowKey != "execution:8236352607999_e1" || ro.Row.Props["Status"].Str != "Success" {
		t.Errorf("row %s %+v", ro.Row.RowKey, ro.Row.Props["Status"])
	}
	var keys []string
	for _, ix := range ro.Index {
		keys = append(keys, ix.RowKey)
	}
	if want := []string{"workflowexec:wf:GLOBAL:e1", "formexec:f1:e1"}; !slices.Equal(keys, want) {
		t.Errorf("index rows %q, want %q", keys, want)
	}
	want := []IndexDeadLetter{{Row: RowRef{TableRelationships, "GLOBAL", "userexec:a/b+c@contoso.example:e1"}, Reason: ReverseForbiddenKeyChar,
		Detail: "RowKey of the userexec index row has U+002F"}}
	if !slices.Equal(ro.IndexDeadLetters, want) {
		t.Errorf("index dead letters %+v, want %+v", ro.IndexDeadLetters, want)
	}
	for _, d := range ro.Delete {
		if strings.Contains(d.RowKey, "x#y") {
			t.Errorf("deletes %+v, a row no table can hold", d)
		}
	}
	if !slices.Contains(ro.Delete, RowRef{TableRelationships, "GLOBAL", "status:Running:e1"}) {
		t.Errorf("deletes %+v, want the stale status:Running:e1", ro.Delete)
	}
}

// TestReverseExecution: an execution's row, index rows as the execution
// repository writes them, and the status rows to delete.
func TestReverseExecution(t *testing.T) {
	runRevCases(t, []revCase{{
		name: "a running execution of an organization, created in Cosmos DB",
		doc: `{"id":"e1","type":"execution","scope":"org-7c9e","executionId":"e1","workflowName":"wf","formId":null,"executedBy":"a@x",
			"executedByName":"Zoë","status":"Running","inputData":{"b":1,"a":"é"},"result":null,"resultType":null,"resultInBlob":false,
			"resultSize":null,"resultBlobPath":null,"errorMessage":null,"durationMs":null,"startedAt":"2025-11-20T14:03:12.3456789Z",
			"completedAt":null,"logsBlobPath":null,"variablesBlobPath":null,"snapshotBlobPath":null,"ttl":100}`,
		table: TableEntities,
		row: `{"PartitionKey":"7c9e","RowKey":"execution:8236352607654_e1","ExecutedBy":"a@x","ExecutedByName":"Zoë","ExecutionId":"e1",
			"InputData":"{\"b\": 1, \"a\": \"\\u00e9\"}","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12.345678","Status":"Running","WorkflowName":"wf"}`,
		index: []string{
			`{"PartitionKey":"GLOBAL","RowKey":"userexec:a@x:e1","ExecutedByName":"Zoë","ExecutionId":"e1","OrganizationId":"7c9e","StartedAt":"2025-11-20T14:03:12.345678","Status":"Running","WorkflowName":"wf"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:7c9e:e1","ExecutedBy":"a@x","ExecutedByName":"Zoë","ExecutionId":"e1","OrganizationId":"7c9e","StartedAt":"2025-11-20T14:03:12.345678","Status":"Running"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"status:Running:e1","ExecutedBy":"a@x","ExecutedByName":"Zoë","ExecutionId":"e1","OrganizationId":"7c9e","StartedAt":"2025-11-20T14:03:12.345678","Status":"Running","UpdatedAt":"2025-11-21T12:00:00","WorkflowName":"wf"}`,
		},
		deletes: []string{}, // a new row: no old status
	}, {
		name: "a finished GLOBAL execution from a form, new to the tables: no status row, none to delete",
		doc: `{"id":"e2","type":"execution","scope":"GLOBAL","executionId":"e2","workflowName":"wf","formId":"f1","executedBy":"a@x",
			"executedByName":"A","status":"Failed","inputData":{},"result":null,"resultInBlob":false,"errorMessage":"boom","durationMs":1500,
			"startedAt":"2025-11-20T14:03:12.0000000Z","completedAt":"2025-11-20T14:03:13.5000000Z","errorType":"E","errorDetails":{"k":[1]},
			"integrationCalls":[],"ttl":5}`,
		table: TableEntities,
		row: `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e2","CompletedAt":"2025-11-20T14:03:13.500000","DurationMs":1500,
			"ErrorDetails":"{\"k\": [1]}","ErrorMessage":"boom","ErrorType":"E","ExecutedBy":"a@x","ExecutedByName":"A","ExecutionId":"e2",
			"FormId":"f1","InputData":"{}","IntegrationCalls":"[]","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12","Status":"Failed","WorkflowName":"wf"}`,
		index: []string{
			`{"PartitionKey":"GLOBAL","RowKey":"userexec:a@x:e2","CompletedAt":"2025-11-20T14:03:13.500000","DurationMs":1500,"ErrorMessage":"boom","ExecutedByName":"A","ExecutionId":"e2","FormId":"f1","StartedAt":"2025-11-20T14:03:12","Status":"Failed","WorkflowName":"wf"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:GLOBAL:e2","CompletedAt":"2025-11-20T14:03:13.500000","DurationMs":1500,"ErrorMessage":"boom","ExecutedBy":"a@x","ExecutedByName":"A","ExecutionId":"e2","FormId":"f1","StartedAt":"2025-11-20T14:03:12","Status":"Failed"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"formexec:f1:e2","CompletedAt":"2025-11-20T14:03:13.500000","DurationMs":1500,"ErrorMessage":"boom","ExecutedBy":"a@x","ExecutedByName":"A","ExecutionId":"e2","StartedAt":"2025-11-20T14:03:12","Status":"Failed","WorkflowName":"wf"}`,
		},
		deletes: []string{},
	}, {
		name: "completed in Cosmos DB: the row's unchanged text stays, the old index keys go",
		doc: `{"id":"e3","type":"execution","scope":"GLOBAL","executionId":"e3","workflowName":"wf2","formId":null,"executedBy":"a@x",
			"status":"Success","inputData":{"x":1},"result":{"ok":true},"resultType":"json","resultInBlob":false,"durationMs":10,
			"startedAt":"2025-11-20T14:03:12.0000000Z","completedAt":"2025-11-20T14:03:12.0100000Z",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"execution:8236352607999_e3","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e3","ExecutionId":"e3","WorkflowName":"wf","FormId":"f9",
			"ExecutedBy":"a@x","Status":"Running","InputData":"{\"x\":1}","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12"}`,
		table: TableEntities,
		row: `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e3","CompletedAt":"2025-11-20T14:03:12.010000","DurationMs":10,
			"ExecutedBy":"a@x","ExecutionId":"e3","InputData":"{\"x\":1}","Result":"{\"ok\": true}","ResultInBlob":false,
			"StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf2"}`,
		index: []string{
			`{"PartitionKey":"GLOBAL","RowKey":"userexec:a@x:e3","CompletedAt":"2025-11-20T14:03:12.010000","DurationMs":10,"ExecutionId":"e3","StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf2"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf2:GLOBAL:e3","CompletedAt":"2025-11-20T14:03:12.010000","DurationMs":10,"ExecutedBy":"a@x","ExecutionId":"e3","StartedAt":"2025-11-20T14:03:12","Status":"Success"}`,
		},
		// The old status's index row (the row said Running), not every
		// indexed status's.
		deletes: []string{"Relationships GLOBAL workflowexec:wf:GLOBAL:e3", "Relationships GLOBAL formexec:f9:e3", "Relationships GLOBAL status:Running:e3"},
	}, {
		name:  "an index key without executedBy or workflowName is not written",
		doc:   `{"id":"e4","type":"execution","scope":"GLOBAL","executionId":"e4","status":"Success","startedAt":"2025-11-20T14:03:12Z"}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e4","ExecutionId":"e4","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12","Status":"Success"}`,
		index: []string{}, deletes: []string{},
		warn: []string{"index row not written: userexec (no executedBy)", "index row not written: workflowexec (no workflowName)"},
	}, {
		name: "fields the application does not write are not written",
		doc: `{"id":"e5","type":"execution","scope":"GLOBAL","executionId":"e5","workflowName":"wf","executedBy":"a@x","status":"Cancelled",
			"startedAt":"2025-11-20T14:03:12Z","resultType":"json","resultSize":5,"logsBlobPath":"e5/logs.json","variables":{"a":1},"ttl":3}`,
		table: TableEntities,
		row:   `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e5","ExecutedBy":"a@x","ExecutionId":"e5","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12","Status":"Cancelled","WorkflowName":"wf"}`,
		index: []string{
			`{"PartitionKey":"GLOBAL","RowKey":"userexec:a@x:e5","ExecutionId":"e5","StartedAt":"2025-11-20T14:03:12","Status":"Cancelled","WorkflowName":"wf"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:GLOBAL:e5","ExecutedBy":"a@x","ExecutionId":"e5","StartedAt":"2025-11-20T14:03:12","Status":"Cancelled"}`,
		},
		deletes: []string{},
		warn:    []string{"doc field not written: variables"},
	}})
}

// TestReverseStaleStatusIndex: the status index row reverse deletes is the
// old status's, as the repository deletes it: the existing row's status
// when it was indexed (Pending, Running) and the doc's is another; none
// for a new row or an unchanged status; every indexed status but the
// doc's when the existing row's status cannot be read.
func TestReverseStaleStatusIndex(t *testing.T) {
	doc := func(status string) string {
		return `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"` + status + `",
			"startedAt":"2025-11-20T14:03:12Z","_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"execution:8236352607999_e1","timestamp":null,"hash":"x"}}`
	}
	existing := func(status string) string {
		return `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","ExecutionId":"e1","WorkflowName":"wf","ExecutedBy":"a@x"` + status + `,"StartedAt":"2025-11-20T14:03:12"}`
	}
	for _, tc := range []struct {
		name, doc, existing string
		want                []string
	}{
		{"a new row", doc("Running"), "", nil},
		{"Pending to Running", doc("Running"), existing(`,"Status":"Pending"`), []string{"status:Pending:e1"}},
		{"Running to Success", doc("Success"), existing(`,"Status":"Running"`), []string{"status:Running:e1"}},
		{"Running still", doc("Running"), existing(`,"Status":"Running"`), nil},
		{"Failed to Success: the old status had no index", doc("Success"), existing(`,"Status":"Failed"`), nil},
		{"no status in the row", doc("Success"), existing(""), []string{"status:Pending:e1", "status:Running:e1"}},
		{"a status that is not a string", doc("Pending"), existing(`,"Status":7`), []string{"status:Running:e1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := runRev(t, tc.doc, tc.existing, TableEntities, nil)
			var got []string
			for _, d := range ro.Delete {
				if strings.HasPrefix(d.RowKey, "status:") {
					got = append(got, d.RowKey)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("status rows deleted %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReverseFieldsNotWritten: fields given by the keys or scope are not
// written; a value that disagrees with them is a warning.
func TestReverseFieldsNotWritten(t *testing.T) {
	mig := func(table, pk, rk string) string {
		return `"_migration":{"table":"` + table + `","partitionKey":"` + pk + `","rowKey":"` + rk + `","timestamp":null,"hash":"x"}`
	}
	runRevCases(t, []revCase{{
		name:  "config key that differs from the RowKey's",
		doc:   `{"id":"config-a","type":"config","scope":"GLOBAL","key":"b","value":"v","configType":"string",` + mig("Config", "GLOBAL", "config:a") + `}`,
		table: TableConfig, row: `{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"string","Value":"v"}`,
		warn: []string{"doc field not written: key"},
	}, {
		name:  "schedule's workflowName is its RowKey; description is the WorkflowName property",
		doc:   `{"id":"schedule-s","type":"schedule","scope":"GLOBAL","workflowName":"other","description":"Nightly",` + mig("Config", "GLOBAL", "schedule:s") + `}`,
		table: TableConfig, row: `{"PartitionKey":"GLOBAL","RowKey":"schedule:s","WorkflowName":"Nightly"}`,
		warn: []string{"doc field not written: workflowName"},
	}, {
		name:  "a form's isGlobal is its scope",
		doc:   `{"id":"form-f","type":"form","scope":"org-7c9e","isGlobal":true}`,
		table: TableEntities, row: `{"PartitionKey":"7c9e","RowKey":"form:f"}`,
		warn: []string{"doc field not written: isGlobal"},
	}, {
		name:  "a global key is global",
		doc:   `{"id":"workflowkey-k","type":"workflow_key","scope":"GLOBAL","keyId":"k","isGlobal":false,` + mig("Config", "GLOBAL", "systemconfig:globalkey:k") + `}`,
		table: TableConfig, row: `{"PartitionKey":"GLOBAL","RowKey":"systemconfig:globalkey:k","KeyId":"k"}`,
		warn: []string{"doc field not written: isGlobal"},
	}, {
		name:  "an integration's name equal to the RowKey's is not written, a different one is",
		doc:   `{"id":"integration-halo","type":"integration","scope":"GLOBAL","name":"Halo PSA"}`,
		table: TableConfig, row: `{"PartitionKey":"GLOBAL","RowKey":"integration:halo","Name":"Halo PSA"}`,
	}})
}

// TestReverseDocErrors: docs that are not what the tool reads, and a
// _migration that disagrees with the doc.
func TestReverseDocErrors(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		reason    ReverseReason
		detail    string
	}{
		{"no type", `{"id":"x","scope":"GLOBAL"}`, ReverseBadDoc, "no string id or type"},
		{"no id", `{"type":"role","scope":"GLOBAL"}`, ReverseBadDoc, "no string id or type"},
		{"_migration not an object", `{"id":"role-r","type":"role","scope":"GLOBAL","_migration":"x"}`, ReverseBadDoc, "_migration is not an object"},
		{"_migration without rowKey", `{"id":"role-r","type":"role","scope":"GLOBAL","_migration":{"table":"Entities","partitionKey":"GLOBAL","timestamp":null,"hash":"x"}}`,
			ReverseBadDoc, "_migration.rowKey is not a string"},
		{"_migration of another table", `{"id":"role-r","type":"role","scope":"GLOBAL","_migration":{"table":"Users","partitionKey":"GLOBAL","rowKey":"role:r","timestamp":null,"hash":"x"}}`,
			ReverseBadDoc, "_migration.table is not Config, Entities or Relationships"},
		{"_migration timestamp not a timestamp", `{"id":"role-r","type":"role","scope":"GLOBAL","_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"role:r","timestamp":"soon","hash":"x"}}`,
			ReverseBadDoc, "_migration.timestamp is not a timestamp"},
		{"type that is not the row's kind", `{"id":"role-r","type":"user","scope":"GLOBAL","_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"role:r","timestamp":null,"hash":"x"}}`,
			ReverseKindMismatch, `doc type "user", _migration row of kind "role" gives "role"`},
		{"an index row is never a doc", `{"id":"x","type":"relationship","scope":"GLOBAL","_migration":{"table":"Relationships","partitionKey":"GLOBAL","rowKey":"userexec:a:b","timestamp":null,"hash":"x"}}`,
			ReverseKindMismatch, `_migration names a Relationships row of kind "userexec", which is not migrated as a doc`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ro := runRev(t, c.doc, "", "", nil)
			if ro.DeadLetter == nil || ro.DeadLetter.Reason != c.reason || ro.DeadLetter.Detail != c.detail {
				t.Fatalf("dead letter %+v, want %q %q", ro.DeadLetter, c.reason, c.detail)
			}
		})
	}
}

// TestReverseCallerErrors: what only a caller can get wrong is an error.
func TestReverseCallerErrors(t *testing.T) {
	doc, err := DecodeDocOrdered([]byte(`{"id":"role-r","type":"role","scope":"GLOBAL"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReverseDoc(doc, nil, Options{ExecutionTTL: TTLFull}); err == nil || !strings.Contains(err.Error(), "current time") {
		t.Errorf("no Now: %v", err)
	}
	if _, err := ReverseDoc(doc, nil, Options{Now: testNow, BlobThreshold: -1}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("invalid options: %v", err)
	}
	other := mkRow(t, TableEntities, `{"PartitionKey":"GLOBAL","RowKey":"role:s"}`)
	if _, err := ReverseDoc(doc, &other, revOpts()); err == nil || !strings.Contains(err.Error(), `the doc's row is Entities "GLOBAL" "role:r"`) {
		t.Errorf("existing row of other keys: %v", err)
	}
	bad := Row{Table: TableEntities, PartitionKey: "GLOBAL", RowKey: "role:r", DecodeError: "property X: not an Int32"}
	ro, err := ReverseDoc(doc, &bad, revOpts())
	if err != nil || ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseExistingUndecodable {
		t.Errorf("undecodable existing row: %v %+v", err, ro.DeadLetter)
	}
	if _, err := DecodeDocOrdered([]byte(`[1]`)); err == nil {
		t.Error("DecodeDocOrdered of an array: no error")
	}
	if _, err := DecodeDocOrdered([]byte(`{"a":`)); err == nil {
		t.Error("DecodeDocOrdered of a cut text: no error")
	}
}

// TestReverseExistingRowNotReadable: when the forward transform cannot
// read the existing row (a dead letter), nothing counts as unchanged:
// every field is written from the doc, the rest of the row kept.
func TestReverseExistingRowNotReadable(t *testing.T) {
	runRevCases(t, []revCase{{
		name: "the existing row's InputData is not JSON",
		doc: `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"Success",
			"inputData":{"a":1},"resultInBlob":false,"startedAt":"2025-11-20T14:03:12.0000000Z",
			"_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"execution:8236352607999_e1","timestamp":null,"hash":"x"}}`,
		existing: `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","InputData":"{'a': 1}","StartedAt":"2025-11-20T14:03:12+00:00","Extra":"kept"}`,
		table:    TableEntities,
		row: `{"PartitionKey":"GLOBAL","RowKey":"execution:8236352607999_e1","ExecutedBy":"a@x","ExecutionId":"e1","Extra":"kept",
			"InputData":"{\"a\": 1}","ResultInBlob":false,"StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf"}`,
		index: []string{
			`{"PartitionKey":"GLOBAL","RowKey":"userexec:a@x:e1","ExecutionId":"e1","StartedAt":"2025-11-20T14:03:12","Status":"Success","WorkflowName":"wf"}`,
			`{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:GLOBAL:e1","ExecutedBy":"a@x","ExecutionId":"e1","StartedAt":"2025-11-20T14:03:12","Status":"Success"}`,
		},
		deletes: []string{"Relationships GLOBAL status:Pending:e1", "Relationships GLOBAL status:Running:e1"},
	}})
}

// TestReverseLimits: rows Table Storage would refuse are dead letters.
func TestReverseLimits(t *testing.T) {
	big := strings.Repeat("a", 32768)
	ok := runRev(t, `{"id":"role-r","type":"role","scope":"GLOBAL","description":"`+big+`"}`, "", "", nil)
	if ok.DeadLetter != nil {
		t.Errorf("32,768 UTF-16 units: %+v", ok.DeadLetter)
	}
	ro := runRev(t, `{"id":"role-r","type":"role","scope":"GLOBAL","description":"`+big+`😀"}`, "", "", nil)
	if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReversePropertyTooLarge || ro.DeadLetter.Detail != "Description of the row is 65540 bytes in UTF-16" {
		t.Errorf("64 KiB + 4 bytes: %+v", ro.DeadLetter)
	}
	var b strings.Builder
	b.WriteString(`{"id":"role-r","type":"role","scope":"GLOBAL"`)
	for i := range 20 {
		fmt.Fprintf(&b, `,"p%02d":"%s"`, i, big[:30000])
	}
	b.WriteString("}")
	ro = runRev(t, b.String(), "", "", nil)
	if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseRowTooLarge {
		t.Errorf("20 × 60,000 bytes: %+v", ro.DeadLetter)
	}
	b.Reset()
	b.WriteString(`{"id":"role-r","type":"role","scope":"GLOBAL"`)
	for i := range 253 {
		fmt.Fprintf(&b, `,"p%03d":1`, i)
	}
	b.WriteString("}")
	ro = runRev(t, b.String(), "", "", nil)
	if ro.DeadLetter == nil || ro.DeadLetter.Reason != ReverseRowTooLarge || ro.DeadLetter.Detail != "the row has 253 properties, more than 252" {
		t.Errorf("253 properties: %+v", ro.DeadLetter)
	}
}

func TestDocMigration(t *testing.T) {
	d, err := DecodeDocOrdered([]byte(`{"id":"x","_migration":{"table":"Config","partitionKey":"GLOBAL","rowKey":"branding","timestamp":"2026-11-21T12:00:00.0000000Z","hash":"ab"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := DocMigration(d)
	if err != nil || !ok || m != (Migration{TableConfig, "GLOBAL", "branding", "2026-11-21T12:00:00.0000000Z", "ab"}) {
		t.Errorf("%+v %v %v", m, ok, err)
	}
	if _, ok, err := DocMigration(Doc{{"id", "x"}}); ok || err != nil {
		t.Errorf("no _migration: %v %v", ok, err)
	}
}

func TestDiffRows(t *testing.T) {
	a := mkRow(t, TableEntities, `{"PartitionKey":"GLOBAL","RowKey":"x","S":"s","I":1,"D@odata.type":"Edm.Double","D":"NaN","T@odata.type":"Edm.DateTime","T":"2026-01-01T00:00:00Z","B@odata.type":"Edm.Binary","B":"AAE="}`)
	b := mkRow(t, TableEntities, `{"PartitionKey":"GLOBAL","RowKey":"x","S":"s","I":1,"D@odata.type":"Edm.Double","D":"NaN","T@odata.type":"Edm.DateTime","T":"2026-01-01T00:00:00Z","B@odata.type":"Edm.Binary","B":"AAE="}`)
	if d := DiffRows(a, b); d != nil {
		t.Errorf("same rows: %v", d)
	}
	c := mkRow(t, TableConfig, `{"PartitionKey":"SYSTEM","RowKey":"x","S":"t","I@odata.type":"Edm.Int64","I":"1","X":"x","T@odata.type":"Edm.DateTime","T":"2026-01-01T00:00:00.0000001Z","B@odata.type":"Edm.Binary","B":"AAE="}`)
	if d, want := DiffRows(a, c), []string{"Table", "PartitionKey", "D", "I", "S", "T", "X"}; !slices.Equal(d, want) {
		t.Errorf("DiffRows = %v, want %v", d, want)
	}
}

// TestReverseDeterministic: the same doc gives the same outcome, and
// ReverseDoc does not modify its inputs.
func TestReverseDeterministic(t *testing.T) {
	js := `{"id":"e1","type":"execution","scope":"org-7c9e","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"Pending",
		"inputData":{"z":1,"a":2},"startedAt":"2025-11-20T14:03:12Z","zeta":1,"alpha":2,
		"_migration":{"table":"Entities","partitionKey":"7c9e","rowKey":"execution:8236352607999_e1","timestamp":null,"hash":"x"}}`
	existing := `{"PartitionKey":"7c9e","RowKey":"execution:8236352607999_e1","Zeta":0,"alpha":1,"Status":"Running","ExecutedBy":"b@x"}`
	first := runRev(t, js, existing, TableEntities, nil)
	for range 20 {
		again := runRev(t, js, existing, TableEntities, nil)
		if outcomeText(again) != outcomeText(first) {
			t.Fatalf("outcomes differ:\n%v\n%v", first, again)
		}
	}
	doc, _ := DecodeDocOrdered([]byte(js))
	row := mkRow(t, TableEntities, existing)
	before := fmt.Sprint(doc, row)
	if _, err := ReverseDoc(doc, &row, revOpts()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(doc, row) != before {
		t.Error("ReverseDoc modified its inputs")
	}
}

// TestReverseNowIsUsedOnlyForUpdatedAt: the clock shows only in the
// status index row's UpdatedAt.
func TestReverseNowIsUsedOnlyForUpdatedAt(t *testing.T) {
	js := `{"id":"e1","type":"execution","scope":"GLOBAL","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"Pending","startedAt":"2025-11-20T14:03:12Z"}`
	a := runRev(t, js, "", "", nil)
	later := Options{Now: testNow.Add(90 * time.Minute)}
	b := runRev(t, js, "", "", &later)
	if DiffRows(a.Row, b.Row) != nil || len(a.Index) != 3 {
		t.Fatalf("rows differ or %d index rows", len(a.Index))
	}
	for i := range a.Index {
		if d := DiffRows(a.Index[i], b.Index[i]); (i < 2 && d != nil) || (i == 2 && !slices.Equal(d, []string{"UpdatedAt"})) {
			t.Errorf("index %s differs in %v", a.Index[i].RowKey, d)
		}
	}
	if got := b.Index[2].Props["UpdatedAt"].Str; got != "2025-11-21T13:30:00" {
		t.Errorf("UpdatedAt %q", got)
	}
}

// TestLooksTruncated: every id SanitizeID truncates looks truncated, and
// no id short enough to be kept whole does.
func TestLooksTruncated(t *testing.T) {
	pieces := []string{"a", "é", "€", "😀", "/", "%", "?", "~", "0"}
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for i := 0; b.Len() < 200+n%200; i++ {
			b.WriteString(pieces[(i*7+n)%len(pieces)])
			if n%5 == 0 {
				b.WriteString(pieces[n%len(pieces)])
			}
		}
		id, _, truncated := SanitizeID(b.String())
		if truncated != looksTruncated(id) {
			t.Fatalf("SanitizeID(%q) = %q (truncated %v), looksTruncated %v", b.String(), id, truncated, looksTruncated(id))
		}
	}
}

// FuzzReverseDoc: any JSON object is a doc ReverseDoc answers without an
// error and without panicking; what it writes has keys Table Storage
// accepts and properties of the Edm types it knows, and the same doc gives
// the same outcome.
func FuzzReverseDoc(f *testing.F) {
	for _, s := range []string{
		`{"id":"e1","type":"execution","scope":"org-7c9e","executionId":"e1","workflowName":"wf","executedBy":"a@x","status":"Running","inputData":{"a":[1,2.5]},"startedAt":"2025-11-20T14:03:12Z"}`,
		`{"id":"config-a-b","type":"config","scope":"GLOBAL","key":"a_b","value":{"x":null},"configType":"json"}`,
		`{"id":"user-a@x","type":"user","scope":"GLOBAL","email":"a@x","n":1e400,"m":-0.0,"t":[{}]}`,
		`{"id":"userperm-a-b","type":"relationship","scope":"GLOBAL","relationship":"userperm","userId":"a","orgId":"b"}`,
		`{"id":"x","type":"thing","scope":"GLOBAL","_migration":{"table":"Entities","partitionKey":"GLOBAL","rowKey":"thing:x","timestamp":null,"hash":"h"}}`,
		`{"id":"role-\u0000","type":"role","scope":"SYSTEM","createdAt":"2025-02-30T00:00:00"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		doc, err := DecodeDocOrdered([]byte(s))
		if err != nil {
			return
		}
		ro, err := ReverseDoc(doc, nil, revOpts())
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		again, _ := ReverseDoc(doc, nil, revOpts())
		if outcomeText(ro) != outcomeText(again) {
			t.Fatalf("%q: two outcomes", s)
		}
		if ro.DeadLetter != nil {
			return
		}
		for _, row := range append([]Row{ro.Row}, ro.Index...) {
			for _, k := range []string{row.PartitionKey, row.RowKey} {
				if c, bad := forbiddenKeyChar(k); bad {
					t.Fatalf("%q: key %q has %U", s, k, c)
				}
			}
			for name, v := range row.Props {
				switch v.Type {
				case EdmString, EdmBoolean, EdmInt32, EdmInt64, EdmDouble, EdmDateTime, EdmGuid, EdmBinary:
				default:
					t.Fatalf("%q: property %s has type %q", s, name, v.Type)
				}
			}
			if _, err := DecodeEntity(row.Table, EncodeEntity(row)); err != nil {
				t.Fatalf("%q: the row does not read back: %v", s, err)
			}
		}
	})
}

// outcomeText renders an outcome for comparison, the dead letter by value.
func outcomeText(ro ReverseOutcome) string {
	dl := ReverseDeadLetter{}
	if ro.DeadLetter != nil {
		dl = *ro.DeadLetter
	}
	ro.DeadLetter = nil
	return fmt.Sprintf("%+v %+v", ro, dl)
}

// TestDocRowRef: the keys to read the existing row under are the keys
// ReverseDoc writes, and a doc without keys is the same dead letter.
func TestDocRowRef(t *testing.T) {
	for _, js := range []string{
		`{"id":"e1","type":"execution","scope":"org-7c9e","executionId":"e1","startedAt":"2025-11-20T14:03:12Z"}`,
		`{"id":"org-3f25","type":"organization","scope":"org-3f25","_migration":{"table":"Entities","partitionKey":"2f1a","rowKey":"org:org-3f25","timestamp":null,"hash":"x"}}`,
		`{"id":"x","type":"thing","scope":"GLOBAL"}`,
	} {
		doc, err := DecodeDocOrdered([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		ref, dl := DocRowRef(doc)
		ro, err := ReverseDoc(doc, nil, revOpts())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case dl != nil:
			if ro.DeadLetter == nil || *dl != *ro.DeadLetter {
				t.Errorf("%s: DocRowRef %+v, ReverseDoc %+v", js, *dl, ro.DeadLetter)
			}
		case ref != (RowRef{ro.Row.Table, ro.Row.PartitionKey, ro.Row.RowKey}):
			t.Errorf("%s: DocRowRef %+v, ReverseDoc's row %s %q %q", js, ref, ro.Row.Table, ro.Row.PartitionKey, ro.Row.RowKey)
		}
	}
}
