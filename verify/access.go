package verify

import "github.com/bifrost/bifrost-migrate/transform"

// The access-pattern check (SPEC §12, "Access-pattern equivalence"). The
// migration drops the execution index rows of Relationships; in Cosmos DB
// the questions they answered become queries on the execution docs. This
// file decides, for one index row or one execution, where the query will
// answer differently from the index: the rules, pure and table-tested.
// accessIndex (accessindex.go) keeps the compact facts they are applied to.

// FindingKind says why an index row or an execution answers differently
// after cutover.
type FindingKind string

const (
	// FindingDangling is an index row naming an execution that is not in
	// Entities: the Table-based application listed it, Cosmos DB has
	// nothing to list.
	FindingDangling FindingKind = "dangling"
	// FindingStale is an index row whose key field differs from its
	// execution's: the Table-based application listed the execution under
	// the index's value, Cosmos DB lists it under the execution's.
	FindingStale FindingKind = "stale"
	// FindingUnindexed is a migrated execution without a userexec or a
	// workflowexec row: the Table-based application never listed it
	// there, Cosmos DB will.
	FindingUnindexed FindingKind = "unindexed"
)

// The fields a Finding names: the execution doc properties that the Cosmos
// DB queries replacing the indexes filter on (and executionId, for a
// dangling row).
const (
	FieldExecutionID  = "executionId"
	FieldExecutedBy   = "executedBy"
	FieldWorkflowName = "workflowName"
	FieldScope        = "scope"
	FieldFormID       = "formId"
	FieldStatus       = "status"
)

// Finding is one place where a query on the execution docs answers
// differently from the dropped index it replaces. A stale workflowexec row
// whose workflow and partition both differ gives two findings (one per
// field) but counts once; an execution lacking both its userexec and its
// workflowexec row gives two findings and counts once.
type Finding struct {
	Kind FindingKind `json:"kind"`
	// Index is the index row's RowKey (table Relationships, PartitionKey
	// GLOBAL); nil for an unindexed execution.
	Index *string `json:"index"`
	// ExecutionID is the execution the index row names, or the unindexed
	// execution's id.
	ExecutionID string `json:"executionId"`
	// Field is executionId for a dangling row; for a stale row the field
	// that differs (executedBy, workflowName, scope, formId, status); for
	// an unindexed execution the field of the missing row's query
	// (executedBy: no userexec row; workflowName: no workflowexec row).
	Field string `json:"field"`
	// IndexValue is what the index row says: the execution id (dangling),
	// the key field (stale; a workflowexec partition as a scope, SPEC §3);
	// nil for an unindexed execution.
	IndexValue *string `json:"indexValue"`
	// ExecutionValue is the execution's value of Field, what Cosmos DB
	// will answer by; nil when there is none: no execution (dangling), or
	// the property is absent or not a string.
	ExecutionValue *string `json:"executionValue"`
}

// optString is a string property's value; ok is false when the property
// is absent or not a string (Edm.String or Edm.Guid). A query by a string
// value matches neither.
type optString struct {
	s  string
	ok bool
}

func (o optString) ptr() *string {
	if !o.ok {
		return nil
	}
	return &o.s
}

// stringProp is the value of a row's string property.
func stringProp(row transform.Row, name string) optString {
	v, ok := row.Props[name]
	if !ok || (v.Type != transform.EdmString && v.Type != transform.EdmGuid) {
		return optString{}
	}
	return optString{v.Str, true}
}

// execFacts are what an execution row says about the fields the access
// patterns query, as the doc carries them (transform copies these
// properties unchanged), and whether its doc is written.
type execFacts struct {
	executedBy, workflowName, formID, status optString
	// scope is the row's PartitionKey as a scope (SPEC §3).
	scope string
	// migrated: the row's disposition is doc. An expired or dead-lettered
	// execution still exists in the tables: its index rows are judged,
	// but it is never unindexed.
	migrated bool
}

// factsOf returns the facts of an Entities execution row whose outcome
// (collisions included) is o.
func factsOf(row transform.Row, o transform.Outcome) execFacts {
	return execFacts{
		executedBy:   stringProp(row, "ExecutedBy"),
		workflowName: stringProp(row, "WorkflowName"),
		formID:       stringProp(row, "FormId"),
		status:       stringProp(row, "Status"),
		scope:        transform.Scope(row.PartitionKey),
		migrated:     o.Disposition == transform.DispositionDoc,
	}
}

// classifyIndex judges one dropped index row (rowKey, parsed as ix)
// against its execution e, nil when Entities has no execution of that id.
// It returns no finding when the query replacing the index returns the
// execution under the index's key: a dangling finding when there is no
// execution, else a stale finding per differing key field. Values are
// compared exactly (Cosmos DB compares strings exactly); a workflowexec
// partition and the execution's PartitionKey are compared as scopes.
func classifyIndex(rowKey string, ix transform.IndexRow, e *execFacts) []Finding {
	if e == nil {
		return []Finding{{Kind: FindingDangling, Index: &rowKey, ExecutionID: ix.ExecutionID, Field: FieldExecutionID, IndexValue: &ix.ExecutionID}}
	}
	var out []Finding
	stale := func(field, indexValue string, exec optString) {
		if exec.ok && exec.s == indexValue {
			return
		}
		out = append(out, Finding{Kind: FindingStale, Index: &rowKey, ExecutionID: ix.ExecutionID, Field: field, IndexValue: &indexValue, ExecutionValue: exec.ptr()})
	}
	switch ix.Kind {
	case "userexec":
		stale(FieldExecutedBy, ix.Key, e.executedBy)
	case "workflowexec":
		stale(FieldWorkflowName, ix.Key, e.workflowName)
		stale(FieldScope, transform.Scope(ix.Partition), optString{e.scope, true})
	case "formexec":
		stale(FieldFormID, ix.Key, e.formID)
	case "status":
		stale(FieldStatus, ix.Key, e.status)
	}
	return out
}

// classifyUnindexed judges one execution once every index row has been
// seen: a migrated execution without a userexec row (hasUserexec false)
// gives an unindexed finding on executedBy, without a workflowexec row one
// on workflowName. Executions that are not migrated give none: Cosmos DB
// does not list them either.
func classifyUnindexed(executionID string, e execFacts, hasUserexec, hasWorkflowexec bool) []Finding {
	if !e.migrated {
		return nil
	}
	var out []Finding
	if !hasUserexec {
		out = append(out, Finding{Kind: FindingUnindexed, ExecutionID: executionID, Field: FieldExecutedBy, ExecutionValue: e.executedBy.ptr()})
	}
	if !hasWorkflowexec {
		out = append(out, Finding{Kind: FindingUnindexed, ExecutionID: executionID, Field: FieldWorkflowName, ExecutionValue: e.workflowName.ptr()})
	}
	return out
}
