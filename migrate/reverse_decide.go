package migrate

import (
	"fmt"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// revVerdict is reverse's decision for a changed doc whose rows it knows
// (SPEC §15), made before any write.
type revVerdict int

const (
	// revWrite: write the doc's rows (none differ from the tables, or the
	// tables did not change them since the doc was migrated).
	revWrite revVerdict = iota
	// revConflict: the row changed in the tables after the doc was
	// migrated, and the doc would change it: not written, listed.
	revConflict
	// revForce: a conflict, written because of --force.
	revForce
)

// revDoc is what reverse reads of a changed doc before it reads any row.
type revDoc struct {
	doc    transform.Doc
	mig    transform.Migration
	hasMig bool
	// hash is the hash of the doc's content now (SPEC §10).
	hash string
}

// readRevDoc decodes a doc from the change feed. It returns the reason to
// dead-letter the doc when it cannot be written back (it does not decode,
// its _migration is malformed, its content cannot be hashed). It is pure.
func readRevDoc(raw []byte) (revDoc, string) {
	var d revDoc
	var err error
	if d.doc, err = transform.DecodeDocOrdered(raw); err != nil {
		return d, fmt.Sprintf("%s: %v", transform.ReverseBadDoc, err)
	}
	if d.mig, d.hasMig, err = transform.DocMigration(d.doc); err != nil {
		return d, fmt.Sprintf("%s: %v", transform.ReverseBadDoc, err)
	}
	if d.hash, err = transform.Hash(d.doc); err != nil {
		return d, fmt.Sprintf("%s: %v", transform.ReverseUnencodable, err)
	}
	return d, ""
}

// unchanged reports whether the doc came from the tables and nobody
// changed it since (its _migration.hash matches its content): nothing to
// write back — unless an earlier attempt on this doc wrote rows (wrote:
// an older copy of the doc, then a start-over), whose rows must then be
// made to hold this version.
func (d revDoc) unchanged(wrote bool) bool {
	return d.hasMig && d.hash == d.mig.Hash && !wrote
}

// decideReverse is reverse's decision for a changed doc d whose main row
// would be want, given the row the table holds (existing, nil when none),
// whether this reverse left that row as it is now itself (ours: it wrote
// it, or found it holding what a doc said, and its ETag is still the one
// it saw) and the start of the window (start: --since). A row that
// already holds what the doc says is no conflict, whoever wrote it (a
// reverse killed before it recorded the sync wrote it), and neither is a
// row this reverse left as it is; otherwise a row that changed in the
// tables after the doc was last in step with it (rowChanged) is a
// conflict, written only with force. It is pure.
func decideReverse(d revDoc, existing *transform.Row, ours bool, want transform.Row, start time.Time, force bool) revVerdict {
	switch {
	case existing == nil, ours, !rowChanged(*existing, d, start):
		return revWrite
	case len(transform.DiffRows(*existing, want)) == 0:
		return revWrite
	case force:
		return revForce
	}
	return revConflict
}

// rowChanged reports whether the row changed in the tables after the doc
// d was last in step with it: after d's _migration.timestamp (an
// unparseable one counts as changed). A doc without _migration (an
// application that writes its own model back drops the fields it does not
// know) carries no such time, so it is judged against the window instead
// (SPEC §15): the row changed when its Timestamp is later than start.
func rowChanged(row transform.Row, d revDoc, start time.Time) bool {
	if !d.hasMig {
		return row.Timestamp.After(start)
	}
	t, ok := transform.ParseTimestamp(d.mig.Timestamp)
	return !ok || row.Timestamp.After(t)
}
