package transform

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReverseOutcome is what ReverseDoc decided for one doc: the rows the
// Table-based application would have written for it (SPEC §15).
type ReverseOutcome struct {
	// Row is the doc's row in Config, Entities or Relationships with every
	// property it must have, so it is written whole (replace, not merge).
	// Zero when DeadLetter is set.
	Row Row
	// Index are an execution's index rows in Relationships (PartitionKey
	// GLOBAL), whole, in the order userexec, workflowexec, formexec,
	// status; empty for other docs.
	Index []Row
	// Delete are rows to delete when they exist (a missing one is not an
	// error): the status index rows of an execution's other indexed
	// statuses (Pending, Running: the only ones that have one), and
	// index rows under keys that the existing row gave and the doc no
	// longer gives.
	Delete []RowRef
	// Uploads are blobs to create before Row is written, create-only
	// (If-None-Match: *), as Transform's: an inline result above the blob
	// threshold.
	Uploads []Upload
	// Warnings are notes about the doc that did not stop it, in the order
	// found; Reason is one of the Reason* constants.
	Warnings []Warning
	// DeadLetter, when not nil, says why nothing can be written; Row,
	// Index, Delete and Uploads are then empty.
	DeadLetter *ReverseDeadLetter
	// IndexDeadLetters are the execution's index rows that cannot be
	// written, because their keys would hold a character Table Storage
	// forbids (a userexec row of an executedBy with '/'): the Table-based
	// application could not have written them either. They are not in
	// Index; the doc's own row and its other index rows are written as
	// usual (SPEC §15: only that row is dead-lettered).
	IndexDeadLetters []IndexDeadLetter
}

// IndexDeadLetter is an index row of the doc that cannot be written.
type IndexDeadLetter struct {
	Row    RowRef
	Reason ReverseReason
	Detail string
}

// RowRef names a row.
type RowRef struct {
	Table, PartitionKey, RowKey string
}

// ReverseReason is why a doc cannot be written back (ReverseDeadLetter).
type ReverseReason string

// The reasons ReverseDoc dead-letters a doc. Callers count and switch on
// them; the Detail of a dead letter says more.
const (
	// ReverseForbiddenKeyChar: a PartitionKey or RowKey of the doc's rows
	// would hold '/', '\\', '#', '?' or a control character (U+0000–U+001F,
	// U+007F–U+009F), which Table Storage refuses, so the Table-based
	// application could not have written it either.
	ReverseForbiddenKeyChar ReverseReason = "key has a character Table Storage forbids"
	// ReverseNoKeys: the row's keys cannot be derived from a doc without
	// _migration (an unknown kind, an id that does not map back, a scope
	// that is not GLOBAL, SYSTEM or org-…, an execution without a
	// parseable startedAt, …).
	ReverseNoKeys ReverseReason = "row keys cannot be derived"
	// ReverseKindMismatch: the doc's type is not the type the forward
	// transform gives the row its _migration names, or that row is of a
	// kind that is never a doc (an execution index, an unknown
	// relationship).
	ReverseKindMismatch ReverseReason = "doc type does not match its _migration row"
	// ReverseBadDoc: the doc has no string id or type, or a _migration
	// that is not what the forward transform writes.
	ReverseBadDoc ReverseReason = "not a doc the tool can read"
	// ReverseIntegerRange: an integer outside the Int64 range, which the
	// Python SDK refuses.
	ReverseIntegerRange ReverseReason = "integer outside the Int64 range"
	// ReverseUnencodable: a value that has no JSON text (a type a doc does
	// not hold).
	ReverseUnencodable ReverseReason = "value cannot be encoded"
	// ReversePropertyTooLarge: a string above 64 KiB (32,768 UTF-16 code
	// units) or a binary above 64 KiB.
	ReversePropertyTooLarge ReverseReason = "property above 64 KiB"
	// ReverseRowTooLarge: a row above 1 MiB by the Table service's size
	// formula, or with more than 252 properties of its own.
	ReverseRowTooLarge ReverseReason = "row above the Table Storage limits"
	// ReverseExistingUndecodable: the existing row could not be decoded.
	ReverseExistingUndecodable ReverseReason = "existing row could not be decoded"
)

// ReverseDeadLetter is why a doc cannot be written back. Detail names the
// field, property, key or kind; it never holds a property value.
type ReverseDeadLetter struct {
	Reason ReverseReason
	Detail string
}

// Warning reasons of ReverseDoc (see also the ones Transform uses;
// ReasonUnparseableTimestamp is shared).
const (
	// ReasonFieldNotWritten: a doc field that no row property takes (a key
	// field that differs from the RowKey, a field derived from the keys
	// or scope, an execution field the application does not write, a
	// value next to a secret_ref) holds a value that is not written.
	ReasonFieldNotWritten = "doc field not written"
	// ReasonEdmTypeChanged: a changed value does not fit the Edm type the
	// existing row has for it, so it is typed as the Python SDK types it.
	ReasonEdmTypeChanged = "edm type changed"
	// ReasonJSONAsText: an object or array in a property that is not
	// JSON-valued is written as its json.dumps text (Table Storage has no
	// such type).
	ReasonJSONAsText = "object written as JSON text"
	// ReasonIndexSkipped: an execution index row whose key would need an
	// empty executedBy or workflowName is not written.
	ReasonIndexSkipped = "index row not written"
)

// ReverseDoc computes the rows to write to Table Storage for a doc that
// the application created or changed in Cosmos DB (SPEC §15): the doc's
// row with its keys from _migration when the doc has one, else derived
// from its type, id and scope; the properties the Table-based application
// would have written, in PascalCase, JSON-valued fields as Python's
// json.dumps writes them and timestamps as its datetime.isoformat(); for an
// execution, its index rows and the stale ones to delete, and a blob for
// an inline result above opts.BlobThreshold.
//
// doc is a decoded doc (DecodeDocOrdered, or a Doc Transform built), from
// either container. existing is the row currently in the table under the
// doc's keys, or nil when there is none. A property whose doc field the
// forward transform of existing gives unchanged keeps existing's Edm type
// and value exactly; properties the doc does not carry are kept; changed
// and new values take existing's Edm type when they fit it, else the type
// the Python SDK gives them (see docs/mapping.md, "Back to the tables",
// and docs/design.md for the list of normalizations).
//
// It returns an error only for a caller's mistake: options that
// Options.Validate rejects, a zero opts.Now (the status index's
// UpdatedAt), or an existing row whose table or keys are not the doc's.
// Everything about the data itself is in the outcome, a dead letter at
// worst. ReverseDoc is pure (no I/O, no clock) and safe for concurrent use;
// it does not modify doc or existing.
func ReverseDoc(doc Doc, existing *Row, opts Options) (ReverseOutcome, error) {
	return reverseDocWith(defaultKinds, doc, existing, opts)
}

// reverseDocWith is ReverseDoc by the kinds of kt.
func reverseDocWith(kt *kindTable, doc Doc, existing *Row, opts Options) (ReverseOutcome, error) {
	if err := opts.Validate(); err != nil {
		return ReverseOutcome{}, fmt.Errorf("reverse: %w", err)
	}
	if opts.Now.IsZero() {
		return ReverseOutcome{}, errors.New("reverse: the current time is not set (needed by the status index's UpdatedAt)")
	}
	r := &docReversal{doc: doc, existing: existing, opts: opts.WithDefaults(), claimed: map[string]bool{}, kinds: kt}
	if existing != nil && existing.DecodeError != "" {
		r.dead(ReverseExistingUndecodable, existing.DecodeError)
		return r.result(), nil
	}
	if !r.locate() {
		return r.result(), nil
	}
	if existing != nil && (existing.Table != r.table || existing.PartitionKey != r.pk || existing.RowKey != r.rk) {
		return ReverseOutcome{}, fmt.Errorf("reverse: the existing row is %s %q %q, the doc's row is %s %q %q",
			existing.Table, existing.PartitionKey, existing.RowKey, r.table, r.pk, r.rk)
	}
	r.forward()
	r.props = make(map[string]Value, len(doc)+4)
	r.stamps = kt.stamps[r.table]
	r.decideFields()
	r.keepUnclaimed()
	r.out.Row = Row{Table: r.table, PartitionKey: r.pk, RowKey: r.rk, Props: r.props}
	if r.kind.id == idExecution && r.fail == nil {
		r.indexes()
	}
	r.checkLimits()
	return r.result(), nil
}

// docReversal is the reversal of one doc into its rows: one ReverseDoc
// call's state.
type docReversal struct {
	doc      Doc
	existing *Row
	opts     Options
	kinds    *kindTable
	mig      Migration
	hasMig   bool
	// fwd is the forward transform's doc of existing; nil when there is no
	// existing row or the forward transform dead-letters it.
	fwd              Doc
	table, pk, rk    string
	kind             *kindSpec
	keyFromRK        string // the kind's key as the RowKey holds it
	execID           string
	props            map[string]Value
	claimed          map[string]bool // source properties decided from the doc
	stamps           map[string]bool // the table's timestamp properties
	out              ReverseOutcome
	fail             *ReverseDeadLetter
	docType, id, scp string
}

func (r *docReversal) warn(reason, detail string) {
	r.out.Warnings = append(r.out.Warnings, Warning{Reason: reason, Detail: detail})
}

func (r *docReversal) dead(reason ReverseReason, detail string) {
	if r.fail == nil {
		r.fail = &ReverseDeadLetter{Reason: reason, Detail: detail}
	}
}

func (r *docReversal) result() ReverseOutcome {
	if r.fail != nil {
		return ReverseOutcome{Warnings: r.out.Warnings, DeadLetter: r.fail}
	}
	return r.out
}

// str returns a doc field that is a string.
func (r *docReversal) str(name string) (string, bool) {
	v, _ := r.doc.Get(name)
	s, ok := v.(string)
	return s, ok
}

// forward runs the forward transform on the existing row, so that fields
// the doc did not change are recognised. The options are the caller's,
// except that every kind becomes a doc: no ttl (no expiry), relationships
// migrated, no strict mode.
func (r *docReversal) forward() {
	if r.existing == nil {
		return
	}
	o := r.opts
	o.ExecutionTTL, o.Relationships, o.Strict = TTLNone, RelationshipsMigrate, false
	if out := transformWith(r.kinds, *r.existing, BlobFacts{}, o, extrasNone); out.Disposition == DispositionDoc {
		r.fwd = out.Doc
	}
}

// unchanged reports whether the forward transform of the existing row
// gives doc field name the doc's value (absent and null are the same;
// numbers compare as doubles, objects by member, as the hash does).
func (r *docReversal) unchanged(name string) bool {
	if r.fwd == nil {
		return false
	}
	a, _ := r.fwd.Get(name)
	b, _ := r.doc.Get(name)
	return sameJSON(a, b)
}

// sameJSON reports whether two doc values have the same canonical JSON.
func sameJSON(a, b any) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// claim marks source property src as decided from doc field name; false
// (and a warning) when an earlier field took it.
func (r *docReversal) claim(name, src string) bool {
	if r.claimed[src] {
		r.warn(ReasonFieldNotWritten, name)
		return false
	}
	r.claimed[src] = true
	return true
}

// keep copies the existing row's property src, when it has one.
func (r *docReversal) keep(src string) {
	if r.existing == nil {
		return
	}
	if v, ok := r.existing.Props[src]; ok {
		r.props[src] = v
	}
}

func (r *docReversal) existingType(src string) EdmType {
	if r.existing == nil {
		return ""
	}
	return r.existing.Props[src].Type
}

// field decides the source property of doc field f: kept when unchanged,
// else encoded by its rule (ruleJSON, else as rulePlain), left out when
// null.
func (r *docReversal) field(f *field) {
	name, src := f.name, f.src
	if !r.claim(name, src) {
		return
	}
	if r.unchanged(name) {
		r.keep(src)
		return
	}
	v, _ := r.doc.Get(name)
	if v == nil {
		return
	}
	var val Value
	var ok bool
	switch f.rule {
	case ruleJSON:
		val, ok = r.jsonValue(src, v)
	default:
		val, ok = r.plainValue(src, v, f.stamp)
	}
	if ok {
		r.props[src] = val
	}
}

// keyField decides a key property (an integration's Name, a user's Email,
// …): written when the existing row has it, when the application always
// writes it (ruleKeyWritten), or when the value differs from the key in
// the RowKey; otherwise it is left out, as the application leaves it out.
func (r *docReversal) keyField(f *field) {
	name, src, written := f.name, f.src, f.rule == ruleKeyWritten
	if !r.claim(name, src) {
		return
	}
	if r.unchanged(name) {
		r.keep(src)
		return
	}
	v, _ := r.doc.Get(name)
	if v == nil {
		return
	}
	_, had := r.existing.propOf(src)
	if s, isStr := v.(string); !had && !written && isStr && s == r.keyFromRK {
		return
	}
	if val, ok := r.plainValue(src, v, f.stamp); ok {
		r.props[src] = val
	}
}

// propOf returns a property of a row that may be nil.
func (row *Row) propOf(name string) (Value, bool) {
	if row == nil {
		return Value{}, false
	}
	v, ok := row.Props[name]
	return v, ok
}

// derived warns when doc field name holds a value other than the one the
// keys or scope give it (want); such a field is never written.
func (r *docReversal) derived(name string, want any) {
	v, ok := r.doc.Get(name)
	if !ok || v == nil || sameJSON(v, want) {
		return
	}
	r.warn(ReasonFieldNotWritten, name)
}

// decideFields decides the row's properties from the kind's fields, by
// their rules, then from the doc's unlisted fields: written as properties,
// or, for a kind whose rows carry only the listed properties, not
// written (a warning when one holds a changed value).
func (r *docReversal) decideFields() {
	k := r.kind
	for i := range k.fields {
		switch f := &k.fields[i]; f.rule {
		case rulePlain, ruleRawID, ruleJSON:
			r.field(f)
		case ruleKey, ruleKeyWritten:
			r.keyField(f)
		case ruleFromKey:
			r.derived(f.name, r.keyFromRK)
		case ruleDerived:
			r.derived(f.name, f.derive(rowKeys{r.pk, r.rk, r.keyFromRK}))
		case ruleGroup:
			r.decideGroup(f.group)
		case ruleLegacyBlob:
			// Never written: the row keeps the inline property it had.
		}
	}
	for _, f := range r.doc {
		if k.has(f.Name) || reservedName(f.Name) {
			continue
		}
		if !k.closed {
			src := r.sourceName(f.Name)
			r.field(&field{name: f.Name, src: src, stamp: r.stamps[src]})
		} else if f.Value != nil && !r.unchanged(f.Name) {
			r.warn(ReasonFieldNotWritten, f.Name)
		}
	}
}

// decideGroup decides the properties the fields of group g come from.
func (r *docReversal) decideGroup(g fieldGroup) {
	switch g {
	case groupConfigValue:
		r.configValue()
	case groupResult:
		r.resultProps()
	}
}

// sourceName is the source property of a doc field that is not listed for
// its kind: the existing row's property that the forward transform names
// so (camelCase, or "source" + its name when that was taken), else the
// field with its first letter upper-cased, or, for "sourceX" where the
// name X would take is reserved or a field of the doc, X.
func (r *docReversal) sourceName(name string) string {
	if r.existing != nil {
		names := make([]string, 0, len(r.existing.Props))
		for p := range r.existing.Props {
			if !r.claimed[p] {
				names = append(names, p)
			}
		}
		slices.Sort(names)
		for _, p := range names {
			if camel(p) == name {
				return p
			}
		}
		for _, p := range names {
			if "source"+pascal(p) == name {
				return p
			}
		}
	}
	if rest, ok := strings.CutPrefix(name, "source"); ok {
		if c, _ := utf8.DecodeRuneInString(rest); unicode.IsUpper(c) {
			if n := camel(rest); reservedName(n) || r.doc.Has(n) || r.kind.has(n) {
				return rest
			}
		}
	}
	return pascal(name)
}

// configValue decides Value, Type and SecretRef of a config row from
// value, secretRef and configType, which the forward transform derives
// together (SPEC §6).
func (r *docReversal) configValue() {
	if r.unchanged("value") && r.unchanged("secretRef") && r.unchanged("configType") {
		r.claimed["Value"], r.claimed["Type"] = true, true
		r.keep("Value")
		r.keep("Type")
		// SecretRef is the secretRef field unless a secret_ref row's Value
		// was; then it is an unlisted property (sourceSecretRef).
		if typ, _ := r.existing.propOf("Type"); !(typ.Type == EdmString && typ.Str == "secret_ref") || !r.existing.hasProp("Value") {
			r.claimed["SecretRef"] = true
			r.keep("SecretRef")
		}
		return
	}
	r.field(&field{name: "configType", src: "Type", stamp: r.stamps["Type"]})
	typeName, _ := r.str("configType")
	r.claimed["Value"] = true
	value, _ := r.doc.Get("value")
	if typeName == "secret_ref" {
		// The application keeps a secret_ref's Key Vault name in Value.
		if value != nil {
			r.warn(ReasonFieldNotWritten, "value")
		}
		if ref, _ := r.doc.Get("secretRef"); ref != nil {
			if val, ok := r.plainValue("Value", ref, r.stamps["Value"]); ok {
				r.props["Value"] = val
			}
		}
		return
	}
	if value != nil {
		et := r.existingType("Value")
		switch s, isStr := value.(string); {
		case et != "" && et != EdmString:
			if val, ok := r.typed("Value", value, et); ok {
				r.props["Value"] = val
			}
		case isStr && typeName != "json":
			r.props["Value"] = String(s)
		default:
			// The application stores every config value as a str: its
			// text, as json.dumps writes it (1, 2.5, true, {"a": 1}).
			if text, ok := r.pyJSON("Value", value); ok {
				r.props["Value"] = String(text)
			}
		}
	}
	r.field(&field{name: "secretRef", src: "SecretRef", stamp: r.stamps["SecretRef"]})
}

func (row *Row) hasProp(name string) bool {
	_, ok := row.propOf(name)
	return ok
}

// keepUnclaimed keeps every property of the existing row that no doc
// field decided: what the doc does not carry (a stray etag, a legacy
// execution's inline logs, a form's IsGlobal) stays as it is.
func (r *docReversal) keepUnclaimed() {
	if r.existing == nil {
		return
	}
	for name, v := range r.existing.Props {
		if !r.claimed[name] {
			r.props[name] = v
		}
	}
}
