package migrate

import (
	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The sets run keeps of every row read (SPEC §9, §10), in memory that does
// not grow with the tables (SPEC §11; docs/performance.md, "At any size"):
//
//   - the doc ids, to find collisions: exact, because a collision
//     dead-letters a row. A spill.KeySet: the latest ids in memory, the
//     rest in sorted runs on disk, and a filter of fixed size that spares
//     almost every lookup the disk;
//   - the execution ids, to find dangling indexes: a filter of fixed size
//     alone (execFilter). A false match can only hide a dangling-index
//     warning, which SPEC §9 makes a warning, not a disposition.
//
// Both are deterministic: a resumed run that reads the same rows again
// builds the same sets and decides exactly what an uninterrupted run
// decides (SPEC §11).

// Their sizes. A filter's false-match rate grows with the keys it holds
// (spill.BloomHashes; docs/performance.md).
const (
	// idMemoryKeys is how many doc ids the set holds in memory (a map of
	// 16-byte keys, about 1 MB) before it writes them out as a run.
	idMemoryKeys = 1<<16 - 1<<13
	// idFilterBytes is the size of the filter before the runs on disk.
	idFilterBytes = 2 << 20
	// execFilterBytes is the size of the execution-id filter.
	execFilterBytes = 4 << 20
)

// execFilter is the set of execution ids seen in Entities, for the
// dangling-index check (SPEC §9): a filter of fixed size, so a false
// match (see the sizes above) can only hide a dangling-index warning,
// never change a disposition. It is not safe for concurrent use.
type execFilter struct{ f spill.Bloom }

func newExecFilter(bytes int) *execFilter { return &execFilter{spill.NewBloom(bytes)} }

// AddRow adds the execution ids of an Entities row (both, when its
// property and its RowKey differ: an index naming either is not
// dangling).
func (s *execFilter) AddRow(row transform.Row) {
	prop, fromKey := transform.ExecutionIDs(row)
	for _, id := range []string{prop, fromKey} {
		if id != "" {
			s.f.Add(transform.BlobKey(id))
		}
	}
}

// Has reports whether the execution id may have been added; false is
// certain.
func (s *execFilter) Has(id string) bool { return s.f.Has(transform.BlobKey(id)) }
