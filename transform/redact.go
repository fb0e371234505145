package transform

import "encoding/json"

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
// SecretRef, ClientSecretRef and OAuthResponseRef are the string "***",
// unless the value cannot be a secret: a Boolean, a number or a DateTime,
// or the Value of a row whose Type says it is a bool or an int (the bad
// value of such a config row, "yes" or "ten", is what the operator must
// see to fix it). It redacts them in rows of every table, not only
// Config. The original row is not modified.
func RedactRow(row Row) Row {
	props := make(map[string]Value, len(row.Props))
	for name, v := range row.Props {
		props[name] = v
	}
	for _, p := range redactedProps {
		if v, ok := props[p]; ok && !notSecret(row, p, v) {
			props[p] = String(Redacted)
		}
	}
	row.Props = props
	return row
}

// notSecret reports whether the value v of property name of row cannot be
// a secret (RedactRow).
func notSecret(row Row, name string, v Value) bool {
	switch v.Type {
	case EdmBoolean, EdmInt32, EdmInt64, EdmDouble, EdmDateTime:
		return true
	}
	if name != "Value" {
		return false
	}
	switch t := row.Props["Type"]; {
	case t.Type != EdmString:
		return false
	case t.Str == "bool" || t.Str == "boolean" || t.Str == "int":
		return true
	}
	return false
}

// RedactDoc returns a copy of a doc (a Doc or a map[string]any decoded
// from JSON) whose top-level properties value, hashedKey, secretRef,
// clientSecretRef and oauthResponseRef are "***" unless they are null, a
// boolean or a number (a bool or int config's value: no secret). Other
// values are returned as they are.
func RedactDoc(doc any) any {
	switch d := doc.(type) {
	case Doc:
		out := make(Doc, len(d))
		for i, f := range d {
			if redactedDocProp(f.Name) && mayBeSecret(f.Value) {
				f.Value = Redacted
			}
			out[i] = f
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(d))
		for k, v := range d {
			if redactedDocProp(k) && mayBeSecret(v) {
				v = Redacted
			}
			out[k] = v
		}
		return out
	}
	return doc
}

// mayBeSecret reports whether a doc value may hold a secret: anything
// but null, a boolean or a number.
func mayBeSecret(v any) bool {
	switch v.(type) {
	case nil, bool, json.Number, float64, float32, int, int32, int64:
		return false
	}
	return true
}
