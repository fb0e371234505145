package transform_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestReverseGeneratedRows runs the round trip of SPEC §15 over generated
// executions (fixtures.Generate): with the existing row every row comes
// back exactly; without it (an execution the application created in
// Cosmos DB) the row differs from the generated one only where Python
// writes differently: JSON texts in json.dumps form (the generator writes
// Go's compact JSON), results above the blob threshold in a blob. The
// generated index rows' properties are all in the index rows ReverseDoc
// writes, with the same values.
func TestReverseGeneratedRows(t *testing.T) {
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var items []fixtures.Item
	if err := fixtures.Generate(fixtures.GenerateOptions{N: 2500, Seed: 12, Base: base}, func(it fixtures.Item) error {
		items = append(items, it)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	blobs := transform.BlobIndex{}
	index := map[string][]transform.Row{} // execution id → its generated index rows
	var execs []transform.Row
	for _, it := range items {
		switch it.Table {
		case "":
			if err := blobs.Add(it.Blob.Path, int64(len(it.Blob.Data))); err != nil {
				t.Fatal(err)
			}
		case transform.TableRelationships:
			id := it.Row.RowKey[strings.LastIndexByte(it.Row.RowKey, ':')+1:]
			index[id] = append(index[id], it.Row)
		default:
			execs = append(execs, it.Row)
		}
	}
	opts := transform.Options{Now: base, ExecutionTTL: transform.TTLFull}
	var reencoded, toBlob, inBlob int
	for _, row := range execs {
		o := transform.Transform(row, blobs.Facts(transform.ExecutionID(row)), opts)
		if o.Disposition != transform.DispositionDoc {
			t.Fatalf("%s: %s %s", row.RowKey, o.Disposition, o.DeadLetter)
		}
		doc, err := transform.DecodeDocOrdered(o.DocJSON)
		if err != nil {
			t.Fatal(err)
		}
		existing := row
		with, err := transform.ReverseDoc(doc, &existing, opts)
		if err != nil || with.DeadLetter != nil {
			t.Fatalf("%s: %v %+v", row.RowKey, err, with.DeadLetter)
		}
		if d := transform.DiffRows(with.Row, row); d != nil || len(with.Uploads) != 0 || len(with.Warnings) != 0 {
			t.Fatalf("%s with its row: differs in %v, uploads %d, warnings %v", row.RowKey, d, len(with.Uploads), with.Warnings)
		}

		var noMig transform.Doc
		for _, f := range doc {
			if f.Name != "_migration" {
				noMig = append(noMig, f)
			}
		}
		created, err := transform.ReverseDoc(noMig, nil, opts)
		if err != nil || created.DeadLetter != nil {
			t.Fatalf("%s: %v %+v", row.RowKey, err, created.DeadLetter)
		}
		if created.Row.PartitionKey != row.PartitionKey || created.Row.RowKey != row.RowKey {
			t.Fatalf("keys %q %q, want %q %q", created.Row.PartitionKey, created.Row.RowKey, row.PartitionKey, row.RowKey)
		}
		for _, name := range transform.DiffRows(created.Row, row) {
			got, want := created.Row.Props[name], row.Props[name]
			switch {
			case name == "InputData" || (name == "Result" && got.Type == transform.EdmString):
				// The same JSON value, written as json.dumps writes it.
				if !sameJSONValue(t, got.Str, want.Str) || !pythonForm(t, got.Str) {
					t.Errorf("%s %s: %.200q, want the json.dumps form of %.200q", row.RowKey, name, got.Str, want.Str)
				}
				reencoded++
			case name == "Result" || name == "ResultInBlob":
				// Above the threshold: in the blob run wrote (the doc says
				// resultInBlob), or uploaded now.
				if created.Row.Props["ResultInBlob"].Bool != true || (name == "Result" && created.Row.Props["Result"].Str != "") {
					t.Errorf("%s %s: %+v", row.RowKey, name, got)
				}
				if name == "ResultInBlob" {
					toBlob++
				}
			default:
				t.Errorf("%s: property %s %+v, want %+v", row.RowKey, name, got, want)
			}
		}
		if row.Props["ResultInBlob"].Bool {
			inBlob++
		}
		checkGeneratedIndex(t, created, index[transform.ExecutionID(row)])
	}
	t.Logf("executions %d, JSON re-encoded %d, moved to a blob %d, already in a blob %d", len(execs), reencoded, toBlob, inBlob)
	// The run must have seen each case, or it proves nothing about it.
	if len(execs) != 2500 || reencoded < 2500 || toBlob < 1 || inBlob < 1 {
		t.Errorf("executions %d, JSON re-encoded %d, moved to a blob %d, already in a blob %d", len(execs), reencoded, toBlob, inBlob)
	}
}

// checkGeneratedIndex: every generated index row of a still-indexed kind is
// among the rows ReverseDoc writes, with every property the generated row
// has; status rows of a final status are neither written nor deleted.
func checkGeneratedIndex(t *testing.T, ro transform.ReverseOutcome, generated []transform.Row) {
	t.Helper()
	ours := map[string]transform.Row{}
	for _, r := range ro.Index {
		ours[r.RowKey] = r
	}
	deleted := map[string]bool{}
	for _, d := range ro.Delete {
		deleted[d.RowKey] = true
	}
	if len(generated) != 4 {
		t.Fatalf("%d generated index rows", len(generated))
	}
	for _, g := range generated {
		status := ro.Row.Props["Status"].Str
		if transform.Kind(g.RowKey) == "status" && status != "Pending" && status != "Running" {
			if _, ok := ours[g.RowKey]; ok || deleted[g.RowKey] {
				t.Errorf("%s: the repository neither writes nor deletes the status row of a final status", g.RowKey)
			}
			continue
		}
		r, ok := ours[g.RowKey]
		if !ok {
			t.Errorf("index row %s not written", g.RowKey)
			continue
		}
		for name, v := range g.Props {
			got, ok := r.Props[name]
			if d := transform.DiffRows(transform.Row{Props: map[string]transform.Value{name: got}}, transform.Row{Props: map[string]transform.Value{name: v}}); !ok || d != nil {
				t.Errorf("%s: %s %+v, generated %+v", g.RowKey, name, got, v)
			}
		}
	}
}

func sameJSONValue(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// pythonForm reports whether a JSON text is what json.dumps writes for the
// value it holds (as the forward transform decodes it, in order).
func pythonForm(t *testing.T, s string) bool {
	t.Helper()
	doc, err := transform.DecodeDocOrdered([]byte(`{"v":` + s + `}`))
	if err != nil {
		return false
	}
	v, _ := doc.Get("v")
	out, err := transform.PythonJSONForTest(v)
	return err == nil && out == s
}
