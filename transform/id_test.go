package transform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEncodeID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain-id_1.2@x", "plain-id_1.2@x"},
		{"a/b", "a%2Fb"},
		{`a\b`, "a%5Cb"},
		{"a?b#c", "a%3Fb%23c"},
		{"100%", "100%25"},
		{"%2F", "%252F"},
		{"tab\there\nnl", "tab%09here%0Anl"},
		{"\x00\x1f\x7f", "%00%1F%7F"},
		{"o'brien <x> \"q\" ~ space", "o'brien <x> \"q\" ~ space"},
		{"zoë/müller", "zoë%2Fmüller"},
		{"\u0080\u2028", "\u0080\u2028"}, // only ASCII controls are escaped
		{"", ""},
	}
	for _, tt := range tests {
		got := EncodeID(tt.in)
		if got != tt.want {
			t.Errorf("EncodeID(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := DecodeID(got)
		if err != nil || back != tt.in {
			t.Errorf("DecodeID(%q) = %q, %v; want %q", got, back, err, tt.in)
		}
	}
	for _, bad := range []string{"%", "%2", "%G0", "a%zz"} {
		if got, err := DecodeID(bad); err == nil {
			t.Errorf("DecodeID(%q) = %q, want an error", bad, got)
		}
	}
	if got, err := DecodeID("%2f"); err != nil || got != "/" {
		t.Errorf("DecodeID of lower-case hex = %q, %v", got, err)
	}
}

func TestSanitizeID(t *testing.T) {
	a255 := strings.Repeat("a", 255)
	a256 := strings.Repeat("a", 256)
	slashes := strings.Repeat("/", 85) // 255 bytes encoded
	tests := []struct {
		name               string
		in                 string
		want               string
		encoded, truncated bool
	}{
		{"short", "user-x", "user-x", false, false},
		{"encoded", "a/b", "a%2Fb", true, false},
		{"255 bytes stays", a255, a255, false, false},
		{"256 bytes truncated", a256, strings.Repeat("a", 238) + "~" + sha16(a256), false, true},
		{"encoding makes it 255", slashes, strings.Repeat("%2F", 85), true, false},
		{
			"encoding makes it too long; the cut does not split an escape",
			strings.Repeat("/", 86),
			strings.Repeat("%2F", 79) + "~" + sha16(strings.Repeat("%2F", 86)), // 79×3 = 237 bytes
			true, true,
		},
		{
			"the cut does not split a UTF-8 character",
			"x" + strings.Repeat("é", 200),                                             // 1 + 400 bytes; byte 238 is inside an 'é'
			"x" + strings.Repeat("é", 118) + "~" + sha16("x"+strings.Repeat("é", 200)), // 237 bytes
			false, true,
		},
	}
	for _, tt := range tests {
		got, enc, trunc := SanitizeID(tt.in)
		if got != tt.want || enc != tt.encoded || trunc != tt.truncated {
			t.Errorf("%s: SanitizeID = %q, %v, %v; want %q, %v, %v", tt.name, got, enc, trunc, tt.want, tt.encoded, tt.truncated)
		}
		if len(got) > MaxIDBytes || !utf8.ValidString(got) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", tt.name, len(got), utf8.ValidString(got))
		}
	}
}

func TestIDSetCollisions(t *testing.T) {
	opts := Options{Now: testNow}
	rows := []Row{
		mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"config:smtp-port","Type":"int","Value":"25"}`),
		mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"config:smtp_port","Type":"int","Value":"587"}`),
		// Same id in another scope is no collision.
		mkRow(t, TableConfig, `{"PartitionKey":"org-1","RowKey":"config:smtp_port","Type":"int","Value":"587"}`),
		// workflowkey and systemconfig:globalkey share the id space.
		mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"systemconfig:globalkey:k1"}`),
		mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"workflowkey:k1"}`),
		// Not docs: not recorded.
		mkRow(t, TableRelationships, `{"PartitionKey":"GLOBAL","RowKey":"userperm:u:o"}`),
		mkRow(t, TableRelationships, `{"PartitionKey":"GLOBAL","RowKey":"userperm:u:o"}`),
	}
	want := []string{
		"doc", `dead-letter: id collision: container entities, scope "GLOBAL", id "config-smtp-port" is already taken by an earlier row`,
		"doc", "doc", `dead-letter: id collision: container entities, scope "GLOBAL", id "workflowkey-k1" is already taken by an earlier row`,
		"kept-in-tables", "kept-in-tables",
	}
	ids := NewIDSet()
	for i, row := range rows {
		o := ids.Check(Transform(row, BlobFacts{}, opts))
		got := string(o.Disposition)
		if o.DeadLetter != "" {
			got += ": " + o.DeadLetter
			if o.Doc != nil || o.DocJSON != nil {
				t.Errorf("row %d: dead letter keeps its doc", i)
			}
		}
		if got != want[i] {
			t.Errorf("row %d: %s, want %s", i, got, want[i])
		}
	}
	if ids.Len() != 3 {
		t.Errorf("Len %d, want 3", ids.Len())
	}
	if !ids.Add("executions", "GLOBAL", "config-smtp-port") {
		t.Error("another container is no collision")
	}
}

func TestMigrationProvenance(t *testing.T) {
	row := mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"string","Value":"v"}`)
	row.Timestamp = time.Date(2025, 11, 20, 14, 3, 12, 345678900, time.UTC)
	row.ETag = `W/"datetime'2025-11-20T14%3A03%3A12.3456789Z'"`
	o := Transform(row, BlobFacts{}, testOpts())
	mig, _ := o.Doc.Get("_migration")
	js, _ := mig.(Doc).MarshalJSON()
	h, _ := Hash(o.Doc)
	want := `{"table":"Config","partitionKey":"GLOBAL","rowKey":"config:k","timestamp":"2025-11-20T14:03:12.3456789Z","hash":"` + h + `"}`
	if string(js) != want {
		t.Errorf("_migration %s, want %s", js, want)
	}
	// The hash is of the canonical doc without _migration.
	const canon = `{"configType":"string","description":null,"id":"config-k","key":"k","scope":"GLOBAL","secretRef":null,"type":"config","updatedAt":null,"updatedBy":null,"value":"v"}`
	if h != sha256Hex(canon) {
		t.Errorf("hash %s is not the SHA-256 of %s", h, canon)
	}
	// A zero Timestamp is null.
	row.Timestamp = time.Time{}
	o = Transform(row, BlobFacts{}, testOpts())
	mig, _ = o.Doc.Get("_migration")
	if ts, ok := mig.(Doc).Get("timestamp"); !ok || ts != nil {
		t.Errorf("timestamp of a zero Timestamp = %v, %v; want null", ts, ok)
	}
}

func TestDocTooLarge(t *testing.T) {
	// InputData is a JSON string; results move to blobs, so a large
	// InputData is what can make a doc too large.
	row := Row{Table: TableEntities, PartitionKey: "org-1", RowKey: "execution:8204816607654_e1",
		Props: map[string]Value{"CompletedAt": String("2025-11-20T12:00:00"), "InputData": String(`""`)}}
	overhead := len(Transform(row, BlobFacts{}, testOpts()).DocJSON)
	row.Props["InputData"] = String(`"` + strings.Repeat("x", MaxDocBytes-overhead) + `"`)
	if o := Transform(row, BlobFacts{}, testOpts()); o.Disposition != DispositionDoc || len(o.DocJSON) != MaxDocBytes {
		t.Errorf("doc of exactly 2 MB: %s %q, %d bytes", o.Disposition, o.DeadLetter, len(o.DocJSON))
	}
	row.Props["InputData"] = String(`"` + strings.Repeat("x", MaxDocBytes-overhead+1) + `"`)
	o := Transform(row, BlobFacts{}, testOpts())
	if want := "doc is 2097153 bytes, more than the 2 MB limit (2097152 bytes)"; o.Disposition != DispositionDeadLetter || o.DeadLetter != want {
		t.Errorf("%s %q, want dead letter %q", o.Disposition, o.DeadLetter, want)
	}
	if o.Doc != nil || o.DocJSON != nil || o.ID != "e1" {
		t.Errorf("dead letter outcome %+v", o.ID)
	}
	// TransformHashes counts the doc's size without writing it: the same
	// verdicts at the limit.
	if h := TransformHashes(row, BlobFacts{}, testOpts()); h.Disposition != DispositionDeadLetter || h.DeadLetter != o.DeadLetter {
		t.Errorf("TransformHashes one byte over: %s %q, want dead letter %q", h.Disposition, h.DeadLetter, o.DeadLetter)
	}
	row.Props["InputData"] = String(`"` + strings.Repeat("x", MaxDocBytes-overhead) + `"`)
	if o := TransformHashes(row, BlobFacts{}, testOpts()); o.Disposition != DispositionDoc || o.DocJSON != nil {
		t.Errorf("TransformHashes of a doc of exactly 2 MB: %s %q", o.Disposition, o.DeadLetter)
	}
}

func TestRedact(t *testing.T) {
	row := mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"oauth:x","Value":"v","HashedKey":"h","SecretRef":"s","ClientSecretRef":"c","OAuthResponseRef":"o","ClientId":"id"}`)
	red := RedactRow(row)
	for _, p := range []string{"Value", "HashedKey", "SecretRef", "ClientSecretRef", "OAuthResponseRef"} {
		if red.Props[p].Str != "***" {
			t.Errorf("RedactRow: %s = %+v", p, red.Props[p])
		}
		if row.Props[p].Str == "***" {
			t.Errorf("RedactRow changed the original row's %s", p)
		}
	}
	if red.Props["ClientId"].Str != "id" {
		t.Errorf("RedactRow redacted ClientId")
	}
	enc := string(EncodeEntity(red))
	if strings.Contains(enc, `"v"`) || strings.Contains(enc, `"h"`) {
		t.Errorf("redacted entity still has a secret: %s", enc)
	}

	o := Transform(row, BlobFacts{}, testOpts())
	rd := RedactDoc(o.Doc).(Doc)
	js, _ := rd.MarshalJSON()
	for _, secret := range []string{`"c"`, `"o"`} {
		if strings.Contains(string(js), secret) {
			t.Errorf("RedactDoc left %s in %s", secret, js)
		}
	}
	if v, _ := rd.Get("clientSecretRef"); v != "***" {
		t.Errorf("clientSecretRef = %v", v)
	}
	if v, _ := rd.Get("clientId"); v != "id" {
		t.Errorf("clientId = %v", v)
	}
	if v, _ := o.Doc.Get("clientSecretRef"); v != "c" {
		t.Errorf("RedactDoc changed the original doc")
	}
	m := RedactDoc(map[string]any{"value": "5", "secretRef": nil, "sourceValue": "x", "other": "y", "hashedKey": map[string]any{"k": "v"}}).(map[string]any)
	if m["value"] != "***" || m["secretRef"] != nil || m["sourceValue"] != "***" || m["other"] != "y" || m["hashedKey"] != "***" {
		t.Errorf("RedactDoc(map) = %v", m)
	}
	// A boolean or a number is no secret: a bool or int config's value.
	m = RedactDoc(map[string]any{"value": 5, "sourceValue": true, "secretRef": json.Number("7")}).(map[string]any)
	if m["value"] != 5 || m["sourceValue"] != true || m["secretRef"] != json.Number("7") {
		t.Errorf("RedactDoc(map) = %v, want booleans and numbers kept", m)
	}
	// Dead-letter reasons never carry a config value.
	o = Transform(mkRow(t, TableConfig, `{"PartitionKey":"GLOBAL","RowKey":"config:k","Type":"json","Value":"{secret-text"}`), BlobFacts{}, testOpts())
	if strings.Contains(o.DeadLetter, "secret-text") {
		t.Errorf("dead letter leaks the value: %s", o.DeadLetter)
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		opts Options
		err  string
	}{
		{Options{Now: testNow}, ""},
		{Options{ExecutionTTL: TTLFull}, ""},
		{Options{}, "the current time is not set (needed by execution ttl mode remaining)"},
		{Options{Now: testNow, BlobThreshold: -1}, "blob threshold -1 is negative"},
		{Options{Now: testNow, ExecutionTTL: "forever"}, `execution ttl mode "forever" is not remaining, full or none`},
		{Options{Now: testNow, Relationships: "drop"}, `relationships mode "drop" is not keep or migrate`},
	}
	for _, tt := range tests {
		err := tt.opts.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.err {
			t.Errorf("Validate(%+v) = %q, want %q", tt.opts, got, tt.err)
		}
	}
	o := Transform(Row{Table: TableConfig, PartitionKey: "GLOBAL", RowKey: "github"}, BlobFacts{}, Options{})
	if o.DeadLetter != "invalid options: the current time is not set (needed by execution ttl mode remaining)" {
		t.Errorf("Transform with invalid options: %q", o.DeadLetter)
	}
	if got := (Options{Now: testNow}).Fingerprint(); got != "blob-threshold=32768;execution-ttl=remaining;relationships=keep;strict=false" {
		t.Errorf("Fingerprint = %q", got)
	}
	if (Options{Now: testNow}).Fingerprint() != (Options{Now: testNow.Add(time.Hour), BlobThreshold: 32768, ExecutionTTL: TTLRemaining}).Fingerprint() {
		t.Error("Fingerprint depends on Now or on spelled-out defaults")
	}
	if o := Transform(Row{Table: "Other", PartitionKey: "GLOBAL", RowKey: "x"}, BlobFacts{}, testOpts()); o.DeadLetter != `unknown table "Other"` {
		t.Errorf("unknown table: %q", o.DeadLetter)
	}
}

func TestBlobFacts(t *testing.T) {
	var f BlobFacts
	if f.Exists(BlobLogs) {
		t.Error("zero BlobFacts has a blob")
	}
	f.Set(BlobLogs, 0)
	f.Set(BlobName(200), 5)
	if n, ok := f.Size(BlobLogs); !ok || n != 0 {
		t.Errorf("Size(logs) = %d, %v", n, ok)
	}
	if f.Exists(BlobName(200)) || BlobName(200).File() != "" {
		t.Error("unknown blob name")
	}
	for _, file := range []string{"result.json", "result.html", "result.txt", "logs.json", "variables.json", "snapshot.json"} {
		n, ok := ParseBlobName(file)
		if !ok || n.File() != file {
			t.Errorf("ParseBlobName(%q) = %v, %v", file, n, ok)
		}
	}
	if _, ok := ParseBlobName("result.xml"); ok {
		t.Error("ParseBlobName(result.xml)")
	}
}

// TestRedactRowKeepsWhatCannotBeSecret: the dead-letter row of a bool or
// int config shows its bad value, as do Values typed Boolean, number or
// DateTime; a string or json config's Value stays hidden.
func TestRedactRowKeepsWhatCannotBeSecret(t *testing.T) {
	for _, tc := range []struct {
		entity, want string
	}{
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"bool","Value":"yes"}`, `"yes"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"int","Value":"ten"}`, `"ten"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"string","Value":"hunter2"}`, `"***"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"json","Value":"{\"pw\":1"}`, `"***"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"secret_ref","Value":"kv-name"}`, `"***"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Value":"hunter2"}`, `"***"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Type":"bool","Value":true}`, `true`},
		{`{"PartitionKey":"GLOBAL","RowKey":"config:a","Value@odata.type":"Edm.Int64","Value":"42"}`, `"42"`},
		{`{"PartitionKey":"GLOBAL","RowKey":"workflowkey:a","Type":"bool","HashedKey":"h"}`, `"***"`},
	} {
		row := mkRow(t, TableConfig, tc.entity)
		enc := string(EncodeEntity(RedactRow(row)))
		prop := "Value"
		if strings.Contains(tc.entity, "HashedKey") {
			prop = "HashedKey"
		}
		if !strings.Contains(enc, `"`+prop+`":`+tc.want) {
			t.Errorf("%s: redacted %s, want %s %s", tc.entity, enc, prop, tc.want)
		}
	}
}
