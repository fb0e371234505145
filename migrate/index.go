package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/bifrost/bifrost-migrate/transform"
)

// blobIndex is what one listing of container execution-data says about
// each execution's blobs: only executions that have at least one of the
// known blobs are kept, under a 16-byte hash of the execution id (SPEC §8:
// a few bytes per execution, never a request per possible blob).
type blobIndex map[[16]byte]transform.BlobFacts

func blobKey(executionID string) [16]byte {
	sum := sha256.Sum256([]byte(executionID))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}

// listBlobs lists the container once, in name order.
func listBlobs(ctx context.Context, blobs BlobStore) (blobIndex, error) {
	idx := blobIndex{}
	err := blobs.List(ctx, func(name string, size int64) error {
		id, file, ok := strings.Cut(name, "/")
		if !ok || strings.Contains(file, "/") {
			return nil
		}
		b, ok := transform.ParseBlobName(file)
		if !ok {
			return nil
		}
		k := blobKey(id)
		f := idx[k]
		f.Set(b, size)
		idx[k] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return idx, nil
}

func (idx blobIndex) facts(executionID string) transform.BlobFacts {
	if executionID == "" {
		return transform.BlobFacts{}
	}
	return idx[blobKey(executionID)]
}

// rowExecutionIDs returns the execution ids an Entities row stands for:
// the ExecutionId property and the id in its RowKey (both when they
// differ). It returns nothing for rows that are not executions.
func rowExecutionIDs(row transform.Row) (prop, fromKey string) {
	rest, ok := strings.CutPrefix(row.RowKey, "execution:")
	if !ok {
		return "", ""
	}
	_, fromKey, _ = strings.Cut(rest, "_")
	if v, ok := row.Props["ExecutionId"]; ok {
		prop = v.Str
	}
	return prop, fromKey
}

// blobExecutionID is the id under which an execution row's blobs are
// looked up: the ExecutionId property, else the RowKey's.
func blobExecutionID(row transform.Row) string {
	prop, fromKey := rowExecutionIDs(row)
	if prop != "" {
		return prop
	}
	return fromKey
}

// execSet is the set of execution ids seen in Entities, for dangling
// index detection (SPEC §9). It keeps 8 bytes of a SHA-256 per id: a
// false match (about n²/2⁶⁵) can only hide a dangling-index warning,
// never change a disposition.
type execSet map[uint64]struct{}

func execKey(id string) uint64 {
	sum := sha256.Sum256([]byte(id))
	return binary.LittleEndian.Uint64(sum[:8])
}

func (s execSet) addRow(row transform.Row) {
	prop, fromKey := rowExecutionIDs(row)
	for _, id := range []string{prop, fromKey} {
		if id != "" {
			s[execKey(id)] = struct{}{}
		}
	}
}

func (s execSet) has(id string) bool {
	_, ok := s[execKey(id)]
	return ok
}
