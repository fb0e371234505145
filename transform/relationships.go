package transform

import "strings"

// relationships transforms a Relationships row (SPEC §9).
func (b *builder) relationships() {
	rk := b.row.RowKey
	kind := b.out.Kind
	switch kind {
	case "userexec", "workflowexec", "formexec", "status":
		// userexec:{userId}:{executionId} (user ids may contain ':'),
		// workflowexec:{workflow}:{scope}:{executionId},
		// formexec:{formId}:{executionId}, status:{status}:{executionId}.
		minParts := 3
		if kind == "workflowexec" {
			minParts = 4
		}
		i := strings.LastIndexByte(rk, ':')
		if strings.Count(rk, ":")+1 < minParts || i == len(rk)-1 {
			b.out.Disposition = DispositionKeptInTables
			b.warn(ReasonMalformedIndex, kind)
			return
		}
		b.out.Disposition = DispositionDroppedIndex
		b.out.IndexExecutionID = rk[i+1:]
	case "userperm", "orgperm", "userrole", "formrole", "workflowform", "assignedrole", "roleform":
		if b.opts.Relationships != RelationshipsMigrate {
			b.out.Disposition = DispositionKeptInTables
			return
		}
		b.start(ContainerEntities, strings.ReplaceAll(rk, ":", "-"), "GLOBAL", "relationship")
		b.set("relationship", kind)
		b.extras()
	default:
		b.out.Disposition = DispositionKeptInTables
		b.warn(ReasonUnknownKind, kind)
	}
}
