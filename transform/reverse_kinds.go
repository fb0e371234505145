package transform

import (
	"fmt"
	"strings"
)

// locate finds the doc's table, keys and kind: from _migration when the
// doc has it, else from its type, id and scope. It dead-letters and
// returns false when it cannot.
func (r *docReversal) locate() bool {
	var typeOK, idOK bool
	r.docType, typeOK = r.str("type")
	r.id, idOK = r.str("id")
	r.scp, _ = r.str("scope")
	if !typeOK || !idOK {
		r.dead(ReverseBadDoc, "no string id or type")
		return false
	}
	mig, hasMig, err := DocMigration(r.doc)
	if err != nil {
		r.dead(ReverseBadDoc, err.Error())
		return false
	}
	r.mig, r.hasMig = mig, hasMig
	if hasMig {
		k, key := r.kinds.classify(mig.Table, mig.RowKey)
		if k == nil {
			r.dead(ReverseKindMismatch, fmt.Sprintf("_migration names a %s row of kind %q, which is not migrated as a doc", mig.Table, Kind(mig.RowKey)))
			return false
		}
		if want := k.docTypeOf(mig.RowKey); r.docType != want {
			r.dead(ReverseKindMismatch, fmt.Sprintf("doc type %q, _migration row of kind %q gives %q", r.docType, Kind(mig.RowKey), want))
			return false
		}
		r.kind, r.keyFromRK = k, key
		r.table, r.pk, r.rk = mig.Table, mig.PartitionKey, mig.RowKey
		if k.id == idExecution {
			r.execID = executionIDOfDoc(r.doc, mig.RowKey)
		}
		return true
	}
	k := r.kinds.ofType(r.docType, r.doc)
	if k == nil {
		r.dead(ReverseNoKeys, fmt.Sprintf("a doc of unknown type %q has no _migration: its RowKey and table are known only from there", r.docType))
		return false
	}
	r.kind, r.table = k, k.table
	switch k.id {
	case idOrg, idRowKey:
		r.pk = "GLOBAL"
	default:
		switch {
		case r.scp == "GLOBAL" || r.scp == "SYSTEM":
			r.pk = r.scp
		case strings.HasPrefix(r.scp, "org-") && len(r.scp) > len("org-"):
			r.pk = strings.TrimPrefix(r.scp, "org-")
		default:
			r.dead(ReverseNoKeys, "scope is not GLOBAL, SYSTEM or org-{id}")
			return false
		}
	}
	return r.deriveRowKey()
}

// deriveRowKey sets the RowKey of a doc without _migration: its kind's
// id rule, backwards (idrules.go).
func (r *docReversal) deriveRowKey() bool {
	inverse := idRules[r.kind.id].inverse
	if inverse == nil {
		return r.noKeys(fmt.Sprintf("a %s doc without _migration: its RowKey is known only from there", r.docType))
	}
	return inverse(r)
}

// keyFromID returns the key a doc id was made from: the id after the
// kind's prefix, percent-decoded, when encoding it again gives the id;
// for a truncated id (SanitizeID), the doc's key field when that gives
// the id.
func (r *docReversal) keyFromID(keyField string) (string, bool) {
	prefix := r.kind.idPrefix
	if !looksTruncated(r.id) {
		if rest, ok := strings.CutPrefix(r.id, prefix); ok {
			if raw, err := DecodeID(rest); err == nil {
				if id, _, _ := SanitizeID(prefix + raw); id == r.id {
					return raw, true
				}
			}
		}
		return "", false
	}
	if keyField != "" {
		if key, ok := r.str(keyField); ok {
			if id, _, _ := SanitizeID(prefix + key); id == r.id {
				return key, true
			}
		}
	}
	return "", false
}

// looksTruncated reports whether an id has the form SanitizeID gives a
// long one: at most 238 bytes (a few less where the cut backs off a
// character or an escape), "~" and 16 lower-case hex digits. Such an id
// encodes itself, so only its length and suffix tell it from a short one.
func looksTruncated(id string) bool {
	n := len(id)
	if n < idTruncatedPrefix+17-5 || n > MaxIDBytes || id[n-17] != '~' {
		return false
	}
	for i := n - 16; i < n; i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Migration is a doc's _migration (SPEC §10): the keys and Timestamp of
// the row it was made from, and the hash of its content then.
type Migration struct {
	Table, PartitionKey, RowKey string
	// Timestamp is the row's Timestamp in TimestampLayout; "" when it was
	// null (a row without one).
	Timestamp string
	Hash      string
}

// DocMigration returns the doc's _migration and whether it has one. It
// returns an error when _migration is present but is not an object with
// the string table (Config, Entities or Relationships), partitionKey,
// rowKey and hash, and a timestamp that is null or a timestamp string.
// It is pure and safe for concurrent use.
func DocMigration(doc Doc) (Migration, bool, error) {
	v, ok := doc.Get("_migration")
	if !ok {
		return Migration{}, false, nil
	}
	d, isDoc := v.(Doc)
	if !isDoc {
		return Migration{}, true, fmt.Errorf("_migration is not an object")
	}
	var m Migration
	for _, f := range []struct {
		name string
		dst  *string
	}{{"table", &m.Table}, {"partitionKey", &m.PartitionKey}, {"rowKey", &m.RowKey}, {"hash", &m.Hash}} {
		s, isStr := getString(d, f.name)
		if !isStr {
			return Migration{}, true, fmt.Errorf("_migration.%s is not a string", f.name)
		}
		*f.dst = s
	}
	if TableOrder(m.Table) == len(Tables()) {
		return Migration{}, true, fmt.Errorf("_migration.table is not Config, Entities or Relationships")
	}
	switch ts, _ := d.Get("timestamp"); x := ts.(type) {
	case nil:
	case string:
		if _, ok := ParseTimestamp(x); !ok {
			return Migration{}, true, fmt.Errorf("_migration.timestamp is not a timestamp")
		}
		m.Timestamp = x
	default:
		return Migration{}, true, fmt.Errorf("_migration.timestamp is not a string")
	}
	return m, true, nil
}

func getString(d Doc, name string) (string, bool) {
	v, _ := d.Get(name)
	s, ok := v.(string)
	return s, ok
}

// DecodeDocOrdered decodes a doc's JSON keeping its members in order
// (json.dumps writes a dict's keys in order) and numbers as json.Number
// (their exact text), into the Doc ReverseDoc reads. A repeated member
// keeps its last value at its first position, as Python's json.loads
// does. It returns an error when b is not valid JSON (naming the byte
// offset, not the text) or not an object. It is pure and safe for
// concurrent use.
func DecodeDocOrdered(b []byte) (Doc, error) {
	v, _, err := decodeJSONField(string(b))
	if err != nil {
		return nil, fmt.Errorf("decode doc: %w", err)
	}
	d, ok := v.Value().(Doc)
	if !ok {
		return nil, fmt.Errorf("decode doc: not a JSON object")
	}
	return d, nil
}

// executionStatuses are Bifrost's execution statuses (SPEC §8).
var executionStatuses = []string{"Pending", "Running", "Success", "Failed", "Timeout", "CompletedWithErrors", "Cancelling", "Cancelled"}

// statusIndexed reports the statuses that have a status index row: the
// repository keeps one only while an execution is Pending or Running.
func statusIndexed(status string) bool { return status == "Pending" || status == "Running" }

// DocRowRef returns the table and keys of the row a doc goes back to —
// the row to read before ReverseDoc, whose existing argument it is —
// or, when they cannot be known, the dead letter ReverseDoc would give.
// It is pure and safe for concurrent use.
func DocRowRef(doc Doc) (RowRef, *ReverseDeadLetter) {
	r := &docReversal{doc: doc, kinds: defaultKinds}
	if !r.locate() {
		return RowRef{}, r.fail
	}
	return RowRef{r.table, r.pk, r.rk}, nil
}
