package transform

import (
	"fmt"
	"strings"
	"time"
)

// Each id rule's two directions, side by side (SPEC §3, §6–§10 forward;
// §15 back): forward gives the raw id and scope of the doc of a row whose
// RowKey holds key; inverse sets the RowKey of a doc without _migration,
// checked by giving the doc id again with the forward rule's own id
// function, and reports whether it could (else it dead-lettered the doc).
// idExecution's forward direction is the execution's own code
// (execution.go: its id comes from ExecutionId), idUnknown's the unknown
// kind's (builder.unknownKind): neither has a RowKey to derive.
var idRules = [...]struct {
	forward func(b *builder, k *kindSpec, key string) (rawID, scope string)
	inverse func(r *docReversal) bool
}{
	idKey: {
		func(b *builder, k *kindSpec, key string) (string, string) { return keyID(k, key), b.rowScope() },
		(*docReversal).keyRowKey,
	},
	idConfigKey: {
		func(b *builder, k *kindSpec, key string) (string, string) { return configKeyID(k, key), b.rowScope() },
		(*docReversal).configKeyRowKey,
	},
	idScope: {
		func(b *builder, k *kindSpec, _ string) (string, string) {
			scope := b.rowScope()
			return scopeID(k, scope), scope
		},
		(*docReversal).scopeRowKey,
	},
	idOrg: {
		// An organization's scope is its own id, whatever the PartitionKey.
		func(_ *builder, _ *kindSpec, key string) (string, string) { id := orgID(key); return id, id },
		(*docReversal).orgRowKey,
	},
	idRowKey: {
		func(b *builder, _ *kindSpec, _ string) (string, string) { return rowKeyID(b.row.RowKey), "GLOBAL" },
		(*docReversal).relationshipRowKey,
	},
	idExecution: {inverse: (*docReversal).executionRowKey},
	idUnknown:   {},
}

// The id functions both directions use.

// keyID is the raw id of a kind whose id is its prefix and the key.
func keyID(k *kindSpec, key string) string { return k.idPrefix + key }

// configKeyID is a config's raw id: the key with "_" → "-".
func configKeyID(k *kindSpec, key string) string {
	return k.idPrefix + strings.ReplaceAll(key, "_", "-")
}

// scopeID is the raw id of a kind with one row per scope.
func scopeID(k *kindSpec, scope string) string { return k.idPrefix + scope }

// orgID is an organization's id: the key, with "org-" unless it has it.
func orgID(key string) string {
	if strings.HasPrefix(key, "org-") {
		return key
	}
	return "org-" + key
}

// rowKeyID is a relationship's raw id: the RowKey with ":" → "-".
func rowKeyID(rk string) string { return strings.ReplaceAll(rk, ":", "-") }

// gives reports whether rawID, made safe (SanitizeID), is the doc's id.
func (r *docReversal) gives(rawID string) bool {
	id, _, _ := SanitizeID(rawID)
	return id == r.id
}

func (r *docReversal) noKeys(detail string) bool {
	r.dead(ReverseNoKeys, detail)
	return false
}

func (r *docReversal) keyRowKey() bool {
	k := r.kind
	key, ok := r.keyFromID(k.keyField())
	if !ok {
		return r.noKeys(fmt.Sprintf("%s id does not map back to a RowKey", r.docType))
	}
	r.rk, r.keyFromRK = k.prefix+key, key
	return true
}

func (r *docReversal) configKeyRowKey() bool {
	// The key's "_" became "-" in the id: only the key field tells which.
	k := r.kind
	key, ok := r.str(k.keyField())
	if !ok {
		return r.noKeys(fmt.Sprintf("%s doc has no string %s", r.docType, k.keyField()))
	}
	if !r.gives(configKeyID(k, key)) {
		return r.noKeys(fmt.Sprintf("%s %s does not give the doc id", r.docType, k.keyField()))
	}
	r.rk, r.keyFromRK = k.prefix+key, key
	return true
}

func (r *docReversal) scopeRowKey() bool {
	k := r.kind
	if r.id != scopeID(k, r.scp) {
		return r.noKeys(fmt.Sprintf("%s doc id is not %s + scope", r.docType, k.idPrefix))
	}
	r.rk = k.prefix
	return true
}

func (r *docReversal) orgRowKey() bool {
	// org:{uuid} and org:org-{uuid} both give the id org-{uuid}; the
	// application writes the first.
	uuid, ok := r.keyFromID("")
	if !ok || uuid == "" || !r.gives(orgID(uuid)) {
		return r.noKeys("organization id does not map back to org:{id}")
	}
	r.rk, r.keyFromRK = r.kind.prefix+uuid, uuid
	return true
}

func (r *docReversal) executionRowKey() bool {
	r.execID = executionIDOfDoc(r.doc, "")
	if r.execID == "" {
		raw, ok := r.keyFromID("")
		if !ok {
			return r.noKeys("execution id does not map back to an execution id")
		}
		r.execID = raw
	}
	if !r.gives(r.execID) {
		return r.noKeys("executionId does not give the doc id")
	}
	s, _ := r.str("startedAt")
	started, ok := ParseTimestamp(s)
	if !ok {
		return r.noKeys("execution has no parseable startedAt, which its RowKey needs")
	}
	r.rk = executionRowKey(started, r.execID)
	return true
}

// relationshipRowKey derives a relationship's RowKey from its kind and
// the two properties its RowKey is made of, checked against the doc id.
func (r *docReversal) relationshipRowKey() bool {
	kind, _ := r.str("relationship")
	parts, ok := relationshipKeys[kind]
	if !ok {
		return r.noKeys(fmt.Sprintf("relationship kind %q is not one the tool migrates", kind))
	}
	a, ok1 := r.str(parts[0])
	b, ok2 := r.str(parts[1])
	rk := kind + ":" + a + ":" + b
	if !ok1 || !ok2 || !r.gives(rowKeyID(rk)) {
		return r.noKeys(fmt.Sprintf("%s relationship: %s and %s do not give the doc id", kind, parts[0], parts[1]))
	}
	r.rk, r.keyFromRK = rk, a+":"+b
	return true
}

// An execution's RowKey, built and parsed in one place (SPEC §8):
// execution:{reverseTs}_{executionId}, reverseTs = 9999999999999 −
// startedAt in Unix milliseconds (13 digits), as Bifrost computes it
// (pythonReverseTs).

// executionRowKey is the RowKey of the execution id started at started.
func executionRowKey(started time.Time, id string) string {
	return fmt.Sprintf("execution:%d_%s", pythonReverseTs(started), id)
}

// splitExecutionRowKey splits the RowKey of an execution after
// "execution:" (rest) into its reverse timestamp and execution id; hasID
// is false when it has no '_'.
func splitExecutionRowKey(rest string) (reverseTs, id string, hasID bool) {
	return strings.Cut(rest, "_")
}

// executionIDOfDoc is an execution doc's executionId field, else the id in
// RowKey rk (after the first '_'), else "".
func executionIDOfDoc(doc Doc, rk string) string {
	if v, _ := doc.Get("executionId"); v != nil {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	if _, id, ok := splitExecutionRowKey(strings.TrimPrefix(rk, "execution:")); ok && rk != "" {
		return id
	}
	return ""
}
