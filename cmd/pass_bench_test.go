package cmd_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestPassBenchmark measures one `replay --since` pass over 100 changed
// rows against the emulators, on sources of generated executions of two
// sizes (docs/performance.md, "A pass"): the built binary's pass (the
// command's time and its engine's), beside the same rows read by one
// plain scan per table (the Timestamp filter, page after page, through
// the tool's own adapter) and by store.ScanSpans alone, and, with
// BIFROST_BENCH_BASE set to a binary built from another commit, that
// binary's pass, taking turns on the same data. It is a benchmark, not a test: it asserts only
// that every pass reads the 100 changed rows, and only runs with
// BIFROST_BENCH=1 (./bench.sh).
//
// Environment: BIFROST_PASS_SIZES, the sizes in executions (default
// 15000,150000; each execution has 4 index rows); BIFROST_BENCH_ROUNDS,
// the measured rounds per size (default 3).
func TestPassBenchmark(t *testing.T) {
	testenv.Benchmark(t)
	sizes := testenv.Numbers(t, "BIFROST_PASS_SIZES", passChanges, 15000, 150000)
	rounds := testenv.Numbers(t, "BIFROST_BENCH_ROUNDS", 1, 3)[0]
	b := newBench(t)
	for _, n := range sizes {
		b.pass(n, os.Getenv("BIFROST_BENCH_BASE"), rounds)
	}
	t.Logf("results:\n%s", b.report.String())
}

// passChanges is how many executions change before the measured pass:
// each its own row and its status index row, 100 rows in all.
const passChanges = 50

// pass loads n executions, changes passChanges of them, and measures a
// pass over the changes, rounds times.
func (b *bench) pass(n int, base string, rounds int) {
	ctx := context.Background()
	prefix, blobs, gen := b.loadAt(n)
	since := time.Now().UTC()
	b.changeExecutions(ctx, prefix, gen)
	db := b.newDatabase()
	defer b.dropDatabase(db)
	args := []string{"replay", "--since", since.Format(time.RFC3339Nano), "--database", db, "--table-prefix", prefix,
		"--blob-container", blobs, "--tables", "Entities,Relationships", "--state-dir", filepath.Join(b.t.TempDir(), "state"),
		"--output", "json", "--quiet"}
	// A pass's time: the command's (wall-clock, its start-up checks
	// included) and the engine's (the summary's elapsedSeconds: reading,
	// deciding, writing).
	type passTime struct{ wall, engine time.Duration }
	replay := func(bin string) passTime {
		wall, _, _ := b.binExec(map[string]string{"CosmosDBConnection": testenv.CosmosConnection(b.t)}, bin, args...)
		var s struct {
			Totals         migrate.ReplayCounts `json:"totals"`
			ElapsedSeconds float64              `json:"elapsedSeconds"`
		}
		lastLine(b.t, b.stdout, &s)
		if s.Totals.Rows != 2*passChanges {
			b.t.Fatalf("%s read %d rows, want the %d changed", bin, s.Totals.Rows, 2*passChanges)
		}
		return passTime{wall, time.Duration(s.ElapsedSeconds * float64(time.Second))}
	}
	say := func(p passTime) string { return passSeconds(p.wall) + " (engine " + passSeconds(p.engine) + ")" }
	replay(b.bin) // creates the changed executions' docs: every measured pass then finds them done
	var raws, rangeds []time.Duration
	var befores, afters []passTime
	for r := range rounds {
		raw, ranged := b.scanSince(ctx, prefix, since, false), b.scanSince(ctx, prefix, since, true)
		raws, rangeds = append(raws, raw), append(rangeds, ranged)
		line := "size " + strconv.Itoa(n) + ", round " + strconv.Itoa(r+1) + ": one scan per table " + passSeconds(raw) + ", store.ScanSpans " + passSeconds(ranged)
		if base != "" {
			before := replay(base)
			befores = append(befores, before)
			line += ", pass before (" + filepath.Base(base) + ") " + say(before)
		}
		after := replay(b.bin)
		afters = append(afters, after)
		b.logf("%s, pass %s", line, say(after))
	}
	medians := func(ps []passTime) passTime {
		var walls, engines []time.Duration
		for _, p := range ps {
			walls, engines = append(walls, p.wall), append(engines, p.engine)
		}
		return passTime{passMedian(walls), passMedian(engines)}
	}
	summary := "PASS at " + strconv.Itoa(n) + " executions (" + strconv.Itoa(5*n) + " rows), 100 changed, medians of " + strconv.Itoa(rounds) +
		": one scan per table " + passSeconds(passMedian(raws)) + ", store.ScanSpans " + passSeconds(passMedian(rangeds)) + ", pass " + say(medians(afters))
	if base != "" {
		summary += ", pass before " + say(medians(befores))
	}
	b.logf("%s", summary)
}

// loadAt generates n executions (seed 1) into fresh tables under a
// prefix of their own, as load does, and returns what generated them.
func (b *bench) loadAt(n int) (prefix, blobs string, gen fixtures.GenerateOptions) {
	prefix, blobs, gen, _ = b.loadAs("pass", n)
	return prefix, blobs, gen
}

// changeExecutions changes passChanges executions spread over the source
// as the application does when one ends: its row's Status, and its
// status index row written again.
func (b *bench) changeExecutions(ctx context.Context, prefix string, gen fixtures.GenerateOptions) {
	b.t.Helper()
	tw, err := azure.NewTableWriter(b.storage, azure.Options{})
	if err != nil {
		b.t.Fatal(err)
	}
	every, i, changed, current := gen.N/passChanges, -1, 0, false
	write := func(table string, row transform.Row) error {
		return tw.UpsertBatch(ctx, prefix+table, row.PartitionKey, [][]byte{transform.EncodeEntity(row)}, []string{row.RowKey})
	}
	// Each execution's index rows follow its row.
	err = fixtures.Generate(gen, func(it fixtures.Item) error {
		switch {
		case it.Table == transform.TableEntities:
			i++
			current = i%every == 0 && changed < passChanges
			if !current {
				return nil
			}
			changed++
			it.Row.Props["Status"] = transform.String("Cancelled")
			return write(it.Table, it.Row)
		case it.Table == transform.TableRelationships && current && strings.HasPrefix(it.Row.RowKey, "status:"):
			return write(it.Table, it.Row)
		}
		return nil
	})
	if err != nil {
		b.t.Fatalf("change: %v", err)
	}
}

// scanSince reads the rows changed since `since` through the tool's
// adapter and returns its time: one plain scan of each table with the
// Timestamp filter, page after page (store.Scan), or with ranged, the
// way a pass reads them (store.ScanSpans of the tables, split by
// store.Splits).
func (b *bench) scanSince(ctx context.Context, prefix string, since time.Time, ranged bool) time.Duration {
	b.t.Helper()
	r := azure.NewTableReader(b.storage, azure.Options{})
	tables := []string{transform.TableEntities, transform.TableRelationships}
	start, rows := time.Now(), 0
	count := func(p store.Page) error {
		rows += len(p.Rows)
		return nil
	}
	if ranged {
		spans := make([]store.Span, len(tables))
		for i, table := range tables {
			spans[i] = store.Span{Table: table, Query: store.Query{Since: since}, Splits: store.Splits(table)}
		}
		if err := store.ScanSpans(ctx, r, prefix, spans, func(_ int, p store.Page) error { return count(p) }); err != nil {
			b.t.Fatal(err)
		}
	}
	for _, table := range tables {
		if ranged {
			break
		}
		if err := store.Scan(ctx, r, prefix, table, store.Query{Since: since}, store.Cursor{}, count); err != nil {
			b.t.Fatal(err)
		}
	}
	d := time.Since(start)
	if rows != 2*passChanges {
		b.t.Fatalf("the scan (ranged: %v) read %d rows, want the %d changed", ranged, rows, 2*passChanges)
	}
	return d
}

func passSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" }

func passMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
