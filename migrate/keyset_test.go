package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// scaleEnv is an env whose tables hold executions in n orgs of m each,
// a repetition of every 7th in the partition "org-" + its org (a
// collision, read after the original), and index rows, every 11th of them
// naming an execution that does not exist.
func scaleEnv(t *testing.T, orgs, perOrg int) *env {
	t.Helper()
	e := newEnv(t, 20)
	e.src = fakes.NewTables("Config", "Entities", "Relationships")
	e.src.PageSize = 20
	var entities, rels []transform.Row
	started := goldenNow.Add(-time.Hour)
	for o := range orgs {
		pk := fmt.Sprintf("%08x-0000-4000-8000-000000000000", o+1)
		for i := range perOrg {
			id := fmt.Sprintf("%08x-%04x-4000-8000-000000000000", o+1, i)
			row := transform.Row{Table: "Entities", PartitionKey: pk,
				RowKey: fmt.Sprintf("execution:%d_%s", 9999999999999-started.Add(-time.Duration(i)*time.Second).UnixMilli(), id),
				Props: map[string]transform.Value{"ExecutionId": transform.String(id), "WorkflowName": transform.String("wf"),
					"Status": transform.String("Success"), "StartedAt": transform.String(started.Format("2006-01-02T15:04:05"))}}
			entities = append(entities, row)
			if i%7 == 3 {
				dup := row
				dup.PartitionKey = "org-" + pk
				entities = append(entities, dup)
			}
			ref := id
			if (o*perOrg+i)%11 == 5 {
				ref = "dangling-" + id
			}
			rels = append(rels, transform.Row{Table: "Relationships", PartitionKey: "GLOBAL", RowKey: "userexec:someone@example.com:" + ref,
				Props: map[string]transform.Value{"ExecutionId": transform.String(ref)}})
		}
	}
	e.src.Add("Entities", entities...)
	e.src.Add("Relationships", rels...)
	return e
}

// A run whose doc ids spill to disk and whose execution filter is small
// enough to hide some dangling indexes decides the same after a resume
// as without one: the same collisions dead-lettered (all of them, as
// with the sets in memory), the same dangling indexes, the same docs.
func TestRunResumeWithSetsBeyondMemory(t *testing.T) {
	small := setSizes{idMemoryKeys: 16, idFilterBytes: 64, execFilterBytes: 256}
	opts := func(e *env, z setSizes) RunOptions {
		o := e.opts()
		o.Transform.ExecutionTTL = transform.TTLFull
		o.sets = z
		return o
	}
	const orgs, perOrg = 4, 150
	collisions := int64(orgs * ((perOrg + 3) / 7))
	big := scaleEnv(t, orgs, perOrg)
	bigSummary, err := big.run(context.Background(), opts(big, setSizes{}))
	if err != nil {
		t.Fatal(err)
	}
	ref := scaleEnv(t, orgs, perOrg)
	refSummary, err := ref.run(context.Background(), opts(ref, small))
	if err != nil {
		t.Fatal(err)
	}
	if bigSummary.DeadLetters != collisions || refSummary.DeadLetters != collisions {
		t.Fatalf("collisions: %d with the sets in memory, %d with them on disk; want %d", bigSummary.DeadLetters, refSummary.DeadLetters, collisions)
	}
	dangling := func(s Summary) int64 { return s.Warnings[transform.ReasonDanglingIndex] }
	if want := int64((orgs*perOrg + 5) / 11); dangling(bigSummary) != want || dangling(refSummary) >= want || dangling(refSummary) == 0 {
		t.Fatalf("dangling indexes: %d with the large filter (want %d), %d with the small one (want some hidden, not all)", dangling(bigSummary), want, dangling(refSummary))
	}
	if _, err := os.Stat(filepath.Join(ref.dir, IDRunsDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the doc ids are left in the state directory: %v", err)
	}
	refDL, _ := os.ReadFile(filepath.Join(ref.dir, DeadLetterFile))

	for _, stopAfter := range []int{5, 170, 400, 599} {
		e := scaleEnv(t, orgs, perOrg)
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int64
		e.docs.BeforeWrite = func(ctx context.Context, op fakes.Op) error {
			if n.Add(1) > int64(stopAfter) {
				cancel()
				return ctx.Err()
			}
			return nil
		}
		if _, err := e.run(ctx, opts(e, small)); !errors.Is(err, context.Canceled) {
			t.Fatalf("stop after %d: err %v, want context.Canceled", stopAfter, err)
		}
		e.docs.BeforeWrite = nil
		s, err := e.run(context.Background(), opts(e, small))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Resumed {
			t.Errorf("stop after %d: not resumed", stopAfter)
		}
		if !reflect.DeepEqual(s.Kinds(), refSummary.Kinds()) || !reflect.DeepEqual(s.Warnings, refSummary.Warnings) {
			t.Errorf("stop after %d: counts differ:\n got %v %v\nwant %v %v", stopAfter, s.Kinds(), s.Warnings, refSummary.Kinds(), refSummary.Warnings)
		}
		if !reflect.DeepEqual(e.docs.Snapshot(), ref.docs.Snapshot()) {
			t.Errorf("stop after %d: docs differ", stopAfter)
		}
		if dl, _ := os.ReadFile(filepath.Join(e.dir, DeadLetterFile)); !bytes.Equal(dl, refDL) {
			t.Errorf("stop after %d: dead-letter file differs:\n%s\nwant\n%s", stopAfter, dl, refDL)
		}
	}
	// The dry run finds them all too, with its runs in a temporary
	// directory.
	dry := scaleEnv(t, orgs, perOrg)
	o := opts(dry, small)
	o.DryRun = true
	s, err := dry.run(context.Background(), o)
	if err != nil || s.Plan.CollisionCount != collisions || dangling(s) != dangling(refSummary) {
		t.Fatalf("dry run: %d collisions, %d dangling, %v", s.Plan.CollisionCount, dangling(s), err)
	}
}
