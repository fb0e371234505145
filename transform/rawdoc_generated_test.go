package transform_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestRawDocGenerated: for generated executions and their index rows
// (fixtures.Generate), TransformMeaning's MeaningHash is the hash by
// meaning of its doc, and that doc — as written, as the service returns
// it, and as the application rewrites it (toISOString's timestamps, a
// null field) — reads with ReadDoc as DecodeDoc reads it and hashes by
// meaning to the same hash.
func TestRawDocGenerated(t *testing.T) {
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	blobs := transform.BlobIndex{}
	var rows []transform.Row
	if err := fixtures.Generate(fixtures.GenerateOptions{N: 1500, Seed: 39, Base: base}, func(it fixtures.Item) error {
		if it.Table == "" {
			return blobs.Add(it.Blob.Path, int64(len(it.Blob.Data)))
		}
		rows = append(rows, it.Row)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	app := strings.NewReplacer("0000Z\"", "Z\"", "\"status\":", "\"errorType\":null,\"status\":")
	docs := 0
	for _, opts := range []transform.Options{{Now: base}, {Now: base, ExecutionTTL: transform.TTLFull}} {
		for _, row := range rows {
			var facts transform.BlobFacts
			if row.Table == transform.TableEntities {
				facts = blobs.Facts(transform.ExecutionID(row))
			}
			o := transform.TransformMeaning(row, facts, opts)
			if o.Disposition != transform.DispositionDoc {
				continue
			}
			n, _ := transform.Normalize(row.Table, o.Doc)
			want, err := transform.Hash(n)
			if err != nil || o.MeaningHash != want {
				t.Fatalf("%s: TransformMeaning's MeaningHash %s, want %s (%v)", row.RowKey, o.MeaningHash, want, err)
			}
			served := append(bytes.Clone(o.DocJSON[:len(o.DocJSON)-1]), `,"_rid":"AA==","_etag":"\"00\"","_ts":1764000000}`...)
			for _, raw := range [][]byte{o.DocJSON, served, []byte(app.Replace(string(served)))} {
				m, err := transform.DecodeDoc(raw)
				if err != nil {
					t.Fatal(err)
				}
				d, err := transform.ReadDoc(raw)
				if err != nil {
					t.Fatal(err)
				}
				for name, v := range m {
					if got, ok := d.Get(name); !ok || !reflect.DeepEqual(got, v) {
						t.Fatalf("%s: Get(%q) = %#v, want %#v", row.RowKey, name, got, v)
					}
				}
				want, werr := transform.MeaningHash(row.Table, m)
				got, gerr := d.MeaningHash(row.Table)
				if got != want || werr != nil || gerr != nil {
					t.Fatalf("%s: MeaningHash %s, %v; of DecodeDoc's map %s, %v", row.RowKey, got, gerr, want, werr)
				}
				if bytes.Equal(raw, served) && got != o.MeaningHash {
					t.Fatalf("%s: the doc read back hashes %s by meaning, its row %s", row.RowKey, got, o.MeaningHash)
				}
				docs++
			}
		}
	}
	if docs < 3000 {
		t.Fatalf("only %d docs checked", docs)
	}
}
