package cmd_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

// TestWindowAtLatency: `replay` and `reverse` at 80 ms added to every
// Table and Cosmos DB request, against an account of 10,000 RU/s, each
// over a window of changed rows (replay) or docs (reverse), apply every
// change. Under BIFROST_BENCH (./bench.sh) the window is 10,000 changes,
// the commands are plain, and each must use ≥ 0.8 of the budget over its
// requests; it runs alone, reverse being bounded by the emulators' CPU on
// a 2-core machine almost as much as by the budget (see bigInput). The
// short version (./test.sh: 2,000 changed rows, 600 docs, with --max-ru
// at the budget, as TestRunAtLatency) is functional: it logs the shares
// and runs beside the other tests, on the functional tests' emulators.
// A share measured over seconds beside them would measure them (on one
// 2-core machine the same short replay used 0.92 of its share with no
// latency added alone, 0.72 beside the other packages' tests).
func TestWindowAtLatency(t *testing.T) {
	const latency = 80 * time.Millisecond
	n, docs, short := 2000, 600, latencyExecutions() < 20000
	var flags []string
	if short {
		t.Parallel()
		flags = []string{"--max-ru", strconv.Itoa(latencyBudget)}
	} else {
		n, docs = 10000, 10000
	}
	s := latencySourceFor(t, short, n)
	db, state := s.newDatabase(), filepath.Join(t.TempDir(), "state")
	if code, _, stderr := resExecute(s.env(""), nil, s.runArgs(db, 0, state)...); code != cmd.ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	env, f := s.farEnv(t, latency)
	p := f.cosmos
	window := func(name string, changes int, since string) (stdout string, share float64) {
		t.Helper()
		began := time.Now()
		args := append([]string{name, "--since", since, "--database", db, "--table-prefix", s.prefix, "--blob-container", s.blobs[0],
			"--state-dir", state, "--output", "json"}, flags...)
		code, stdout, stderr := resExecute(env, nil, args...)
		if code != cmd.ExitOK {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		var ledger []faultproxy.Charge
		for _, c := range p.Ledger() {
			if c.At.After(began) {
				ledger = append(ledger, c)
			}
		}
		ru, attempts, throttled, first, last := faultproxy.Totals(ledger, "client", false)
		share = ru / last.Sub(first).Seconds() / latencyBudget
		t.Logf("%s %v of %d changes at %s on an account of %d RU/s: %.0f RU in %.1f s, %d of %d requests throttled; %.2f of the budget",
			name, flags, changes, latency, latencyBudget, ru, last.Sub(first).Seconds(), throttled, attempts, share)
		var sum struct {
			RU json.RawMessage `json:"ru"`
		}
		lastLine(t, stdout, &sum)
		t.Logf("%s: %s", name, sum.RU)
		return stdout, share
	}

	// replay: the application changes every execution row in the tables.
	since := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(20 * time.Millisecond) // Azurite's Timestamps have millisecond resolution
	s.changeExecutionRows(t)
	stdout, share := window("replay", n, since)
	var rs migrate.ReplaySummary
	lastLine(t, stdout, &rs)
	if rs.Totals.Replaced != int64(n) {
		t.Errorf("replay: %d docs replaced, want %d: %+v", rs.Totals.Replaced, n, rs.Totals)
	}
	if !short && share < 0.8 {
		t.Errorf("replay used %.2f of the budget, want ≥ 0.8", share)
	}

	// reverse: the application changes every execution doc in Cosmos DB,
	// through the proxy (whose change feed reverse reads), at no latency.
	f.setLatency(0)
	since = time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	s.changeExecutionDocs(t, p.URL(), db, docs)
	f.setLatency(latency)
	stdout, share = window("reverse", docs, since)
	var vs migrate.ReverseSummary
	lastLine(t, stdout, &vs)
	if vs.Totals.Synced != int64(docs) || vs.Totals.DeadLetters != 0 {
		t.Errorf("reverse: %d docs synced, want %d: %+v", vs.Totals.Synced, docs, vs.Totals)
	}
	if !short && share < 0.8 {
		t.Errorf("reverse used %.2f of the budget, want ≥ 0.8", share)
	}
}

// lastLine decodes the last line of a command's --output json (its
// summary).
func lastLine(t *testing.T, stdout string, v any) {
	t.Helper()
	end := len(stdout) - 1
	for end > 0 && stdout[end] == '\n' {
		end--
	}
	start := end
	for start > 0 && stdout[start-1] != '\n' {
		start--
	}
	if err := json.Unmarshal([]byte(stdout[start:end+1]), v); err != nil {
		t.Fatalf("summary %q: %v", stdout[start:end+1], err)
	}
}

// changeExecutionRows merges a new ErrorMessage into every execution row
// of Entities, as the Table-based application would, 64 at a time.
func (s *resSource) changeExecutionRows(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var keys []store.Key
	err := store.Scan(ctx, azure.NewTableReader(s.storage, azure.Options{}), s.prefix, fixtures.TableEntities,
		store.Query{Select: []string{"PartitionKey", "RowKey"}}, store.Cursor{}, func(p store.Page) error {
			for _, r := range p.Rows {
				keys = append(keys, store.Key{PartitionKey: r.PartitionKey, RowKey: r.RowKey})
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := azure.NewTablesClient(s.storage, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient(s.prefix + fixtures.TableEntities)
	parallel(t, len(keys), func(i int) error {
		b, _ := json.Marshal(map[string]string{"PartitionKey": keys[i].PartitionKey, "RowKey": keys[i].RowKey, "ErrorMessage": "changed after the run"})
		_, err := c.UpdateEntity(ctx, b, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge})
		return err
	})
}

// changeExecutionDocs changes the inputData of the first n execution docs
// the container answers, as the application on Cosmos DB would, writing
// through endpoint.
func (s *resSource) changeExecutionDocs(t *testing.T, endpoint, db string, n int) {
	t.Helper()
	ctx := context.Background()
	acct := s.cosmos
	acct.Endpoint = endpoint
	client, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewContainer(db, "executions")
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	pager := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Items {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
	}
	if len(docs) < n {
		t.Fatalf("%d execution docs, want at least %d", len(docs), n)
	}
	parallel(t, n, func(i int) error {
		d := docs[i]
		d["inputData"] = map[string]any{"changed": "after the cutover", "attachment": bigInput}
		for _, k := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
			delete(d, k)
		}
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		_, err = c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(d["scope"].(string)), b, nil)
		return err
	})
}

// bigInput is the input the application gives the executions it changes
// for reverse: 24 KB, so that a write costs about 125 RU in the simulated
// account. Reverse sends about ten Table requests per execution (its row
// and index rows, each read before it is written with its ETag), and
// Azurite on a 2-core machine serves a few hundred a second: with small
// docs the emulator, not the budget nor the latency, would bound the test.
var bigInput = strings.Repeat("0123456789abcdef", 24<<10/16)

// parallel runs fn(0..n-1), 64 at a time, and fails t on the first error.
func parallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
