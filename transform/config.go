package transform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Config value dead-letter reasons (SPEC §6).
const (
	DeadLetterConfigInt  = `config value is not an integer (Type "int")`
	DeadLetterConfigBool = `config value is not true or false (Type "bool")`
	DeadLetterConfigJSON = `config value is not valid JSON (Type "json")`
)

// configValue writes value, secretRef and configType of a config: row
// (groupConfigValue), typing the value by Type. They are one group because
// they follow from the Value, Type and SecretRef properties together: Type
// says how Value is typed, and a secret_ref keeps its secret's name in
// Value, not in SecretRef.
func (b *builder) configValue() {
	typ, hasType := b.prop("Type")
	typeName := typ.Str
	if hasType && typ.Type != EdmString {
		typeName = fmt.Sprint(b.value("Type", typ))
	}
	v, hasValue := b.prop("Value")
	var value any
	secretRefFromValue := false
	switch {
	case typeName == "secret_ref" && hasType:
		secretRefFromValue = true
	case !hasValue:
	case typeName == "string" && hasType:
		value = b.value("Value", v)
	case typeName == "int" && hasType:
		switch v.Type {
		case EdmInt32, EdmInt64:
			value = b.value("Value", v)
		case EdmString:
			n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
			if err != nil {
				b.deadLetter(DeadLetterConfigInt)
				return
			}
			value = b.value("Value", Value{Type: EdmInt64, Int: n})
		default:
			b.deadLetter(DeadLetterConfigInt)
			return
		}
	case typeName == "bool" && hasType:
		switch {
		case v.Type == EdmBoolean:
			value = v.Bool
		case v.Type == EdmString && strings.EqualFold(strings.TrimSpace(v.Str), "true"):
			value = true
		case v.Type == EdmString && strings.EqualFold(strings.TrimSpace(v.Str), "false"):
			value = false
		default:
			b.deadLetter(DeadLetterConfigBool)
			return
		}
	case typeName == "json" && hasType:
		if v.Type != EdmString {
			b.deadLetter(DeadLetterConfigJSON)
			return
		}
		dv, big, err := decodeJSONField(v.Str)
		if err != nil {
			b.deadLetter(DeadLetterConfigJSON)
			return
		}
		if big {
			b.warn(ReasonJSONBigInt, "Value")
		}
		value = dv
	default:
		value = b.value("Value", v)
	}
	if !hasType {
		b.warn(ReasonUnknownConfigType, "Type absent")
	} else if !slices.Contains([]string{"string", "int", "bool", "json", "secret_ref"}, typeName) {
		b.warn(ReasonUnknownConfigType, fmt.Sprintf("Type %q", typeName))
	}
	b.set("value", value)
	if secretRefFromValue {
		if hasValue {
			b.set("secretRef", b.value("Value", v))
		} else {
			b.from("secretRef", "SecretRef")
		}
	} else {
		b.from("secretRef", "SecretRef")
	}
	b.from("configType", "Type")
}
