package transform

// Redacted is what redacted values are replaced with (SPEC §1).
const Redacted = "***"

// redactedProps are the source properties whose values never reach any
// output (SPEC §1).
var redactedProps = [...]string{"Value", "HashedKey", "SecretRef", "ClientSecretRef", "OAuthResponseRef"}

// redactedDocNames are the doc properties that hold redacted values.
var redactedDocNames = [...]string{"value", "hashedKey", "secretRef", "clientSecretRef", "oauthResponseRef"}

// redactedDocProp reports whether a doc property holds a redacted value:
// one of redactedDocNames, the camelCase name of a redacted source
// property in an unknown kind, or the "source…" name a redacted property
// gets when renamed (see Transform).
func redactedDocProp(name string) bool {
	for _, n := range redactedDocNames {
		if name == n {
			return true
		}
	}
	for _, p := range redactedProps {
		if name == camel(p) || name == "source"+p {
			return true
		}
	}
	return false
}

// RedactRow returns a copy of row whose properties Value, HashedKey,
// SecretRef, ClientSecretRef and OAuthResponseRef are the string "***".
// It redacts them in rows of every table, not only Config. The original
// row is not modified.
func RedactRow(row Row) Row {
	props := make(map[string]Value, len(row.Props))
	for name, v := range row.Props {
		props[name] = v
	}
	for _, p := range redactedProps {
		if _, ok := props[p]; ok {
			props[p] = String(Redacted)
		}
	}
	row.Props = props
	return row
}

// RedactDoc returns a copy of a doc (a Doc or a map[string]any decoded
// from JSON) whose top-level properties value, hashedKey, secretRef,
// clientSecretRef and oauthResponseRef are "***" unless they are null.
// Other values are returned as they are.
func RedactDoc(doc any) any {
	switch d := doc.(type) {
	case Doc:
		out := make(Doc, len(d))
		for i, f := range d {
			if f.Value != nil && redactedDocProp(f.Name) {
				f.Value = Redacted
			}
			out[i] = f
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(d))
		for k, v := range d {
			if v != nil && redactedDocProp(k) {
				v = Redacted
			}
			out[k] = v
		}
		return out
	}
	return doc
}
