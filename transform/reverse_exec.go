package transform

import (
	"fmt"
	"strings"
)

// resultProps decides Result and ResultInBlob from result and resultInBlob,
// which the forward transform derives together (SPEC §8). An inline
// result longer than the blob threshold goes to a blob, create-only, and
// the row says ResultInBlob.
func (r *docReversal) resultProps() {
	r.claimed["Result"], r.claimed["ResultInBlob"] = true, true
	if r.unchanged("result") && r.unchanged("resultInBlob") {
		r.keep("Result")
		r.keep("ResultInBlob")
		return
	}
	res, _ := r.doc.Get("result")
	inBlob, _ := r.doc.Get("resultInBlob")
	blob := inBlob == true
	if res != nil {
		text, k, ok := r.resultText(res)
		if !ok {
			return
		}
		if len(text) > r.opts.BlobThreshold {
			path := r.execID + "/" + k.blob.File()
			r.out.Uploads = append(r.out.Uploads, Upload{Path: path, Blob: k.blob, Data: []byte(text), ContentType: k.ctype})
			blob = true
		} else {
			r.props["Result"] = String(text)
			blob = false
		}
	}
	if val, ok := r.typed("ResultInBlob", blob, r.existingType("ResultInBlob")); ok {
		r.props["ResultInBlob"] = val
	}
}

// resultText is the Result text the application stores for a doc's
// result: the string of an html or text result, the json.dumps text of a
// json one; with the result kind that names its blob.
func (r *docReversal) resultText(res any) (string, resultKind, bool) {
	typ, _ := r.str("resultType")
	if s, isStr := res.(string); isStr && typ != "json" {
		k := resultKinds[2]
		if typ == "html" || (typ == "" && isHTML(s)) {
			k = resultKinds[1]
		}
		return s, k, true
	}
	text, ok := r.pyJSON("Result", res)
	return text, resultKinds[0], ok
}

// resultKind is the element type of resultKinds (execution.go).
type resultKind = struct {
	blob       BlobName
	typ, ctype string
}

// isHTML is the forward transform's test for an HTML result (SPEC §8).
func isHTML(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "<") && strings.Contains(t, ">")
}

// indexes builds an execution's index rows in Relationships as Bifrost's
// execution repository writes them (the kind table's index kinds:
// PartitionKey GLOBAL, the display properties copied from the execution
// row), and the index rows to delete: those filed under the existing
// row's values where the doc changed them.
func (r *docReversal) indexes() {
	text := func(props map[string]Value, name string) string {
		if v, ok := props[name]; ok && (v.Type == EdmString || v.Type == EdmGuid) {
			return v.Str
		}
		return ""
	}
	id := r.execID
	for _, x := range r.kinds.indexes {
		key := text(r.props, x.key)
		switch {
		case key == "" && x.required:
			r.warn(ReasonIndexSkipped, fmt.Sprintf("%s (no %s)", x.kind, camel(x.key)))
		case key != "" && (x.active == nil || x.active(key)):
			props := map[string]Value{"ExecutionId": String(id)}
			if r.pk != "GLOBAL" {
				props["OrganizationId"] = String(r.pk)
			}
			for _, n := range x.props {
				if v, ok := r.props[n]; ok {
					props[n] = v
				}
			}
			if x.stamped {
				props["UpdatedAt"] = String(pythonISOFormat(r.opts.Now))
			}
			r.out.Index = append(r.out.Index, Row{Table: TableRelationships, PartitionKey: "GLOBAL", RowKey: x.rowKey(key, r.pk, id), Props: props})
		}
		for _, old := range r.staleKeys(x, key, text) {
			r.out.Delete = append(r.out.Delete, RowRef{TableRelationships, "GLOBAL", x.rowKey(old, r.pk, id)})
		}
	}
}

// staleKeys are the keys under which the existing row filed the
// execution in index kind x and the doc (whose key is key) no longer
// does: the existing row's value where the doc changed it; none for a new
// row. For a kind that exists only for some values (status), as the
// repository does, the existing row's value when it was one of them (the
// old status, Pending or Running); when the existing row's cannot be
// read, every such value but the doc's. Each delete is a read of the row
// first: a doc far from the tables should not pay for rows that cannot
// exist.
func (r *docReversal) staleKeys(x *indexSpec, key string, text func(map[string]Value, string) string) []string {
	if r.existing == nil {
		return nil
	}
	old := text(r.existing.Props, x.key)
	if x.active == nil {
		if old != "" && old != key {
			return []string{old}
		}
		return nil
	}
	if v, ok := r.existing.Props[x.key]; ok && v.Type == EdmString {
		if old != key && x.active(old) {
			return []string{old}
		}
		return nil
	}
	var stale []string
	for _, s := range executionStatuses {
		if s != key && x.active(s) {
			stale = append(stale, s)
		}
	}
	return stale
}
