package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Dead letters of reverse are per row (SPEC §15): an index row whose key
// Table Storage refuses is dead-lettered alone, the rest of its doc is
// written; a doc whose own row's key is impossible writes nothing.

// reverseDeadLetters reads the dead letters of the last reverse.
func (e *reverseEnv) reverseDeadLetters() []migrate.DeadLetter {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.stateDir, migrate.ReverseDeadLetterFile))
	if err != nil {
		e.t.Fatal(err)
	}
	var dls []migrate.DeadLetter
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var dl migrate.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			e.t.Fatalf("dead letter %s: %v", sc.Bytes(), err)
		}
		dls = append(dls, dl)
	}
	return dls
}

// TestReverseDeadLettersTheImpossibleIndexRowOnly: the application starts
// and then completes an execution whose executedBy holds '/' (the user id
// of an identity provider); reverse writes its Entities row exactly, its
// workflowexec index row, deletes its status:Running index row once it is
// complete, and dead-letters only its userexec index row, naming the doc;
// exit 3 each time; a reverse after that writes nothing new.
func TestReverseDeadLettersTheImpossibleIndexRowOnly(t *testing.T) {
	e := newReverseEnv(t, nil)
	const id, by = "9d1c4b7e-2f3a-4e5b-8c6d-7e8f9a0b1c2d", "a/b+c@contoso.example"
	started := newExecStarted.Add(time.Hour)
	rk := fmt.Sprintf("execution:%d_%s", 9999999999999-started.UnixMilli(), id)
	userexec := "userexec:" + by + ":" + id
	workflowexec := "workflowexec:" + newExecWF + ":" + orgID + ":" + id
	wantIndexDeadLetter := func(what string) {
		t.Helper()
		dls := e.reverseDeadLetters()
		want := "key has a character Table Storage forbids: RowKey of the userexec index row has U+002F (the doc's row and its other index rows are written)"
		if len(dls) != 1 || dls[0].Table != transform.TableRelationships || dls[0].PartitionKey != "GLOBAL" || dls[0].RowKey != userexec ||
			dls[0].Reason != want || dls[0].Doc == nil ||
			*dls[0].Doc != (migrate.DeadLetterDoc{Container: transform.ContainerExecutions, Scope: "org-" + orgID, ID: id}) {
			t.Fatalf("%s: dead letters %+v, want exactly the userexec row of the doc with %q", what, dls, want)
		}
	}

	// The application starts the execution in Cosmos DB.
	since := e.since()
	before := e.snapshot()
	doc := newExecution(id, "A B C", started)
	doc["executedBy"] = by
	e.appWrite(transform.ContainerExecutions, doc)
	// A dry run reports the same split, and writes nothing.
	code, s, stderr := e.reverse(since, "--dry-run")
	if code != ExitPartial || s.Totals.DeadLetters != 1 || len(s.DeadLetters) != 1 || s.DeadLetters[0].RowKey != userexec {
		t.Fatalf("dry run: exit %d totals %+v dead letters %+v, want 3 and the userexec row:\n%s", code, s.Totals, s.DeadLetters, stderr)
	}
	var planned []string
	for _, p := range s.Plan {
		planned = append(planned, p.Table+" "+p.PartitionKey+" "+p.RowKey)
	}
	want := []string{"Entities " + orgID + " " + rk, "Relationships GLOBAL status:Running:" + id, "Relationships GLOBAL " + workflowexec}
	slices.Sort(want)
	if slices.Sort(planned); !slices.Equal(planned, want) {
		t.Errorf("dry run plans %q, want %q", planned, want)
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Fatalf("the dry run changed rows: %q", got)
	}
	// Each reverse syncs the doc, dead-letters its userexec row alone and
	// writes (or deletes) exactly its row, its status:Running and its
	// workflowexec index rows.
	reverseOnce := func(what string, before map[string]transform.Row) map[string]transform.Row {
		t.Helper()
		code, s, stderr := e.reverse(since)
		if code != ExitPartial || s.Totals.Synced != 1 || s.Totals.DeadLetters != 1 {
			t.Fatalf("reverse of the %s: exit %d totals %+v, want 3, one doc synced, one dead letter:\n%s", what, code, s.Totals, stderr)
		}
		wantIndexDeadLetter(what)
		after := e.snapshot()
		if got := changedRows(before, after); !slices.Equal(got, want) {
			t.Fatalf("rows the %s wrote or deleted:\n got %q\nwant %q", what, got, want)
		}
		return after
	}
	running := reverseOnce("start", before)

	// The application completes it.
	doc = e.readDoc(transform.ContainerExecutions, "org-"+orgID, id)
	doc["status"] = "Success"
	doc["completedAt"] = "2026-11-21T12:05:00.2500000Z"
	doc["durationMs"] = 299750
	doc["result"] = map[string]any{"licenses": 2, "note": "é"}
	doc["resultType"] = "json"
	doc["resultSize"] = 34
	e.appWrite(transform.ContainerExecutions, doc)
	after := reverseOnce("completion", running)
	if _, ok := after["Relationships GLOBAL status:Running:"+id]; ok {
		t.Error("the completed execution's status:Running index row is still there")
	}
	wantRow(t, after, "Entities", `{"PartitionKey":"`+orgID+`","RowKey":"`+rk+`","ExecutionId":"`+id+`",`+
		`"WorkflowName":"`+newExecWF+`","ExecutedBy":"`+by+`","ExecutedByName":"A B C","Status":"Success",`+
		`"InputData":"{\"top\": 5, \"user\": \"bob@contoso.example\"}","Result":"{\"licenses\": 2, \"note\": \"\\u00e9\"}","ResultInBlob":false,`+
		`"StartedAt":"2026-11-21T12:00:00.500000","CompletedAt":"2026-11-21T12:05:00.250000","DurationMs":299750}`)
	wantRow(t, after, "Relationships", `{"PartitionKey":"GLOBAL","RowKey":"`+workflowexec+`","ExecutionId":"`+id+`","OrganizationId":"`+orgID+`",`+
		`"ExecutedBy":"`+by+`","ExecutedByName":"A B C","Status":"Success","StartedAt":"2026-11-21T12:00:00.500000",`+
		`"CompletedAt":"2026-11-21T12:05:00.250000","DurationMs":299750}`)

	// Nothing left to do: a second reverse writes nothing new.
	if s := e.reverseAgain(t, since, ExitOK, 0, after); s.Totals.DeadLetters != 0 {
		t.Errorf("reverse again: %d dead letters, want 0", s.Totals.DeadLetters)
	}
}

// TestReverseImpossibleMainRowWritesNothing: a doc whose own row's key
// would hold '#' writes nothing (its index rows would point at nothing):
// one dead letter saying so, exit 3.
func TestReverseImpossibleMainRowWritesNothing(t *testing.T) {
	e := newReverseEnv(t, nil)
	since := e.since()
	before := e.snapshot()
	e.appWrite(transform.ContainerEntities, map[string]any{"id": "role-ops%23eu", "type": "role", "scope": "GLOBAL", "name": "Ops #EU"})
	code, s, stderr := e.reverse(since)
	if code != ExitPartial || s.Totals.DeadLetters != 1 || s.Totals.Synced != 0 || s.Totals.Writes() != 0 {
		t.Fatalf("reverse: exit %d totals %+v, want 3, one dead letter, nothing written:\n%s", code, s.Totals, stderr)
	}
	dls := e.reverseDeadLetters()
	want := "key has a character Table Storage forbids: RowKey of the row has U+0023; nothing of the doc is written"
	if len(dls) != 1 || dls[0].Table != transform.TableEntities || dls[0].RowKey != "role:ops#eu" || dls[0].Reason != want {
		t.Fatalf("dead letters %+v, want one for Entities role:ops#eu with %q", dls, want)
	}
	if got := changedRows(before, e.snapshot()); len(got) > 0 {
		t.Errorf("reverse changed rows: %q", got)
	}
}
