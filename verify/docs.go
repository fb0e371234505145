package verify

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/transform"
)

// containers are the Cosmos DB containers verify reads, in this order.
var containers = []string{transform.ContainerEntities, transform.ContainerExecutions}

// blobPathFields are the execution doc properties that name a blob.
var blobPathFields = []string{"resultBlobPath", "logsBlobPath", "variablesBlobPath", "snapshotBlobPath"}

// ttlState is what a doc's ttl is.
type ttlState struct {
	present bool
	raw     json.RawMessage
	inRange bool // a number with 0 < ttl ≤ transform.ExecutionRetention
}

type blobIssue struct{ field, path string }

// actualDoc is the compact entry of one doc read from Cosmos DB: never
// its body, only what the join compares (about 250 bytes).
type actualDoc struct {
	ref        DocRef // Table, PartitionKey, RowKey from _migration
	hasMig     bool
	src        key
	docHash    string // transform.MeaningHash
	migHash    key    // migrationKey
	ttl        ttlState
	blobIssues []blobIssue
}

// docIndex is the doc side of verify: an entry per doc read from Cosmos
// DB, found by its place (container, scope, id) and by the row its
// _migration names (the first such doc). add is safe for concurrent use;
// the rest is read once the index is complete.
type docIndex struct {
	blobs transform.BlobIndex // the listing, to check the blob paths docs name

	mu     sync.Mutex
	actual []actualDoc
	byKey  map[key]int
	bySrc  map[key]int
	read   map[string]int // docs read per container
}

func newDocIndex(blobs transform.BlobIndex) *docIndex {
	return &docIndex{blobs: blobs, byKey: map[key]int{}, bySrc: map[key]int{}, read: map[string]int{}}
}

// add indexes one doc of container c, as the service returned it. A doc
// listed twice (a query page overlapping the next) is kept once. It
// returns an error for a doc it cannot decode.
func (d *docIndex) add(c string, raw []byte) error {
	a, k, err := d.entry(c, raw)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.read[c]++
	if _, dup := d.byKey[k]; dup {
		return nil
	}
	d.byKey[k] = len(d.actual)
	if a.hasMig {
		if _, dup := d.bySrc[a.src]; !dup {
			d.bySrc[a.src] = len(d.actual)
		}
	}
	d.actual = append(d.actual, a)
	return nil
}

// entry builds the compact entry of one doc of container c and its key.
func (d *docIndex) entry(c string, raw []byte) (actualDoc, key, error) {
	m, err := transform.DecodeDoc(raw)
	if err != nil {
		return actualDoc{}, key{}, fmt.Errorf("container %s: undecodable doc: %w", c, err)
	}
	a := actualDoc{ref: DocRef{Container: c, Scope: str(m["scope"]), ID: str(m["id"])}}
	if mig, ok := m["_migration"].(map[string]any); ok {
		a.hasMig = true
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = str(mig["table"]), str(mig["partitionKey"]), str(mig["rowKey"])
		a.src = keyOf(a.ref.Table, a.ref.PartitionKey, a.ref.RowKey)
		a.migHash = migrationKey(mig)
	}
	// By meaning (SPEC §12): the timestamps of its row's table as
	// instants, a null field as an absent one.
	if a.docHash, err = transform.MeaningHash(a.ref.Table, m); err != nil {
		// A value canonical JSON refuses (it cannot come from a doc the
		// service stored) simply never matches.
		a.docHash = "unhashable"
	}
	if t, ok := m["ttl"]; ok {
		a.ttl = ttlState{present: true, raw: rawJSON(t)}
		if n, ok := t.(json.Number); ok {
			f, err := n.Float64()
			a.ttl.inRange = err == nil && f > 0 && f <= transform.ExecutionRetention
		}
	}
	if c == transform.ContainerExecutions {
		for _, f := range blobPathFields {
			if p, ok := m[f].(string); ok && !d.blobs.Exists(p) {
				a.blobIssues = append(a.blobIssues, blobIssue{f, p})
			}
		}
	}
	return a, keyOf(c, a.ref.Scope, a.ref.ID), nil
}

// readDocs reads every doc of every container into d: one cross-partition
// query per container, the containers at the same time (a service far
// away answers each page after a round trip), their pages decoded and
// hashed on all CPUs while the next pages are fetched.
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
