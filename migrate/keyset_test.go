package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

func testKey(i int) [16]byte {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	var k [16]byte
	copy(k[:], sum[:])
	return k
}

// A keySet is exact however few keys it holds in memory and however
// often its filter lets a lookup through: every key added twice is found
// the second time, in memory or in a run, and no other key is; its runs
// stay few; Close removes them.
func TestKeySetSpills(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	made := 0
	s := newKeySet(7, 64, func() (string, error) { made++; return dir, os.Mkdir(dir, 0o700) })
	const n = 5000
	for i := range n {
		if added, err := s.Add(testKey(i)); err != nil || !added {
			t.Fatalf("key %d: added %v, %v", i, added, err)
		}
		// Every key added before, once in a while: the latest, in memory,
		// and old ones, on disk.
		if i%13 == 0 {
			for _, j := range []int{i, i / 2, i / 7} {
				if added, err := s.Add(testKey(j)); err != nil || added {
					t.Fatalf("key %d again after %d: added %v, %v", j, i, added, err)
				}
			}
		}
	}
	if s.Len() != n || made != 1 {
		t.Errorf("%d keys, want %d; directory made %d times", s.Len(), n, made)
	}
	// A filter of 64 bytes lets nearly every lookup through: the runs
	// answered them, and there are at most log₂(n/7)+1 of them.
	if s.diskLookups < n/2 || len(s.runs) > 11 {
		t.Errorf("%d lookups on disk, %d runs", s.diskLookups, len(s.runs))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(s.runs) {
		t.Errorf("%d files for %d runs (merged runs not removed)", len(entries), len(s.runs))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runs left after Close: %v", err)
	}
}

// A keySet that cannot write its runs says so, naming the file.
func TestKeySetSpillFails(t *testing.T) {
	s := newKeySet(2, 64, func() (string, error) { return filepath.Join(t.TempDir(), "missing"), nil })
	_, err := s.Add(testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Add(testKey(2))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want one about the missing directory", err)
	}
}

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
