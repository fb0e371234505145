package migrate

import (
	"bytes"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// verdict is what replay does with one doc (SPEC §13): the decision,
// made from what Cosmos DB holds and what the row gives, before any
// write.
type verdict int

const (
	verdictNone          verdict = iota // nothing to do (prune: the row is back, or the doc gone or replaced)
	verdictCreate                       // no doc: create it
	verdictUnchanged                    // the doc holds the row's content and provenance
	verdictRefresh                      // the doc holds the row's content under other provenance: replace
	verdictReplace                      // the tool wrote it, nobody changed it, it is older than the row: replace
	verdictNotOlder                     // the tool wrote it, nobody changed it, but it is not older than the row: leave it
	verdictCollision                    // its _migration names another row: dead-letter the row
	verdictConflict                     // the application changed (or wrote) it: leave it, list it
	verdictForce                        // the application changed it, --force: overwrite it
	verdictPrune                        // its row is gone and nobody changed it: delete it
	verdictPruneConflict                // its row is gone but the application changed it: leave it, list it
	verdictPruneForce                   // its row is gone, the application changed it, --force: delete it
)

// writes reports whether the verdict writes the doc (create, replace or
// delete).
func (v verdict) writes() bool {
	switch v {
	case verdictCreate, verdictRefresh, verdictReplace, verdictForce, verdictPrune, verdictPruneForce:
		return true
	}
	return false
}

// Resolution is what replay did with a conflict.
type Resolution string

// The resolutions of a conflict.
const (
	NotWritten  Resolution = "not written"
	Overwritten Resolution = "overwritten (--force)"
	NotDeleted  Resolution = "not deleted"
	Deleted     Resolution = "deleted (--force)"
)

// resolution is the Resolution of a conflict verdict ("" for others).
func (v verdict) resolution() Resolution {
	switch v {
	case verdictConflict:
		return NotWritten
	case verdictForce:
		return Overwritten
	case verdictPruneConflict:
		return NotDeleted
	case verdictPruneForce:
		return Deleted
	}
	return ""
}

// source names a row: the one a doc's _migration names, or the one replay
// reads.
type source struct{ table, partitionKey, rowKey string }

// wantedDoc is what a row gives, as the decision needs it.
type wantedDoc struct {
	row       source
	timestamp time.Time // the row's Timestamp
	hash      string    // the new _migration.hash: the hash of the content
	migration []byte    // the new _migration, canonical JSON
	// meaning is the content's transform.MeaningHash, migMeaning the new
	// _migration's transform.MigrationMeaning (SPEC §12: a doc the
	// application wrote in its own forms is in sync when it means the
	// same).
	meaning    string
	migMeaning []byte
}

// ReasonNotOlder is replay's warning for a doc the tool wrote (or reverse
// recorded) whose content means something else than its row's doc while
// its _migration is not older than the row: it is left as it is.
const ReasonNotOlder = "doc means something else than its row's doc but its _migration is not older than the row: left as it is (verify lists the differing fields)"

// docState is what replay knows of a doc it read.
type docState struct {
	m           map[string]any
	hasMig      bool
	mig         map[string]any
	migration   []byte // canonical JSON of _migration; nil when it cannot be made
	contentHash string
	untouched   bool // the tool wrote it and nobody changed it since
}

// readDocState decodes a doc as Cosmos DB returned it.
func readDocState(raw []byte) (docState, error) {
	m, err := transform.DecodeDoc(raw)
	if err != nil {
		return docState{}, err
	}
	s := docState{m: m}
	s.mig, s.hasMig = m["_migration"].(map[string]any)
	if s.hasMig {
		if c, err := transform.Canonical(s.mig); err == nil {
			s.migration = c
		}
	}
	if s.contentHash, err = transform.Hash(m); err != nil {
		s.contentHash = "unhashable" // cannot have come from the tool
	}
	s.untouched = s.hasMig && replayString(s.mig["hash"]) == s.contentHash
	return s, nil
}

// before reports whether row x comes before row y in run's read order
// (tables Config, Entities, Relationships; rows in key order), where the
// first row of an id owns it (SPEC §10).
func (x source) before(y source) bool {
	if x.table != y.table {
		return transform.TableOrder(x.table) < transform.TableOrder(y.table)
	}
	return transform.CompareKeys(x.partitionKey, x.rowKey, y.partitionKey, y.rowKey) < 0
}

// source is the row the doc's _migration names (zero without one).
func (s docState) source() source {
	return source{replayString(s.mig["table"]), replayString(s.mig["partitionKey"]), replayString(s.mig["rowKey"])}
}

// means reports whether the doc means what the row's doc does (SPEC
// §12), its _migration aside.
func (s docState) means(want wantedDoc) bool {
	h, err := transform.MeaningHash(want.row.table, s.m)
	return err == nil && h == want.meaning
}

// decide is replay's decision for the doc of a row (SPEC §13), from
// whether Cosmos DB holds one (found) and what it holds (s). It is pure.
func decide(found bool, s docState, want wantedDoc, force bool) verdict {
	switch {
	case !found:
		return verdictCreate
	case s.hasMig && s.source() != want.row && !want.row.before(s.source()):
		return verdictCollision
	case s.hasMig && s.source() != want.row:
		// The row comes before the doc's in read order, so it owns the id
		// (SPEC §10), as in a fresh run: it takes the doc over, unless the
		// application changed the doc.
		switch {
		case s.untouched:
			return verdictReplace
		case force:
			return verdictForce
		}
		return verdictConflict
	case s.contentHash == want.hash || s.means(want):
		if s.hasMig && ((s.migration != nil && bytes.Equal(s.migration, want.migration)) ||
			bytes.Equal(transform.MigrationMeaning(s.mig), want.migMeaning)) {
			return verdictUnchanged
		}
		return verdictRefresh
	case s.untouched && olderThan(s.mig["timestamp"], want.timestamp):
		return verdictReplace
	case s.untouched:
		return verdictNotOlder
	case force:
		return verdictForce
	}
	return verdictConflict
}

// decidePrune is replay --prune's decision for a migrated doc whose row
// was not among the tables' keys: rowExists says whether the row is there
// after all (looked up again just before), found and s what Cosmos DB
// holds now. It is pure.
func decidePrune(rowExists, found bool, s docState, row source, force bool) verdict {
	switch {
	case rowExists, !found, !s.hasMig, s.source() != row:
		return verdictNone // the row is back, or the doc is gone or another's
	case s.untouched:
		return verdictPrune
	case force:
		return verdictPruneForce
	}
	return verdictPruneConflict
}

// olderThan reports whether a _migration.timestamp is older than the
// row's Timestamp; a missing or unparseable one counts as older.
func olderThan(ts any, rowTime time.Time) bool {
	s, ok := ts.(string)
	if !ok {
		return true
	}
	t, ok := transform.ParseTimestamp(s)
	if !ok {
		return true
	}
	return t.Before(rowTime)
}
