package migrate

import (
	"fmt"

	"github.com/bifrost/bifrost-migrate/store"
)

// One decision per answer (docs/engine.md, "Faults"): the adapters name
// the kind of every answer (store.FaultKind); settle, below, is the one
// place that says what an engine does with it — go on, take a 404 for
// done, read and decide again, dead-letter the item, or stop — for every
// request of every engine: run's upsert, replay's and reverse's reads and
// writes, both prunes and the blob uploads. What differs between those
// requests is data, their rule; an engine only follows the step settle
// returns.

// rule is how an engine takes the answers to one kind of its requests:
// the few real differences between the requests of run, replay, reverse,
// the prunes and the uploads, as the data settle reads. The rules of the
// engines' requests are the rule* values below.
type rule struct {
	// refusal begins the dead letter's reason when the service refuses
	// the item for good; the fault's status and reason follow.
	refusal string
	// conditional: the write carries a condition (create-only, If-Match),
	// so a 409, 412 or 404 says that the item changed meanwhile: read and
	// decide again. An unconditional request (run's upsert, a read) never
	// expects one: it stops the engine.
	conditional bool
	// goneIsDone: a 404 means what the write wanted is done already (a
	// delete, a sync recorded on a doc deleted since).
	goneIsDone bool
	// exists, when not empty, is the dead letter's reason (after the
	// item) for a 409: a create-only upload that found other content
	// there, which no start-over changes.
	exists string
}

// The requests of the engines and how each takes its answers.
var (
	// run's upsert of a doc.
	ruleUpsert = rule{refusal: "Cosmos DB rejected the doc"}
	// replay's and reverse's point read of a doc, and the prunes'.
	ruleReadDoc = rule{refusal: "Cosmos DB refused to read the doc"}
	// replay's and reverse's look-up of a row, and the prunes'.
	ruleReadRow = rule{refusal: "Table Storage refused to read the row"}
	// replay's create or replace of a doc.
	ruleWriteDoc = rule{refusal: "Cosmos DB rejected the doc", conditional: true}
	// replay's prune: the delete of a doc whose row is gone.
	rulePruneDoc = rule{refusal: "prune: Cosmos DB refused to delete the doc", conditional: true, goneIsDone: true}
	// reverse's insert or replace of a row.
	ruleWriteRow = rule{refusal: "Table Storage refused the row", conditional: true}
	// reverse's delete of a stale index row.
	ruleRemoveRow = rule{refusal: "Table Storage refused the row", conditional: true, goneIsDone: true}
	// reverse's record of the sync on the doc (its _migration).
	ruleRecordSync = rule{refusal: "Cosmos DB refused to record the sync on the doc, whose rows are written", conditional: true, goneIsDone: true}
	// reverse's prune: the delete of a row whose doc is gone.
	rulePruneRow = rule{refusal: "prune: Table Storage refused to delete the row", conditional: true}
	// the create-only upload of a blob a doc or row names (run, replay,
	// reverse): the blob store compares an existing blob itself (same
	// content is success).
	ruleUploadBlob = rule{refusal: "was refused by Blob Storage", exists: "already exists with different content"}
)

// step is what an engine does next with an item, as settle says.
type step uint8

const (
	stepOn         step = iota // the request did what it asked: go on with the item
	stepGone                   // a 404 that the rule takes for done: nothing left to do
	stepAgain                  // the item changed meanwhile: read and decide again
	stepDeadLetter             // refused for good: the item is a dead letter (its reason in the fate)
	stepStop                   // anything else: the engine stops with the error
)

// holds reports whether what the request wanted holds: it did it, or a
// 404 says it is done already.
func (s step) holds() bool { return s == stepOn || s == stepGone }

// fate is what the answers to one item's requests made of it, as settle
// keeps it: the dead letter's reason (empty: none) and the answers that
// said it changed meanwhile, by kind.
type fate struct {
	deadLetter string
	changes    changes
}

// changes counts the answers that said an item changed meanwhile (a 409,
// 412 or 404 to a conditional write), by kind.
type changes struct{ exists, changed, gone int64 }

func (c changes) total() int64 { return c.exists + c.changed + c.gone }

// settle is the one function that acts on an answer — a request's error,
// nil when it did what it asked — for every request of every engine
// (docs/engine.md, "Faults"). It reads the answer's fault kind
// (store.KindOf) and, by the rule: records a refusal's dead letter in f
// (item, when not empty, names the item first: "replace Entities
// GLOBAL/x: "), counts in f an answer that says the item changed
// meanwhile, and returns the step the engine takes, with the error that
// stops it for stepStop (a retryable fault the adapter gave up on, Auth,
// Fatal, or an outcome the request does not expect).
func (w rule) settle(err error, item string, f *fate) (step, error) {
	k := store.KindOf(err)
	switch {
	case k == store.NoFault:
		return stepOn, nil
	case k == store.Exists && w.exists != "":
		f.deadLetter = item + w.exists
		return stepDeadLetter, nil
	case k == store.Refused:
		fault := store.FaultOf(err)
		f.deadLetter = fmt.Sprintf("%s%s (%d): %s", item, w.refusal, fault.Status, fault.Error())
		return stepDeadLetter, nil
	case !w.conditional || k != store.Exists && k != store.Changed && k != store.NotFound:
		return stepStop, err
	case k == store.Exists:
		f.changes.exists++
	case k == store.Changed:
		f.changes.changed++
	default:
		f.changes.gone++
		if w.goneIsDone {
			return stepGone, nil
		}
	}
	return stepAgain, nil
}
