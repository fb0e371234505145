package transform

import "strings"

// resultProps decides Result and ResultInBlob from result and resultInBlob,
// which the forward transform derives together (SPEC §8). An inline
// result longer than the blob threshold goes to a blob, create-only, and
// the row says ResultInBlob.
func (r *reverser) resultProps() {
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
func (r *reverser) resultText(res any) (string, resultKind, bool) {
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
// execution repository writes them (PartitionKey GLOBAL, display
// properties copied from the execution row), and the index rows to
// delete.
func (r *reverser) indexes() {
	p := r.props
	text := func(name string) string {
		if v, ok := p[name]; ok && (v.Type == EdmString || v.Type == EdmGuid) {
			return v.Str
		}
		return ""
	}
	id := r.execID
	status, executedBy, workflowName, formID := text("Status"), text("ExecutedBy"), text("WorkflowName"), text("FormId")
	row := func(rk string, names ...string) Row {
		props := map[string]Value{"ExecutionId": String(id)}
		if r.pk != "GLOBAL" {
			props["OrganizationId"] = String(r.pk)
		}
		for _, n := range names {
			if v, ok := p[n]; ok {
				props[n] = v
			}
		}
		return Row{Table: TableRelationships, PartitionKey: "GLOBAL", RowKey: rk, Props: props}
	}
	ref := func(rk string) RowRef { return RowRef{TableRelationships, "GLOBAL", rk} }
	userKey := func(by string) string { return "userexec:" + by + ":" + id }
	workflowKey := func(wf string) string { return "workflowexec:" + wf + ":" + r.pk + ":" + id }
	formKey := func(form string) string { return "formexec:" + form + ":" + id }

	if executedBy != "" {
		r.out.Index = append(r.out.Index, row(userKey(executedBy), "WorkflowName", "FormId", "Status", "StartedAt",
			"CompletedAt", "DurationMs", "ErrorMessage", "ExecutedByName"))
	} else {
		r.warn(ReasonIndexSkipped, "userexec (no executedBy)")
	}
	if workflowName != "" {
		r.out.Index = append(r.out.Index, row(workflowKey(workflowName), "ExecutedBy", "ExecutedByName", "FormId",
			"Status", "StartedAt", "CompletedAt", "DurationMs", "ErrorMessage"))
	} else {
		r.warn(ReasonIndexSkipped, "workflowexec (no workflowName)")
	}
	if formID != "" {
		r.out.Index = append(r.out.Index, row(formKey(formID), "WorkflowName", "ExecutedBy", "ExecutedByName",
			"Status", "StartedAt", "CompletedAt", "DurationMs", "ErrorMessage"))
	}
	if statusIndexed(status) {
		s := row("status:"+status+":"+id, "WorkflowName", "ExecutedBy", "ExecutedByName", "Status", "StartedAt")
		s.Props["UpdatedAt"] = String(pythonISOFormat(r.opts.Now))
		r.out.Index = append(r.out.Index, s)
	}
	for _, s := range r.staleStatuses(status) {
		r.out.Delete = append(r.out.Delete, ref("status:"+s+":"+id))
	}
	// Index rows under the existing row's values, when the doc changed
	// them.
	if r.existing != nil {
		old := func(name string) string {
			if v, ok := r.existing.Props[name]; ok && (v.Type == EdmString || v.Type == EdmGuid) {
				return v.Str
			}
			return ""
		}
		if by := old("ExecutedBy"); by != "" && by != executedBy {
			r.out.Delete = append(r.out.Delete, ref(userKey(by)))
		}
		if wf := old("WorkflowName"); wf != "" && wf != workflowName {
			r.out.Delete = append(r.out.Delete, ref(workflowKey(wf)))
		}
		if form := old("FormId"); form != "" && form != formID {
			r.out.Delete = append(r.out.Delete, ref(formKey(form)))
		}
	}
}

// staleStatuses are the statuses whose index row reverse deletes for an
// execution now in status: as the repository does, the old status's (the
// existing row's), when it had one (Pending, Running) and the doc's status
// is another; none for a new row. When the existing row's status cannot
// be read, every indexed status but the doc's. Each delete is a read of
// the row first, and a doc far from the tables should not pay for rows
// that cannot exist.
func (r *reverser) staleStatuses(status string) []string {
	if r.existing == nil {
		return nil
	}
	if old, ok := r.existing.Props["Status"]; ok && old.Type == EdmString {
		if old.Str != status && statusIndexed(old.Str) {
			return []string{old.Str}
		}
		return nil
	}
	var stale []string
	for _, s := range executionStatuses {
		if s != status && statusIndexed(s) {
			stale = append(stale, s)
		}
	}
	return stale
}
