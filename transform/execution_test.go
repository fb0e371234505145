package transform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// execRow is an execution row of org-1 for execution e1 that completed one
// day before testNow, with extra properties appended.
func execRow(props string) string {
	return `{"PartitionKey":"org-1","RowKey":"execution:8204816607654_e1","ExecutionId":"e1","WorkflowName":"wf","Status":"Success",` +
		`"StartedAt":"2025-11-20T11:59:00","CompletedAt":"2025-11-20T12:00:00"` + props + `}`
}

// execDoc is the doc of execRow with the given result part (result …
// resultBlobPath), blob paths part and ttl.
func execDoc(result, blobs, tail string) string {
	return `{"id":"e1","type":"execution","scope":"org-1","executionId":"e1","workflowName":"wf","formId":null,"executedBy":null,` +
		`"executedByName":null,"status":"Success","inputData":null,` + result + `,"errorMessage":null,"durationMs":null,` +
		`"startedAt":"2025-11-20T11:59:00.0000000Z","completedAt":"2025-11-20T12:00:00.0000000Z",` + blobs + tail + `}`
}

const (
	noResult  = `"result":null,"resultType":null,"resultInBlob":false,"resultSize":null,"resultBlobPath":null`
	noBlobs   = `"logsBlobPath":null,"variablesBlobPath":null,"snapshotBlobPath":null`
	ttl13Days = `,"ttl":1123200` // 14 days − 1 day
)

func blobFacts(sizes map[BlobName]int64) BlobFacts {
	var f BlobFacts
	for n, s := range sizes {
		f.Set(n, s)
	}
	return f
}

// quoteJSON quotes s as a JSON string.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestExecutionResult(t *testing.T) {
	text32768 := strings.Repeat("x", 32768)
	text32769 := strings.Repeat("x", 32769)
	json32769 := `["` + strings.Repeat("é", (32769-5)/2) + `a"]` // 5 + 2×16382 = 32769 bytes
	if len(json32769) != 32769 || len(text32769) != 32769 {
		t.Fatal("bad test data")
	}
	cases := []rowCase{
		{
			name:   "inline JSON",
			entity: execRow(`,"ResultInBlob":false,"Result":"{\"ok\":true,\"n\":1.50}"`),
			doc:    execDoc(`"result":{"ok":true,"n":1.50},"resultType":"json","resultInBlob":false,"resultSize":20,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "inline JSON array and scalar",
			entity: execRow(`,"Result":" [] "`),
			doc:    execDoc(`"result":[],"resultType":"json","resultInBlob":false,"resultSize":4,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "inline HTML with leading white space",
			entity: execRow(`,"Result":"\n  <h1>Done</h1>"`),
			doc:    execDoc(`"result":"\n  <h1>Done</h1>","resultType":"html","resultInBlob":false,"resultSize":16,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "'<' without '>' is text",
			entity: execRow(`,"Result":"<3 you"`),
			doc:    execDoc(`"result":"<3 you","resultType":"text","resultInBlob":false,"resultSize":6,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "inline text, size in UTF-8 bytes",
			entity: execRow(`,"Result":"Grüße"`),
			doc:    execDoc(`"result":"Grüße","resultType":"text","resultInBlob":false,"resultSize":7,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "Python repr is text",
			entity: execRow(`,"Result":"{'ok': True}"`),
			doc:    execDoc(`"result":"{'ok': True}","resultType":"text","resultInBlob":false,"resultSize":12,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "empty Result is text",
			entity: execRow(`,"Result":""`),
			doc:    execDoc(`"result":"","resultType":"text","resultInBlob":false,"resultSize":0,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:   "exactly 32768 bytes stays inline",
			entity: execRow(`,"Result":"` + text32768 + `"`),
			doc:    execDoc(`"result":"`+text32768+`","resultType":"text","resultInBlob":false,"resultSize":32768,"resultBlobPath":null`, noBlobs, ttl13Days),
		},
		{
			name:    "32769 bytes of text move to result.txt",
			entity:  execRow(`,"Result":"` + text32769 + `"`),
			doc:     execDoc(`"result":null,"resultType":"text","resultInBlob":true,"resultSize":32769,"resultBlobPath":"e1/result.txt"`, noBlobs, ttl13Days),
			uploads: []string{"e1/result.txt 32769"},
		},
		{
			name:    "32769 bytes of JSON move to result.json",
			entity:  execRow(`,"Result":` + quoteJSON(json32769)),
			doc:     execDoc(`"result":null,"resultType":"json","resultInBlob":true,"resultSize":`+itoa(len(json32769))+`,"resultBlobPath":"e1/result.json"`, noBlobs, ttl13Days),
			uploads: []string{"e1/result.json " + itoa(len(json32769))},
		},
		{
			name:    "large HTML moves to result.html; threshold option",
			entity:  execRow(`,"Result":"<p>0123456789</p>"`),
			opts:    &Options{Now: testNow, BlobThreshold: 16},
			doc:     execDoc(`"result":null,"resultType":"html","resultInBlob":true,"resultSize":17,"resultBlobPath":"e1/result.html"`, noBlobs, ttl13Days),
			uploads: []string{"e1/result.html 17"},
		},
		{
			name:   "in blob: result.json",
			entity: execRow(`,"ResultInBlob":true`),
			blobs:  blobFacts(map[BlobName]int64{BlobResultJSON: 100, BlobResultText: 5}),
			doc:    execDoc(`"result":null,"resultType":"json","resultInBlob":true,"resultSize":100,"resultBlobPath":"e1/result.json"`, noBlobs, ttl13Days),
		},
		{
			name:   "in blob: result.html",
			entity: execRow(`,"ResultInBlob":true`),
			blobs:  blobFacts(map[BlobName]int64{BlobResultHTML: 200, BlobResultText: 5}),
			doc:    execDoc(`"result":null,"resultType":"html","resultInBlob":true,"resultSize":200,"resultBlobPath":"e1/result.html"`, noBlobs, ttl13Days),
		},
		{
			name:   "in blob: result.txt",
			entity: execRow(`,"ResultInBlob":true`),
			blobs:  blobFacts(map[BlobName]int64{BlobResultText: 0}),
			doc:    execDoc(`"result":null,"resultType":"text","resultInBlob":true,"resultSize":0,"resultBlobPath":"e1/result.txt"`, noBlobs, ttl13Days),
		},
		{
			name:   "in blob: missing blob",
			entity: execRow(`,"ResultInBlob":true`),
			blobs:  blobFacts(map[BlobName]int64{BlobLogs: 10}),
			doc:    execDoc(`"result":null,"resultType":null,"resultInBlob":true,"resultSize":null,"resultBlobPath":null`, `"logsBlobPath":"e1/logs.json","variablesBlobPath":null,"snapshotBlobPath":null`, ttl13Days),
			warn:   []string{"missing result blob: e1/result.{json,html,txt}"},
		},
		{
			name:   "in blob wins over a Result property",
			entity: execRow(`,"ResultInBlob":true,"Result":"x"`),
			blobs:  blobFacts(map[BlobName]int64{BlobResultJSON: 3}),
			doc:    execDoc(`"result":null,"resultType":"json","resultInBlob":true,"resultSize":3,"resultBlobPath":"e1/result.json"`, noBlobs, ttl13Days),
			warn:   []string{"result property ignored: Result (ResultInBlob is true)"},
		},
		{
			name:   "no result",
			entity: execRow(`,"ResultInBlob":false`),
			doc:    execDoc(noResult, noBlobs, ttl13Days),
		},
		{
			name:   "no result and no ResultInBlob",
			entity: execRow(``),
			doc:    execDoc(noResult, noBlobs, ttl13Days),
		},
		{
			name:   "Result not a string",
			entity: execRow(`,"Result":5`),
			disp:   DispositionDeadLetter, dead: "property Result is not a string",
		},
		{
			name:   "blob paths when the blobs exist",
			entity: execRow(``),
			blobs:  blobFacts(map[BlobName]int64{BlobLogs: 1, BlobVariables: 2, BlobSnapshot: 3}),
			doc:    execDoc(noResult, `"logsBlobPath":"e1/logs.json","variablesBlobPath":"e1/variables.json","snapshotBlobPath":"e1/snapshot.json"`, ttl13Days),
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

func TestExecutionFieldsAndLegacy(t *testing.T) {
	cases := []rowCase{
		{
			name: "all current fields",
			entity: `{"PartitionKey":"org-1","RowKey":"execution:8204816607654_e1","ExecutionId":"e1","WorkflowName":"wf","FormId":"f1","ExecutedBy":"u@x",` +
				`"ExecutedByName":"U","Status":"CompletedWithErrors","InputData":"{\"a\":[1,2]}","ResultInBlob":false,"ErrorMessage":"half",` +
				`"DurationMs":60000,"StartedAt":"2025-11-20T13:59:00+02:00","CompletedAt":"2025-11-20T14:00:00+02:00"}`,
			doc: `{"id":"e1","type":"execution","scope":"org-1","executionId":"e1","workflowName":"wf","formId":"f1","executedBy":"u@x","executedByName":"U",` +
				`"status":"CompletedWithErrors","inputData":{"a":[1,2]},` + noResult + `,"errorMessage":"half","durationMs":60000,` +
				`"startedAt":"2025-11-20T11:59:00.0000000Z","completedAt":"2025-11-20T12:00:00.0000000Z",` + noBlobs + ttl13Days + `}`,
		},
		{
			name: "legacy inline Logs, Variables, StateSnapshots and error fields",
			entity: execRow(`,"Logs":"[{\"msg\":\"hi\"}]","Variables":"{\"x\":1}","StateSnapshots":"[]","ErrorType":"ValueError",` +
				`"ErrorDetails":"{\"line\":3}","IntegrationCalls":"[{\"name\":\"graph\"}]"`),
			blobs: blobFacts(map[BlobName]int64{BlobVariables: 7}),
			doc: execDoc(noResult, `"logsBlobPath":"e1/logs.json","variablesBlobPath":"e1/variables.json","snapshotBlobPath":"e1/snapshot.json",`+
				`"errorType":"ValueError","errorDetails":{"line":3},"integrationCalls":[{"name":"graph"}]`, ttl13Days),
			uploads: []string{"e1/logs.json 14", "e1/snapshot.json 2"},
		},
		{
			name:    "legacy inline differs from the existing blob",
			entity:  execRow(`,"Variables":"{\"x\":1}"`),
			blobs:   blobFacts(map[BlobName]int64{BlobVariables: 9}),
			doc:     execDoc(noResult, `"logsBlobPath":null,"variablesBlobPath":"e1/variables.json","snapshotBlobPath":null`, ttl13Days),
			warn:    []string{"inline data differs from existing blob: Variables vs e1/variables.json"},
			uploads: nil,
		},
		{
			name:   "legacy null-ish: empty inline Logs is not uploaded",
			entity: execRow(`,"Logs":""`),
			doc:    execDoc(noResult, noBlobs, ttl13Days),
		},
		{
			name:   "legacy ErrorDetails invalid JSON",
			entity: execRow(`,"ErrorDetails":"Traceback (most recent call last)"`),
			disp:   DispositionDeadLetter, dead: "property ErrorDetails is not valid JSON: invalid JSON at offset 0",
		},
		{
			name:   "legacy IntegrationCalls invalid JSON",
			entity: execRow(`,"IntegrationCalls":"[{]"`),
			disp:   DispositionDeadLetter, dead: "property IntegrationCalls is not valid JSON: invalid JSON at offset 2",
		},
		{
			name:   "InputData invalid JSON",
			entity: execRow(`,"InputData":"{'a': 1}"`),
			disp:   DispositionDeadLetter, dead: "property InputData is not valid JSON: invalid JSON at offset 1",
		},
		{
			name:   "Logs not a string",
			entity: execRow(`,"Logs":1`),
			disp:   DispositionDeadLetter, dead: "property Logs is not a string",
		},
		{
			name:   "id from the RowKey when ExecutionId is absent",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"execution:8204816607654_e9","Status":"Timeout","CompletedAt":"2025-11-20T12:00:00"}`,
			id:     "e9", scope: "GLOBAL",
			doc: `{"id":"e9","type":"execution","scope":"GLOBAL","executionId":"e9","workflowName":null,"formId":null,"executedBy":null,"executedByName":null,` +
				`"status":"Timeout","inputData":null,` + noResult + `,"errorMessage":null,"durationMs":null,"startedAt":null,` +
				`"completedAt":"2025-11-20T12:00:00.0000000Z",` + noBlobs + ttl13Days + `}`,
		},
		{
			name:   "ExecutionId differs from the RowKey",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"execution:8204816607654_e9","ExecutionId":"e8"}`,
			disp:   DispositionDeadLetter, dead: `ExecutionId property "e8" differs from the RowKey's execution id "e9"`,
		},
		{
			name:   "id only in ExecutionId",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"execution:8204816607654","ExecutionId":"e7","CompletedAt":"2025-11-20T12:00:00"}`,
			id:     "e7",
			doc: `{"id":"e7","type":"execution","scope":"GLOBAL","executionId":"e7","workflowName":null,"formId":null,"executedBy":null,"executedByName":null,` +
				`"status":null,"inputData":null,` + noResult + `,"errorMessage":null,"durationMs":null,"startedAt":null,` +
				`"completedAt":"2025-11-20T12:00:00.0000000Z",` + noBlobs + ttl13Days + `}`,
		},
		{
			name:   "no execution id at all",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"execution:8204816607654"}`,
			disp:   DispositionDeadLetter, dead: "execution has no ExecutionId property and no execution id in its RowKey",
		},
		{
			name:   "extra properties are copied",
			entity: execRow(`,"OrganizationId":"org-1","ResultType":"json"`),
			doc:    execDoc(noResult, noBlobs+`,"organizationId":"org-1","sourceResultType":"json"`, ttl13Days),
			warn:   []string{"property renamed: ResultType → sourceResultType"},
		},
		{
			name:   "every status is kept as it is",
			entity: strings.Replace(execRow(``), `"Success"`, `"Cancelling"`, 1),
			doc:    strings.Replace(execDoc(noResult, noBlobs, ttl13Days), `"Success"`, `"Cancelling"`, 1),
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

func TestExecutionTTL(t *testing.T) {
	// reverseTs for a start time: 9999999999999 − Unix milliseconds.
	rk := func(start time.Time) string {
		return "execution:" + itoa(int(maxReverseTs-start.UnixMilli())) + "_e1"
	}
	row := func(rowKey, props string) Row {
		return mkRow(t, TableEntities, `{"PartitionKey":"org-1","RowKey":"`+rowKey+`","ExecutionId":"e1"`+props+`}`)
	}
	start := testNow.Add(-48 * time.Hour)
	tests := []struct {
		name    string
		row     Row
		mode    TTLMode
		disp    Disposition
		ttl     any // nil: no ttl property
		warning string
	}{
		{"remaining from CompletedAt", row(rk(start), `,"StartedAt":"2025-11-19T12:00:00","CompletedAt":"2025-11-20T12:00:00"`), TTLRemaining, DispositionDoc, int64(1123200), ""},
		{"remaining rounds down", row(rk(start), `,"CompletedAt":"2025-11-20T11:59:59.5"`), TTLRemaining, DispositionDoc, int64(1123199), ""},
		{"remaining from StartedAt when not completed", row(rk(start), `,"StartedAt":"2025-11-14T12:00:00"`), TTLRemaining, DispositionDoc, int64(604800), ""},
		{"remaining from StartedAt when CompletedAt is unparseable", row(rk(start), `,"StartedAt":"2025-11-14T12:00:00","CompletedAt":"soon"`), TTLRemaining, DispositionDoc, int64(604800), "unparseable timestamp: CompletedAt"},
		{"remaining from the RowKey when no timestamp", row(rk(start), ``), TTLRemaining, DispositionDoc, int64(1036800), "ttl from RowKey start time: CompletedAt and StartedAt absent or unparseable"},
		{"remaining with Edm.DateTime", row(rk(start), `,"CompletedAt@odata.type":"Edm.DateTime","CompletedAt":"2025-11-20T12:00:00Z"`), TTLRemaining, DispositionDoc, int64(1123200), ""},
		{"one second left", row(rk(start), `,"CompletedAt":"2025-11-07T12:00:01"`), TTLRemaining, DispositionDoc, int64(1), ""},
		{"just under a second left is expired", row(rk(start), `,"CompletedAt":"2025-11-07T12:00:00.9999999"`), TTLRemaining, DispositionExpired, nil, ""},
		{"exactly 14 days is expired", row(rk(start), `,"CompletedAt":"2025-11-07T12:00:00"`), TTLRemaining, DispositionExpired, nil, ""},
		{"long ago is expired", row(rk(start), `,"CompletedAt":"2024-01-01T00:00:00"`), TTLRemaining, DispositionExpired, nil, ""},
		{"future completion is capped at 14 days", row(rk(start), `,"CompletedAt":"2025-11-22T12:00:00"`), TTLRemaining, DispositionDoc, int64(1209600), ""},
		{"full", row(rk(start), `,"CompletedAt":"2024-01-01T00:00:00"`), TTLFull, DispositionDoc, int64(1209600), ""},
		{"none", row(rk(start), `,"CompletedAt":"2024-01-01T00:00:00"`), TTLNone, DispositionDoc, nil, ""},
		{"remaining without any time", row("execution:x_e1", ``), TTLRemaining, DispositionDeadLetter, nil, ""},
		{"full without any time", row("execution:x_e1", ``), TTLFull, DispositionDoc, int64(1209600), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Transform(tt.row, BlobFacts{}, Options{Now: testNow, ExecutionTTL: tt.mode})
			if o.Disposition != tt.disp {
				t.Fatalf("disposition %s (%s), want %s", o.Disposition, o.DeadLetter, tt.disp)
			}
			if o.Disposition == DispositionExpired {
				if o.Doc != nil || o.Container != ContainerExecutions || o.ID != "e1" || o.Scope != "org-1" {
					t.Errorf("expired outcome %+v", o)
				}
				return
			}
			if o.Disposition == DispositionDeadLetter {
				if want := "execution has no parseable CompletedAt or StartedAt and no start time in its RowKey, so its ttl cannot be computed"; o.DeadLetter != want {
					t.Errorf("dead letter %q", o.DeadLetter)
				}
				return
			}
			ttl, ok := o.Doc.Get("ttl")
			if (tt.ttl == nil) == ok || (ok && ttl != tt.ttl) {
				t.Errorf("ttl %v (present %v), want %v", ttl, ok, tt.ttl)
			}
			if ok && o.Doc[len(o.Doc)-2].Name != "ttl" {
				t.Errorf("ttl is not just before _migration")
			}
			var w string
			if len(o.Warnings) > 0 {
				w = o.Warnings[0].Reason + ": " + o.Warnings[0].Detail
			}
			if w != tt.warning {
				t.Errorf("warning %q, want %q", w, tt.warning)
			}
		})
	}

	// The hash does not depend on the ttl mode or the clock.
	r := row(rk(start), `,"CompletedAt":"2025-11-20T12:00:00"`)
	var hashes []any
	for _, opts := range []Options{{Now: testNow}, {Now: testNow.Add(time.Hour)}, {ExecutionTTL: TTLFull}, {ExecutionTTL: TTLNone}} {
		o := Transform(r, BlobFacts{}, opts)
		mig, _ := o.Doc.Get("_migration")
		h, _ := mig.(Doc).Get("hash")
		hashes = append(hashes, h)
	}
	for _, h := range hashes[1:] {
		if h != hashes[0] {
			t.Errorf("hashes differ across ttl modes: %v", hashes)
		}
	}
}
