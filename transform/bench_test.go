package transform

import (
	"testing"
	"time"
)

// benchExecutionRow is a typical completed execution row of about 2 KB of
// annotated JSON: an InputData object, an inline JSON result and the usual
// scalar fields.
const benchExecutionRow = `{"PartitionKey":"7c9e6679-7425-40de-944b-e07fc1f90ae7",` +
	`"RowKey":"execution:8204816607654_23a49d34-736e-5da6-b534-a6707efd1911",` +
	`"Timestamp":"2025-11-20T14:03:14.1234567Z",` +
	`"ExecutionId":"23a49d34-736e-5da6-b534-a6707efd1911","WorkflowName":"onboard_user",` +
	`"FormId":"d4c3b2a1-9f8e-4d7c-8b6a-5f4e3d2c1b0a","ExecutedBy":"alice.admin@contoso.example",` +
	`"ExecutedByName":"Alice Admin","Status":"Success",` +
	`"InputData":"{\"first_name\": \"Jane\", \"last_name\": \"Doe\", \"email\": \"jane.doe@contoso.example\", \"department\": \"Finance\", \"manager\": \"bob@contoso.example\", \"licence\": \"E3\", \"groups\": [\"finance-all\", \"vpn-users\", \"sharepoint-finance\"], \"start_date\": \"2025-12-01\", \"notify\": true, \"phone\": \"+44 20 7946 0000\", \"notes\": \"Starts in Finance on the 1st; needs VPN and SharePoint access before day one. Laptop ordered via HD-20431.\"}",` +
	`"Result":"{\"success\": true, \"message\": \"User jane.doe@contoso.example created\", \"user\": {\"id\": \"5f0c1e2d-8b7a-4c3d-9e8f-0a1b2c3d4e5f\", \"upn\": \"jane.doe@contoso.example\", \"displayName\": \"Jane Doe\", \"licences\": [\"ENTERPRISEPACK\"], \"groups\": [{\"id\": \"g1\", \"name\": \"finance-all\"}, {\"id\": \"g2\", \"name\": \"vpn-users\"}, {\"id\": \"g3\", \"name\": \"sharepoint-finance\"}]}, \"steps\": [{\"name\": \"create_account\", \"ok\": true, \"ms\": 812}, {\"name\": \"assign_licence\", \"ok\": true, \"ms\": 433}, {\"name\": \"add_groups\", \"ok\": true, \"ms\": 951}, {\"name\": \"send_welcome\", \"ok\": true, \"ms\": 120}], \"warnings\": [], \"mailbox\": {\"provisioned\": true, \"quotaGB\": 50, \"archive\": false, \"aliases\": [\"j.doe@contoso.example\", \"jane@contoso.example\"]}, \"location\": \"London\", \"costCentre\": \"FIN-2201\", \"audit\": {\"ticket\": \"HD-20431\", \"approvedBy\": \"bob@contoso.example\", \"approvedAt\": \"2025-11-20T13:58:01\"}, \"elapsed\": 2.316}",` +
	`"ResultInBlob":false,"ErrorMessage":"","DurationMs":2316,` +
	`"StartedAt":"2025-11-20T14:03:12.345678","CompletedAt":"2025-11-20T14:03:14.661678"}`

// BenchmarkTransformExecution measures Transform on one typical execution
// row (decoding the entity is not included; it happens once per row in the
// reader). Run with -cpu 1 for the per-core figure.
func BenchmarkTransformExecution(b *testing.B) {
	row := mkRow(b, TableEntities, benchExecutionRow)
	var blobs BlobFacts
	blobs.Set(BlobLogs, 5120)
	opts := Options{Now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)}
	if o := Transform(row, blobs, opts); o.Disposition != DispositionDoc {
		b.Fatalf("disposition %s: %s", o.Disposition, o.DeadLetter)
	}
	b.SetBytes(int64(len(benchExecutionRow)))
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		Transform(row, blobs, opts)
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkDecodeEntity measures DecodeEntity on the same row (its fast
// path; encoding/json only for unusual input), for comparison with
// BenchmarkTransformExecution.
func BenchmarkDecodeEntity(b *testing.B) {
	b.SetBytes(int64(len(benchExecutionRow)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEntity(TableEntities, []byte(benchExecutionRow)); err != nil {
			b.Fatal(err)
		}
	}
}

// The benchmark row is "a typical ~2 KB execution row".
func TestBenchExecutionRowSize(t *testing.T) {
	if n := len(benchExecutionRow); n < 1900 || n > 2200 {
		t.Errorf("benchmark row is %d bytes, want about 2 KB", n)
	}
	t.Logf("benchmark row: %d bytes", len(benchExecutionRow))
}

// benchUserRow and benchOAuthRow are fixture rows of two kinds the kind
// table drives in both directions (Entities user, Config oauth).
const (
	benchUserRow = `{"PartitionKey":"GLOBAL","RowKey":"user:alice.admin@contoso.example",` +
		`"Timestamp":"2025-11-20T14:03:14.1234567Z",` +
		`"Email":"alice.admin@contoso.example","DisplayName":"Alice Admin","UserType":"PLATFORM",` +
		`"IsPlatformAdmin":true,"IsActive":true,"LastLogin":"2026-11-21T08:01:02.030405","CreatedAt":"2024-01-15T09:00:00",` +
		`"EntraUserId@odata.type":"Edm.Guid","EntraUserId":"8f14e45f-ceea-4e7a-9b1c-2a3b4c5d6e7f",` +
		`"LastEntraIdSync@odata.type":"Edm.DateTime","LastEntraIdSync":"2026-11-21T02:00:03.1234567Z"}`
	benchOAuthRow = `{"PartitionKey":"GLOBAL","RowKey":"oauth:microsoft_graph",` +
		`"Timestamp":"2025-11-20T14:03:14.1234567Z",` +
		`"Description":"Microsoft Graph (app-only)","OAuthFlowType":"client_credentials",` +
		`"ClientId":"3fa85f64-5717-4562-b3fc-2c963f66afa6","ClientSecretRef":"FAKE-SECRET-ref-oauth-graph-client",` +
		`"OAuthResponseRef":"FAKE-SECRET-ref-oauth-graph-response",` +
		`"AuthorizationUrl":"https://login.microsoftonline.example/common/oauth2/v2.0/authorize",` +
		`"TokenUrl":"https://login.microsoftonline.example/common/oauth2/v2.0/token",` +
		`"Scopes":"https://graph.microsoft.com/.default","RedirectUri":"https://bifrost.contoso.example/oauth/callback",` +
		`"TokenType":"Bearer","ExpiresAt":"2026-11-21T13:05:00.123456","Status":"completed","StatusMessage":"Token refreshed",` +
		`"LastRefreshAt":"2026-11-21T12:05:00.123456","LastTestAt":"2026-11-20T08:00:00","CreatedAt":"2026-06-01T09:00:00",` +
		`"CreatedBy":"alice.admin@contoso.example","UpdatedAt":"2026-11-21T12:05:00.123456","UpdatedBy":"system"}`
)

// BenchmarkTransformKinds measures the forward path (what run calls) on
// one row of each of three kinds.
func BenchmarkTransformKinds(b *testing.B) {
	opts := Options{Now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)}
	for _, c := range []struct{ name, table, entity string }{
		{"user", TableEntities, benchUserRow},
		{"oauth", TableConfig, benchOAuthRow},
		{"execution", TableEntities, benchExecutionRow},
	} {
		b.Run(c.name, func(b *testing.B) {
			row := mkRow(b, c.table, c.entity)
			if o := Transform(row, BlobFacts{}, opts); o.Disposition != DispositionDoc {
				b.Fatalf("disposition %s: %s", o.Disposition, o.DeadLetter)
			}
			b.ReportAllocs()
			for b.Loop() {
				Transform(row, BlobFacts{}, opts)
			}
		})
	}
}

// BenchmarkReverseDoc measures the reverse path (what reverse calls) on
// the doc Transform makes of each of the same rows, decoded as Cosmos DB
// returns it: "changed" has one field changed and the existing row (the
// usual reverse of an edited doc: the forward transform of the row runs
// too); "created" has no _migration and no existing row (a doc the
// application created).
func BenchmarkReverseDoc(b *testing.B) {
	opts := Options{Now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC), ExecutionTTL: TTLFull}
	for _, c := range []struct{ name, table, entity, field string }{
		{"user", TableEntities, benchUserRow, "displayName"},
		{"oauth", TableConfig, benchOAuthRow, "statusMessage"},
		{"execution", TableEntities, benchExecutionRow, "errorMessage"},
	} {
		row := mkRow(b, c.table, c.entity)
		o := Transform(row, BlobFacts{}, opts)
		if o.Disposition != DispositionDoc {
			b.Fatalf("%s: disposition %s: %s", c.name, o.Disposition, o.DeadLetter)
		}
		doc, err := DecodeDocOrdered(o.DocJSON)
		if err != nil {
			b.Fatal(err)
		}
		changed := make(Doc, len(doc))
		copy(changed, doc)
		created := make(Doc, 0, len(doc))
		for i, f := range doc {
			if f.Name == c.field {
				changed[i].Value = "changed"
			}
			if f.Name != "_migration" {
				created = append(created, changed[i])
			}
		}
		for _, v := range []struct {
			name     string
			doc      Doc
			existing *Row
		}{{"changed", changed, &row}, {"created", created, nil}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				ro, err := ReverseDoc(v.doc, v.existing, opts)
				if err != nil || ro.DeadLetter != nil {
					b.Fatalf("%v %+v", err, ro.DeadLetter)
				}
				if got := ro.Row.Props[pascal(c.field)]; got.Type != EdmString || got.Str != "changed" {
					b.Fatalf("%s is %+v, want the changed value", pascal(c.field), got)
				}
				b.ReportAllocs()
				for b.Loop() {
					ReverseDoc(v.doc, v.existing, opts)
				}
			})
		}
	}
}

// BenchmarkJudgeDoc measures what verify spends on each doc it reads: the
// doc the typical execution row makes, as the service returns it (system
// properties added), read for the members verify needs and hashed by
// meaning — "raw" with ReadDoc, "map" as before it, DecodeDoc then
// MeaningHash.
func BenchmarkJudgeDoc(b *testing.B) {
	o := Transform(mkRow(b, TableEntities, benchExecutionRow), BlobFacts{}, Options{Now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)})
	served := append(append([]byte{}, o.DocJSON[:len(o.DocJSON)-1]...),
		`,"_rid":"AAAAAA==","_self":"dbs/AA==/colls/AA==/docs/AAAAAA==/","_etag":"\"0000-0000\"","_attachments":"attachments/","_ts":1764000000}`...)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := ReadDoc(served)
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range []string{"scope", "id", "_migration", "_ts", "ttl"} {
				d.Get(name)
			}
			if _, err := d.MeaningHash(TableEntities); err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := DecodeDoc(served)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := MeaningHash(TableEntities, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTransformMeaning measures TransformMeaning (verify's transform
// of a row) on the typical execution row, beside Transform, and the hash
// by meaning as verify computed it before (Normalize, then Hash).
func BenchmarkTransformMeaning(b *testing.B) {
	row := mkRow(b, TableEntities, benchExecutionRow)
	opts := Options{Now: time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)}
	b.Run("TransformMeaning", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			TransformMeaning(row, BlobFacts{}, opts)
		}
	})
	b.Run("Transform", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Transform(row, BlobFacts{}, opts)
		}
	})
	b.Run("Normalize+Hash", func(b *testing.B) {
		n, _ := Normalize(TableEntities, Transform(row, BlobFacts{}, opts).Doc)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Hash(n); err != nil {
				b.Fatal(err)
			}
		}
	})
}
