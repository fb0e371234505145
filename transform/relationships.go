package transform

import "strings"

// IndexRow is what the RowKey of a dropped execution index row says
// (SPEC §9): the execution it names and the key it files it under.
type IndexRow struct {
	// Kind is userexec, workflowexec, formexec or status.
	Kind string
	// Key is the field the index is looked up by: the user id (userexec),
	// the workflow name (workflowexec), the form id (formexec) or the
	// status (status).
	Key string
	// Partition is a workflowexec row's partition field, as written (an
	// organization id, GLOBAL, SYSTEM, or already "org-…"); "" for the
	// other kinds. Scope maps it to a scope.
	Partition string
	// ExecutionID is the last ':' field.
	ExecutionID string
}

// ParseIndex parses the RowKey of an execution index row:
// userexec:{userId}:{executionId}, workflowexec:{workflow}:{partition}:{executionId},
// formexec:{formId}:{executionId} or status:{status}:{executionId} (the
// index kinds of the kind table). The execution id is the last ':' field
// and a workflowexec partition the one before it; the key is everything
// between the kind and those, so user ids and workflow names may contain
// ':'. ok is false for a RowKey of another kind, and for a malformed one:
// too few fields, or an empty execution id. It is pure and allocates
// nothing.
func ParseIndex(rowKey string) (ix IndexRow, ok bool) {
	return defaultKinds.parseIndex(rowKey)
}

func (t *kindTable) parseIndex(rowKey string) (ix IndexRow, ok bool) {
	kind, rest, found := strings.Cut(rowKey, ":")
	if !found {
		return IndexRow{}, false
	}
	x := t.index(kind)
	if x == nil {
		return IndexRow{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || i == len(rest)-1 {
		return IndexRow{}, false
	}
	ix = IndexRow{Kind: x.kind, Key: rest[:i], ExecutionID: rest[i+1:]}
	if x.partition {
		j := strings.LastIndexByte(ix.Key, ':')
		if j < 0 {
			return IndexRow{}, false
		}
		ix.Key, ix.Partition = ix.Key[:j], ix.Key[j+1:]
	}
	return ix, true
}

// relationships transforms a Relationships row (SPEC §9).
func (b *builder) relationships() {
	kind := b.out.Kind
	if b.kinds.index(kind) != nil {
		ix, ok := b.kinds.parseIndex(b.row.RowKey)
		if !ok {
			b.out.Disposition = DispositionKeptInTables
			b.warn(ReasonMalformedIndex, kind)
			return
		}
		b.out.Disposition = DispositionDroppedIndex
		b.out.IndexExecutionID = ix.ExecutionID
		return
	}
	k, key := b.kinds.classify(TableRelationships, b.row.RowKey)
	switch {
	case k == nil:
		b.out.Disposition = DispositionKeptInTables
		b.warn(ReasonUnknownKind, kind)
	case b.opts.Relationships != RelationshipsMigrate:
		b.out.Disposition = DispositionKeptInTables
	default:
		b.kindDoc(k, key)
	}
}
