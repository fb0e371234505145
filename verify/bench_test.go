package verify_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	provision "github.com/bifrost/bifrost-migrate/init"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
	"github.com/bifrost/bifrost-migrate/verify"
)

// benchNow is the clock of the benchmark; the generated executions start
// within the 13 days before its day, so none is expired.
var benchNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// BenchmarkVerify compares verify with a raw scan of the same data in the
// same run: BIFROST_BENCH_ROWS generated executions (each with its four
// index rows, so five source rows) loaded into Azurite and migrated into
// the Cosmos DB stand-in. The raw scan is the least any verify must do:
// read every row page by page (ReadPage, 1,000 rows, decoded) and then
// every doc with one query per scope (WHERE c.scope = @scope, pages of
// 10,000). Metrics: rows/s of each, their ratio (verify ÷ raw, the
// acceptance bar is ≥ 0.8), and the seconds of each side of the raw scan,
// which say which service is the bottleneck.
//
// Loading 100,000 executions takes minutes; set BIFROST_BENCH_REUSE to
// the "prefix,database,blobcontainer" a previous run printed to skip it.
// Run it with -benchtime=1x.
func BenchmarkVerify(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("BIFROST_BENCH_ROWS"))
	if n <= 0 {
		b.Skip("set BIFROST_BENCH_ROWS to the number of generated executions")
	}
	ctx := context.Background()
	acct := testenv.Storage(b)
	cosmos, err := azure.NewCosmosClient(testenv.Cosmos(b), azure.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var prefix, db, blobs string
	if reuse := os.Getenv("BIFROST_BENCH_REUSE"); reuse != "" {
		parts := strings.Split(reuse, ",")
		if len(parts) != 3 {
			b.Fatal("BIFROST_BENCH_REUSE must be prefix,database,blobcontainer")
		}
		prefix, db, blobs = parts[0], parts[1], parts[2]
	} else {
		prefix, db, blobs = testenv.Name("bench"), testenv.Name("bench"), testenv.Name("benchblobs")
		b.Logf("loading %d executions; reuse with BIFROST_BENCH_REUSE=%s,%s,%s", n, prefix, db, blobs)
		start := time.Now()
		loadBench(b, acct, cosmos, n, prefix, db, blobs)
		b.Logf("loaded and migrated in %s", time.Since(start).Round(time.Second))
	}
	reader := azure.NewTableReader(acct, azure.Options{})
	docs, err := azure.NewDocReader(cosmos, db)
	if err != nil {
		b.Fatal(err)
	}
	bc, err := azure.NewBlobContainerClient(acct, blobs, azure.Options{})
	if err != nil {
		b.Fatal(err)
	}
	v := &verify.Verifier{Rows: reader, Docs: docs, Blobs: azure.NewBlobStore(bc)}
	// Generated data has no Config table, and a selected table that does
	// not exist is an error.
	opts := verify.Options{Transform: transform.Options{Now: benchNow}, TablePrefix: prefix, Database: db,
		Tables: []string{fixtures.TableEntities, fixtures.TableRelationships}}

	var rawSecs, tableSecs, docSecs, verifySecs, heapMB float64
	var rows int
	b.ResetTimer()
	for range b.N {
		// The raw scan runs before and after verify, so that neither
		// side gains from warming the emulators; its mean is the bar.
		t1, d1, nrows := rawScan(b, reader, docs, prefix, n)
		start := time.Now()
		stop := sampleHeap(&heapMB)
		r, err := v.Run(ctx, opts)
		stop()
		if err != nil {
			b.Fatal(err)
		}
		verifySecs = time.Since(start).Seconds()
		t2, d2, _ := rawScan(b, reader, docs, prefix, n)
		rows = nrows
		tableSecs, docSecs = (t1+t2)/2, (d1+d2)/2
		rawSecs = tableSecs + docSecs
		if !r.OK || r.Totals.Rows != rows || r.Totals.Matched != n {
			b.Fatalf("verify: ok %v totals %+v, want %d rows and %d matched", r.OK, r.Totals, rows, n)
		}
	}
	b.StopTimer()
	raw, ver := float64(rows)/rawSecs, float64(rows)/verifySecs
	b.ReportMetric(raw, "raw-rows/s")
	b.ReportMetric(ver, "verify-rows/s")
	b.ReportMetric(ver/raw, "ratio")
	b.ReportMetric(tableSecs, "raw-tables-s")
	b.ReportMetric(docSecs, "raw-docs-s")
	b.ReportMetric(verifySecs, "verify-s")
	b.ReportMetric(heapMB, "verify-peak-heap-MB")
	b.Logf("%d rows, %d docs: raw scan %.1fs (tables %.1fs, docs %.1fs) = %.0f rows/s; verify %.1fs = %.0f rows/s; ratio %.2f; peak heap %.0f MB",
		rows, n, rawSecs, tableSecs, docSecs, raw, verifySecs, ver, ver/raw, heapMB)
}

// rawScan reads every row page by page, then every doc with one query per
// scope, and returns the seconds of each side and the number of rows.
func rawScan(b *testing.B, reader *azure.TableReader, docs *azure.DocReader, prefix string, wantDocs int) (tableSecs, docSecs float64, rows int) {
	ctx := context.Background()
	start := time.Now()
	scopes := map[string]bool{}
	for _, table := range fixtures.Tables() {
		if ok, _ := reader.Exists(ctx, prefix+table); !ok {
			continue
		}
		err := store.Scan(ctx, reader, "", prefix+table, store.Query{}, store.Cursor{}, func(p store.Page) error {
			rows += len(p.Rows)
			if table == fixtures.TableEntities {
				for _, r := range p.Rows {
					scopes[transform.Scope(r.PartitionKey)] = true
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	mid := time.Now()
	ndocs := 0
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		for scope := range scopes {
			err := docs.QueryAll(ctx, c, "SELECT * FROM c WHERE c.scope = @scope", []store.QueryParam{{Name: "@scope", Value: scope}}, 0, func([]byte) error {
				ndocs++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if ndocs != wantDocs {
		b.Fatalf("raw scan read %d docs, want %d", ndocs, wantDocs)
	}
	return mid.Sub(start).Seconds(), time.Since(mid).Seconds(), rows
}

// sampleHeap records the largest HeapInuse, in MB, every 50 ms until the
// returned stop is called.
func sampleHeap(peak *float64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			*peak = max(*peak, float64(m.HeapInuse)/(1<<20))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// loadBench generates n executions into tables prefix* and the blob
// container, creates the database with the built-in containers, and
// writes the docs run would write.
func loadBench(b *testing.B, acct azure.StorageAccount, cosmos *azcosmos.Client, n int, prefix, db, blobs string) {
	ctx := context.Background()
	tw, err := azure.NewTableWriter(acct, azure.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bw, err := azure.NewBlobWriter(acct, blobs, azure.Options{})
	if err != nil {
		b.Fatal(err)
	}
	gen := fixtures.GenerateOptions{N: n, Seed: 1, Base: benchNow.Truncate(24 * time.Hour)}
	if _, err := fixtures.LoadGenerated(ctx, tw, bw, gen, fixtures.LoadOptions{TablePrefix: prefix, Concurrency: 16}); err != nil {
		b.Fatal(err)
	}
	layout, err := provision.DefaultLayout()
	if err != nil {
		b.Fatal(err)
	}
	p := provision.Provisioner{Cosmos: azure.NewProvisionCosmos(cosmos), Database: db, Blobs: azure.NewProvisionBlobs(acct, azure.Options{})}
	plan, err := p.Plan(ctx, layout)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Apply(ctx, plan); err != nil {
		b.Fatal(err)
	}
	bc, _ := azure.NewBlobContainerClient(acct, blobs, azure.Options{})
	facts := map[string]transform.BlobFacts{}
	_ = azure.NewBlobStore(bc).List(ctx, func(name string, size int64) error {
		exec, file, _ := strings.Cut(name, "/")
		if bn, ok := transform.ParseBlobName(file); ok {
			f := facts[exec]
			f.Set(bn, size)
			facts[exec] = f
		}
		return nil
	})
	reader := azure.NewTableReader(acct, azure.Options{})
	work := make(chan transform.Outcome, 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				err := func() error {
					for _, u := range o.Uploads {
						if err := bw.Upload(ctx, u.Path, u.Data); err != nil {
							return err
						}
					}
					c, _ := cosmos.NewContainer(db, o.Container)
					_, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(o.Scope), o.DocJSON, nil)
					return err
				}()
				if err != nil {
					mu.Lock()
					firstErr = fmt.Errorf("%s/%s: %w", o.Scope, o.ID, err)
					mu.Unlock()
				}
			}
		}()
	}
	ids := transform.NewIDSet()
	err = store.Scan(ctx, reader, "", prefix+fixtures.TableEntities, store.Query{}, store.Cursor{}, func(p store.Page) error {
		for _, row := range p.Rows {
			row.Table = fixtures.TableEntities
			_, rest, _ := strings.Cut(row.RowKey, "_")
			o := ids.Check(transform.Transform(row, facts[rest], transform.Options{Now: benchNow}))
			if o.Disposition == transform.DispositionDoc {
				work <- o
			}
		}
		return nil
	})
	close(work)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}
