package verify

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/transform"
)

// DefaultPageSize is the most docs a page of verify's queries asks for.
// A page costs verify about a doc's bytes, whatever its size: the reader
// hands each doc on as it is decoded from the answer
// (azure.DocReader.QueryAll). Pages are few because the local Cosmos DB
// stand-in works through its whole container for every page it answers
// (about 5 s a page at 30,000 docs on the 2-core test machine, whatever
// the page's size): at this size a container of up to 100,000 docs is one
// page. A real account bounds a page at 4 MB whatever is asked, and
// --max-ru asks for smaller ones (docs/performance.md, "verify").
const DefaultPageSize = 100_000

// FeedPageSize is the most docs a page of the change feed (--since) asks
// for. The SDK reads those pages whole and holds some five times their
// bytes at once, so they stay small: 3,000 executions are about 6 MB.
const FeedPageSize = 3000

// containers are the Cosmos DB containers verify reads, in this order.
var containers = []string{transform.ContainerEntities, transform.ContainerExecutions}

// blobPathFields are the execution doc properties that name a blob.
var blobPathFields = []string{"resultBlobPath", "logsBlobPath", "variablesBlobPath", "snapshotBlobPath"}

// docIndex is the doc side of verify: the entry of every doc read from
// Cosmos DB, sorted by its place (container, scope, id), on its way to
// disk beyond what memory holds, and the docs read per container. add
// is safe for concurrent use; the rest is read once the index is
// complete.
type docIndex struct {
	blobs transform.BlobIndex // the listing, to check the blob paths docs name

	mu   sync.Mutex
	act  *spill.Sorter
	rec  recWriter
	seq  uint64
	read map[string]int // docs read per container
	// feed: the docs come from the change feed (a --since), where a doc
	// can come twice: the later is kept; and a doc without _migration
	// names the row it would go back to (transform.DocRowRef).
	feed bool
}

func newDocIndex(blobs transform.BlobIndex, w *work) *docIndex {
	return &docIndex{blobs: blobs, act: w.sorter("actual"), read: map[string]int{}}
}

// add indexes one doc of container c, as the service returned it. A doc
// listed twice (a query page overlapping the next) is kept once, by the
// join. It returns an error for a doc it cannot decode, or when the
// sorter cannot write its runs.
func (d *docIndex) add(c string, raw []byte) error {
	a, err := d.entry(c, raw)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.read[c]++
	d.seq++
	a.seq = d.seq
	if d.feed {
		a.seq = math.MaxUint64 - d.seq
	}
	d.rec.actual(&a, false)
	return d.act.Add(d.rec.b)
}

// entry builds the compact entry of one doc of container c. It reads
// the doc once (transform.ReadDoc): the members it needs are decoded
// alone, and the doc is hashed by meaning from its text.
func (d *docIndex) entry(c string, raw []byte) (actualDoc, error) {
	doc, err := transform.ReadDoc(raw)
	if err != nil {
		return actualDoc{}, fmt.Errorf("container %s: undecodable doc: %w", c, err)
	}
	defer doc.Close()
	get := func(name string) any { v, _ := doc.Get(name); return v }
	a := actualDoc{ref: DocRef{Container: c, Scope: str(get("scope")), ID: str(get("id"))}}
	if mig, ok := get("_migration").(map[string]any); ok {
		a.hasMig = true
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = str(mig["table"]), str(mig["partitionKey"]), str(mig["rowKey"])
		a.migHash = migrationKey(mig)
	} else if d.feed {
		if doc, err := transform.DecodeDocOrdered(raw); err == nil {
			if ref, fail := transform.DocRowRef(doc); fail == nil {
				a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = ref.Table, ref.PartitionKey, ref.RowKey
			}
		}
	}
	if ts, ok := get("_ts").(json.Number); ok {
		a.ts, _ = ts.Int64()
	}
	// By meaning (SPEC §12): the timestamps of its row's table as
	// instants, a null field as an absent one.
	if a.docHash, err = doc.MeaningHash(a.ref.Table); err != nil {
		// A value canonical JSON refuses (it cannot come from a doc the
		// service stored) simply never matches.
		a.docHash = "unhashable"
	}
	a.expiry = neverExpires
	if t, ok := doc.Get("ttl"); ok {
		a.ttl = ttlState{present: true, raw: rawJSON(t)}
		if n, ok := t.(json.Number); ok {
			f, err := n.Float64()
			a.ttl.inRange = err == nil && f > 0 && f <= transform.ExecutionRetention
			if err == nil && f > 0 && f < math.MaxInt32 {
				// The service removes the doc ttl seconds after its
				// last write (a container's defaultTtl is not known
				// here: a doc without ttl is taken to stay).
				a.expiry = a.ts + int64(f)
			}
		}
	}
	if c == transform.ContainerExecutions {
		for _, f := range blobPathFields {
			if p, ok := get(f).(string); ok && !d.blobs.Exists(p) {
				a.blobIssues = append(a.blobIssues, blobIssue{f, p})
			}
		}
	}
	return a, nil
}

// seqs is the number of docs read.
func (d *docIndex) seqs() int { return int(d.seq) }

// readDocs reads every doc of every container into d: one cross-partition
// query per container, the containers at the same time (a service far
// away answers each page after a round trip), each doc judged on all
// CPUs as soon as the reader has decoded it from its page.
func readDocs(ctx context.Context, src DocSource, pageSize int, progress Progress, d *docIndex) error {
	progress.Step("reading docs of containers " + strings.Join(containers, ", "))
	g, gctx := errgroup.WithContext(ctx)
	type doc struct {
		container string
		raw       []byte
	}
	docs := make(chan doc, 256)
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for x := range docs {
				if err := d.add(x.container, x.raw); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var queries sync.WaitGroup
	for _, c := range containers {
		queries.Add(1)
		g.Go(func() error {
			defer queries.Done()
			return src.QueryAll(gctx, c, "SELECT * FROM c", nil, pageSize, func(raw []byte) error {
				select {
				case docs <- doc{c, raw}:
					return nil
				case <-gctx.Done():
					return gctx.Err()
				}
			})
		})
	}
	go func() {
		queries.Wait()
		close(docs)
	}()
	return g.Wait()
}

// str returns a JSON string's value, or the JSON text of any other value.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(rawJSON(v))
}

// migrationKey is the SHA-256 of a _migration by meaning
// (transform.MigrationMeaning): its row keys and its instant, not its
// hash.
func migrationKey(mig any) key {
	var k key
	sum := sha256.Sum256(transform.MigrationMeaning(mig))
	copy(k[:], sum[:])
	return k
}
