package transform

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The rules about rows that every reader of the tables shares (run,
// replay, verify): the tables' read order, the service's key order, the
// execution ids a row stands for, and what one listing of the execution
// blobs says. They are pure and safe for concurrent use unless stated.

// Tables returns the three source tables in read order: Config, Entities,
// Relationships (SPEC §10: a collision's later row in this order loses).
func Tables() []string { return []string{TableConfig, TableEntities, TableRelationships} }

// TableOrder is a table's place in the read order (3 for any other name).
func TableOrder(table string) int {
	if i := slices.Index(Tables(), table); i >= 0 {
		return i
	}
	return len(Tables())
}

// SelectTables returns the selected tables in read order, each once;
// empty means all three. An unknown name is an error naming it.
func SelectTables(selected []string) ([]string, error) {
	if len(selected) == 0 {
		return Tables(), nil
	}
	for _, t := range selected {
		if TableOrder(t) == len(Tables()) {
			return nil, fmt.Errorf("unknown table %q (want Config, Entities or Relationships)", t)
		}
	}
	var out []string
	for _, t := range Tables() {
		if slices.Contains(selected, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// CompareKeys compares row keys in the Table service's order: by
// PartitionKey, then RowKey, each by UTF-16 code units. It allocates
// nothing.
func CompareKeys(pk1, rk1, pk2, rk2 string) int {
	if c := CompareUTF16(pk1, pk2); c != 0 {
		return c
	}
	return CompareUTF16(rk1, rk2)
}

// CompareUTF16 compares two strings by their UTF-16 code units, as the
// Table service orders keys; it differs from byte order only where a
// character above U+FFFF (two surrogates, 0xD800–0xDFFF) meets one from
// U+E000 to U+FFFF. Invalid UTF-8 compares as U+FFFD, as utf16.Encode
// would. It allocates nothing.
func CompareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ha, la := utf16Units(ra)
			hb, lb := utf16Units(rb)
			if ha != hb {
				return cmp.Compare(ha, hb)
			}
			return cmp.Compare(la, lb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Units is r's first UTF-16 unit and its second (0 when it has one).
func utf16Units(r rune) (first, second int) {
	if r < 0x10000 {
		return int(r), 0
	}
	r -= 0x10000
	return 0xD800 + int(r>>10), 0xDC00 + int(r&0x3FF)
}

// ExecutionIDs returns the execution ids an Entities row stands for: its
// ExecutionId property and the id in its RowKey, the part after the first
// '_' of execution:{reverseTs}_{id} (both, even when they differ; either
// may be empty). A row that is not an execution gives two empty strings.
func ExecutionIDs(row Row) (prop, fromKey string) {
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

// ExecutionID is the id an execution row's blobs are filed under (SPEC
// §8): its ExecutionId property, else the RowKey's; "" for other rows.
func ExecutionID(row Row) string {
	prop, fromKey := ExecutionIDs(row)
	if prop != "" {
		return prop
	}
	return fromKey
}

// BlobIndex is what one listing of container execution-data says about
// each execution's blobs (SPEC §8: a few bytes per execution, never a
// request per possible blob): only executions with at least one of the
// known blobs are kept, under a 16-byte hash of the execution id. It is
// not safe for concurrent use while being built.
type BlobIndex map[[16]byte]BlobFacts

// BlobKey is the 16-byte hash BlobIndex files an id under; other compact
// sets of ids use it too.
func BlobKey(id string) [16]byte {
	sum := sha256.Sum256([]byte(id))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}

// Add records one listed blob, "{executionId}/{file}"; names that are not
// an execution's known blob are ignored. Its signature fits a listing's
// callback.
func (idx BlobIndex) Add(name string, size int64) error {
	id, file, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(file, "/") {
		return nil
	}
	b, ok := ParseBlobName(file)
	if !ok {
		return nil
	}
	k := BlobKey(id)
	f := idx[k]
	f.Set(b, size)
	idx[k] = f
	return nil
}

// Facts returns what the listing said about the execution's blobs.
func (idx BlobIndex) Facts(executionID string) BlobFacts {
	if executionID == "" {
		return BlobFacts{}
	}
	return idx[BlobKey(executionID)]
}

// Exists reports whether a doc's blob path ("{executionId}/{file}") names
// a listed blob.
func (idx BlobIndex) Exists(path string) bool {
	id, file, ok := strings.Cut(path, "/")
	if !ok {
		return false
	}
	b, ok := ParseBlobName(file)
	return ok && idx.Facts(id).Exists(b)
}
