package transform

import (
	"testing"
	"time"
)

// roleDoc is the doc of an otherwise empty role:r1 row in GLOBAL with the
// given properties after the listed ones.
func roleDoc(extra string) string {
	return `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,` +
		`"isActive":null,"createdBy":null,"createdAt":null,"updatedAt":null` + extra + `}`
}

func roleRow(props string) string {
	return `{"PartitionKey":"GLOBAL","RowKey":"role:r1"` + props + `}`
}

// Every value rule of SPEC §2, through unlisted properties of a role row
// (and its listed timestamps).
func TestValueRules(t *testing.T) {
	cases := []rowCase{
		{name: "string", entity: roleRow(`,"Foo":"bar"`), doc: roleDoc(`,"foo":"bar"`)},
		{name: "boolean", entity: roleRow(`,"Flag":true`), doc: roleDoc(`,"flag":true`)},
		{name: "int32", entity: roleRow(`,"N":-42`), doc: roleDoc(`,"n":-42`)},
		{name: "int64 small", entity: roleRow(`,"N@odata.type":"Edm.Int64","N":"123"`), doc: roleDoc(`,"n":123`)},
		{name: "int64 2^53", entity: roleRow(`,"N@odata.type":"Edm.Int64","N":"9007199254740992"`), doc: roleDoc(`,"n":9007199254740992`)},
		{name: "int64 -2^53", entity: roleRow(`,"N@odata.type":"Edm.Int64","N":"-9007199254740992"`), doc: roleDoc(`,"n":-9007199254740992`)},
		{
			name: "int64 above 2^53", entity: roleRow(`,"N@odata.type":"Edm.Int64","N":"9007199254740993"`),
			doc: roleDoc(`,"n":"9007199254740993"`), warn: []string{"int64 above 2^53: N"},
		},
		{
			name: "int64 below -2^53", entity: roleRow(`,"N@odata.type":"Edm.Int64","N":"-9223372036854775808"`),
			doc: roleDoc(`,"n":"-9223372036854775808"`), warn: []string{"int64 above 2^53: N"},
		},
		{name: "double 5.0 stays a double", entity: roleRow(`,"D@odata.type":"Edm.Double","D":5.0`), doc: roleDoc(`,"d":5.0`)},
		{name: "double unannotated", entity: roleRow(`,"D":1.25`), doc: roleDoc(`,"d":1.25`)},
		{name: "double large", entity: roleRow(`,"D@odata.type":"Edm.Double","D":1e300`), doc: roleDoc(`,"d":1e+300`)},
		{
			name: "double NaN", entity: roleRow(`,"D@odata.type":"Edm.Double","D":"NaN"`),
			doc: roleDoc(`,"d":"NaN"`), warn: []string{"double NaN or Infinity: D"},
		},
		{
			name: "double Infinity", entity: roleRow(`,"D@odata.type":"Edm.Double","D":"Infinity"`),
			doc: roleDoc(`,"d":"Infinity"`), warn: []string{"double NaN or Infinity: D"},
		},
		{
			name: "double -Infinity", entity: roleRow(`,"D@odata.type":"Edm.Double","D":"-Infinity"`),
			doc: roleDoc(`,"d":"-Infinity"`), warn: []string{"double NaN or Infinity: D"},
		},
		{
			name: "datetime", entity: roleRow(`,"When@odata.type":"Edm.DateTime","When":"2025-11-20T14:03:12.3456789Z"`),
			doc: roleDoc(`,"when":"2025-11-20T14:03:12.3456789Z"`),
		},
		{
			name: "guid", entity: roleRow(`,"G@odata.type":"Edm.Guid","G":"0f8fad5b-d9cb-469f-a165-70867728950e"`),
			doc: roleDoc(`,"g":"0f8fad5b-d9cb-469f-a165-70867728950e"`),
		},
		{name: "binary", entity: roleRow(`,"B@odata.type":"Edm.Binary","B":"AAEC/w=="`), doc: roleDoc(`,"b":"AAEC/w=="`)},
		{name: "binary empty", entity: roleRow(`,"B@odata.type":"Edm.Binary","B":""`), doc: roleDoc(`,"b":""`)},
		{
			name: "naive timestamp string is UTC", entity: roleRow(`,"CreatedAt":"2025-11-20T14:03:12.345678"`),
			doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":"2025-11-20T14:03:12.3456780Z","updatedAt":null}`,
		},
		{
			name: "naive timestamp without fraction", entity: roleRow(`,"UpdatedAt":"2025-11-20T14:03:12"`),
			doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":null,"updatedAt":"2025-11-20T14:03:12.0000000Z"}`,
		},
		{
			name: "offset timestamp converted to UTC", entity: roleRow(`,"CreatedAt":"2025-11-20T14:03:12.5+05:30"`),
			doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":"2025-11-20T08:33:12.5000000Z","updatedAt":null}`,
		},
		{
			name: "timestamp as Edm.DateTime", entity: roleRow(`,"CreatedAt@odata.type":"Edm.DateTime","CreatedAt":"2025-01-02T03:04:05Z"`),
			doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":"2025-01-02T03:04:05.0000000Z","updatedAt":null}`,
		},
		{
			name: "unparseable timestamp kept", entity: roleRow(`,"CreatedAt":"yesterday"`),
			doc:  `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":"yesterday","updatedAt":null}`,
			warn: []string{"unparseable timestamp: CreatedAt"},
		},
		{
			name: "timestamp of another type kept", entity: roleRow(`,"CreatedAt":17`),
			doc:  `{"id":"role-r1","type":"role","scope":"GLOBAL","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":17,"updatedAt":null}`,
			warn: []string{"unparseable timestamp: CreatedAt"},
		},
		{
			name: "unlisted timestamp name of the table is parsed", entity: roleRow(`,"LastLogin":"2025-11-20T14:03:12"`),
			doc: roleDoc(`,"lastLogin":"2025-11-20T14:03:12.0000000Z"`),
		},
		{
			name: "other strings that look like times are not touched", entity: roleRow(`,"Due":"2025-11-20T14:03:12"`),
			doc: roleDoc(`,"due":"2025-11-20T14:03:12"`),
		},
		{name: "etag string dropped", entity: roleRow(`,"etag":"W/\"x\""`), doc: roleDoc(``), warn: []string{"etag property dropped: etag"}},
		{name: "etag not a string kept", entity: roleRow(`,"etag":3`), doc: roleDoc(`,"etag":3`)},
		{name: "ETag is not etag", entity: roleRow(`,"ETag":"x"`), doc: roleDoc(`,"eTag":"x"`)},
		{
			name:   "listed properties camelCased, unlisted in name order",
			entity: roleRow(`,"Zed":1,"Name":"Admins","IsActive":true,"Alpha":"a","lower":"l","ÉCOLE":"e"`),
			doc: `{"id":"role-r1","type":"role","scope":"GLOBAL","name":"Admins","description":null,"isActive":true,` +
				`"createdBy":null,"createdAt":null,"updatedAt":null,"alpha":"a","zed":1,"lower":"l","éCOLE":"e"}`,
		},
		{
			name:   "unlisted property colliding with a doc property is renamed",
			entity: roleRow(`,"Type":"custom","Id":"x","Ttl":5,"_ts":1,"name":"n"`),
			doc:    roleDoc(`,"sourceId":"x","sourceTtl":5,"sourceType":"custom","source_ts":1,"sourceName":"n"`),
			warn: []string{"property renamed: Id → sourceId", "property renamed: Ttl → sourceTtl", "property renamed: Type → sourceType",
				"property renamed: _ts → source_ts", "property renamed: name → sourceName"},
		},
		{
			name: "org PartitionKey becomes org- scope", entity: `{"PartitionKey":"4b0c4c53-1f43-4e8e-a0a2-2a4cf6b0d0e1","RowKey":"role:r1"}`,
			scope: "org-4b0c4c53-1f43-4e8e-a0a2-2a4cf6b0d0e1",
			doc:   `{"id":"role-r1","type":"role","scope":"org-4b0c4c53-1f43-4e8e-a0a2-2a4cf6b0d0e1","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":null,"updatedAt":null}`,
		},
		{
			name: "org- PartitionKey kept", entity: `{"PartitionKey":"org-acme","RowKey":"role:r1"}`, scope: "org-acme",
			doc: `{"id":"role-r1","type":"role","scope":"org-acme","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":null,"updatedAt":null}`,
		},
		{
			name: "SYSTEM scope", entity: `{"PartitionKey":"SYSTEM","RowKey":"role:r1"}`, scope: "SYSTEM",
			doc: `{"id":"role-r1","type":"role","scope":"SYSTEM","name":null,"description":null,"isActive":null,"createdBy":null,"createdAt":null,"updatedAt":null}`,
		},
		{
			name: "empty PartitionKey", entity: `{"PartitionKey":"","RowKey":"role:r1"}`,
			disp: DispositionDeadLetter, dead: "empty PartitionKey",
		},
	}
	for i := range cases {
		cases[i].table = TableEntities
		if cases[i].disp == "" {
			cases[i].disp = DispositionDoc
		}
	}
	runRowCases(t, cases)
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = unparseable
	}{
		{"2025-11-20T14:03:12.345678", "2025-11-20T14:03:12.3456780Z"},
		{"2025-11-20T14:03:12", "2025-11-20T14:03:12.0000000Z"},
		{"2025-11-20 14:03:12.1", "2025-11-20T14:03:12.1000000Z"},
		{"2025-11-20T14:03", "2025-11-20T14:03:00.0000000Z"},
		{"2025-11-20T14:03:12Z", "2025-11-20T14:03:12.0000000Z"},
		{"2025-11-20t14:03:12z", "2025-11-20T14:03:12.0000000Z"},
		{"2025-11-20T14:03:12.1234567Z", "2025-11-20T14:03:12.1234567Z"},
		{"2025-11-20T14:03:12.123456789Z", "2025-11-20T14:03:12.1234567Z"},
		{"2025-11-20T14:03:12,5", "2025-11-20T14:03:12.5000000Z"},
		{"2025-11-20T14:03:12+00:00", "2025-11-20T14:03:12.0000000Z"},
		{"2025-11-20T14:03:12.345678+05:30", "2025-11-20T08:33:12.3456780Z"},
		{"2025-11-20T00:30:00-0800", "2025-11-20T08:30:00.0000000Z"},
		{"2025-11-20T23:30:00-01", "2025-11-21T00:30:00.0000000Z"},
		{"2025-11-20T14:03:12+05:30:15", "2025-11-20T08:32:57.0000000Z"},
		{"2024-02-29T00:00:00", "2024-02-29T00:00:00.0000000Z"},
		{"2000-02-29T00:00:00", "2000-02-29T00:00:00.0000000Z"},
		{"9999-12-31T23:59:59.9999999", "9999-12-31T23:59:59.9999999Z"},
		{"0001-01-01T00:00:00", "0001-01-01T00:00:00.0000000Z"},
		{"", ""},
		{"yesterday", ""},
		{"2025-11-20", ""},
		{"2025-11-20T", ""},
		{"2025-11-20T14", ""},
		{"2025-11-20T14:03:12.", ""},
		{"2025-11-20T14:03:12.1234567891", ""},
		{"2025-11-20T14:03:12+", ""},
		{"2025-11-20T14:03:12+05:", ""},
		{"2025-11-20T14:03:12+24:00", ""},
		{"2025-11-20T14:03:12 ", ""},
		{"2025-11-20T24:00:00", ""},
		{"2025-11-20T14:60:00", ""},
		{"2025-11-20T14:03:60", ""},
		{"2025-02-29T00:00:00", ""},
		{"1900-02-29T00:00:00", ""},
		{"2025-13-01T00:00:00", ""},
		{"2025-00-01T00:00:00", ""},
		{"2025-04-31T00:00:00", ""},
		{"0000-01-01T00:00:00", ""},
		{"0001-01-01T00:00:00+01:00", ""},
		{"9999-12-31T23:00:00-01:00", ""},
		{"+2025-11-20T14:03:12", ""},
		{"2025-1-20T14:03:12", ""},
		{"2025-11-20T14:03:12.5Z trailing", ""},
		{"２025-11-20T14:03:12", ""},
	}
	for _, tt := range tests {
		got, ok := ParseTimestamp(tt.in)
		s := ""
		if ok {
			s = FormatTimestamp(got)
		}
		if s != tt.want {
			t.Errorf("ParseTimestamp(%q) = %q, want %q", tt.in, s, tt.want)
		}
	}
}

func TestFormatTimestamp(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "2025-01-02T03:04:05.0000000Z"},
		{time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC), "2025-01-02T03:04:05.1234567Z"},
		{time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -3600)), "2025-01-02T04:04:05.0000000Z"},
		{time.Time{}, "0001-01-01T00:00:00.0000000Z"},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), ""},
	}
	for _, tt := range tests {
		if got := FormatTimestamp(tt.in); got != tt.want {
			t.Errorf("FormatTimestamp(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
