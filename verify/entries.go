package verify

import (
	"encoding/json"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// expectedDoc is the compact entry of one selected row whose disposition
// is doc (or expired, when expired is set): where its doc must be and
// what it must hash to. seq is the row's place in read order (every row
// of the selected tables counts, sampled or not).
type expectedDoc struct {
	ref     DocRef
	seq     uint64
	kind    int // index into rowIndex.kinds
	docHash string
	migHash key // migrationKey
	wantTTL bool
	expired bool
	// rowTS is the row's Timestamp: a row changed after verify started is
	// a change in flight (recheck.go).
	rowTS time.Time
}

// ttlState is what a doc's ttl is.
type ttlState struct {
	present bool
	raw     json.RawMessage
	inRange bool // a number with 0 < ttl ≤ transform.ExecutionRetention
}

type blobIssue struct{ field, path string }

// actualDoc is the compact entry of one doc read from Cosmos DB: never
// its body, only what the join compares.
type actualDoc struct {
	ref        DocRef // Table, PartitionKey, RowKey from _migration
	seq        uint64 // read order, to keep a doc listed twice once
	hasMig     bool
	docHash    string // transform.MeaningHash
	migHash    key    // migrationKey
	ttl        ttlState
	blobIssues []blobIssue
	// ts is the doc's _ts (Unix seconds; 0 when it has none).
	ts int64
	// expiry is when the service removes it (Unix seconds: _ts + ttl),
	// or neverExpires.
	expiry int64
}

// src is the key of the row a doc's _migration names.
func (a *actualDoc) src() key { return keyOf(a.ref.Table, a.ref.PartitionKey, a.ref.RowKey) }

// The records of the entries. An expected doc is sorted by its place
// (container, scope, id; then read order) for the join with the docs,
// and by its row (table, PartitionKey, RowKey) when it is not found at
// its place; an actual doc by its place, and by the row its _migration
// names (then its place) when no row took it there.

// rowPlace is the row's table, partition key and row key.
func (d DocRef) rowPlace() [3]string { return [3]string{d.Table, d.PartitionKey, d.RowKey} }

// docPlace is the doc's container, scope and id.
func (d DocRef) docPlace() [3]string { return [3]string{d.Container, d.Scope, d.ID} }

func (w *recWriter) expected(e *expectedDoc, byRow bool) {
	w.reset()
	first, then := e.ref.docPlace(), e.ref.rowPlace()
	if byRow {
		first, then = then, first
	}
	w.keys(first)
	w.seq(e.seq)
	w.strs(then)
	w.uvarint(uint64(e.kind))
	w.bool(e.wantTTL)
	w.bool(e.expired)
	w.str(e.docHash)
	w.bytes(e.migHash[:])
	w.time(e.rowTS)
}

func (r *recReader) expected(byRow bool) expectedDoc {
	var e expectedDoc
	a, b, c := r.key(), r.key(), r.key()
	e.seq = r.seq()
	x, y, z := r.str(), r.str(), r.str()
	if byRow {
		e.ref = DocRef{Table: a, PartitionKey: b, RowKey: c, Container: x, Scope: y, ID: z}
	} else {
		e.ref = DocRef{Container: a, Scope: b, ID: c, Table: x, PartitionKey: y, RowKey: z}
	}
	e.kind = int(r.uvarint())
	e.wantTTL = r.bool()
	e.expired = r.bool()
	e.docHash = r.str()
	copy(e.migHash[:], r.raw())
	e.rowTS = r.time()
	return e
}

func (w *recWriter) actual(a *actualDoc, byRow bool) {
	w.reset()
	if byRow {
		w.keys(a.ref.rowPlace())
	}
	w.keys(a.ref.docPlace())
	w.seq(a.seq)
	if !byRow {
		w.strs(a.ref.rowPlace())
	}
	w.bool(a.hasMig)
	w.str(a.docHash)
	w.bytes(a.migHash[:])
	w.bool(a.ttl.present)
	w.bytes(a.ttl.raw)
	w.bool(a.ttl.inRange)
	w.uvarint(uint64(len(a.blobIssues)))
	for _, b := range a.blobIssues {
		w.str(b.field)
		w.str(b.path)
	}
	w.varint(a.ts)
	w.varint(a.expiry)
}

func (r *recReader) actual(byRow bool) actualDoc {
	var a actualDoc
	if byRow {
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = r.key(), r.key(), r.key()
	}
	a.ref.Container, a.ref.Scope, a.ref.ID = r.key(), r.key(), r.key()
	a.seq = r.seq()
	if !byRow {
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = r.str(), r.str(), r.str()
	}
	a.hasMig = r.bool()
	a.docHash = r.str()
	copy(a.migHash[:], r.raw())
	a.ttl.present = r.bool()
	if raw := r.bytes(); len(raw) > 0 {
		a.ttl.raw = raw
	}
	a.ttl.inRange = r.bool()
	if n := r.uvarint(); n > 0 && r.err == nil {
		a.blobIssues = make([]blobIssue, 0, min(n, 4))
		for range n {
			a.blobIssues = append(a.blobIssues, blobIssue{r.str(), r.str()})
		}
	}
	a.ts = r.varint()
	a.expiry = r.varint()
	return a
}

// seenRow is the disposition of a selected row, by its keys: an orphan's
// reason says what became of its row.
type seenRow struct {
	table, partitionKey, rowKey string
	disposition                 transform.Disposition
}

func (w *recWriter) seen(s seenRow) {
	w.reset()
	w.key(s.table)
	w.key(s.partitionKey)
	w.key(s.rowKey)
	w.str(string(s.disposition))
}

func (r *recReader) seen() seenRow {
	return seenRow{table: r.key(), partitionKey: r.key(), rowKey: r.key(), disposition: r.disposition()}
}

// disposition reads a disposition written by recWriter.str: one of
// transform's without a copy.
func (r *recReader) disposition() transform.Disposition {
	b := r.raw()
	for _, d := range [...]transform.Disposition{transform.DispositionDoc, transform.DispositionDroppedIndex,
		transform.DispositionKeptInTables, transform.DispositionExpired, transform.DispositionDeadLetter} {
		if string(b) == string(d) {
			return d
		}
	}
	return transform.Disposition(b)
}
