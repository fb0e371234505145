package transform

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// decodeEntityFast is DecodeEntity for the usual entity: one flat JSON
// object of strings, numbers and booleans, every string valid UTF-8
// without surrogate escapes, every value valid for its annotation, and
// nothing after the object but white space. It reports false for anything
// else, and DecodeEntity then runs decodeEntitySlow, which decides errors
// and unusual inputs exactly as before; so for any input both give the
// same result.
//
// It scans the bytes once, copies every key and value into one buffer and
// makes one string of it: the row's strings share that string's memory.
func decodeEntityFast(table string, data []byte) (Row, bool) {
	sc := entityScanners.Get().(*entityScanner)
	defer func() {
		sc.data = nil
		entityScanners.Put(sc)
	}()
	sc.reset(data)
	if !sc.object() {
		return Row{}, false
	}
	str := string(sc.arena)
	text := func(s span) string { return str[s.start:s.end] }

	row := Row{Table: table}
	var timestamp *span
	nprops := 0
	for i := range sc.members {
		m := &sc.members[i]
		name := sc.arena[m.name.start:m.name.end]
		switch {
		case string(name) == "PartitionKey", string(name) == "RowKey", string(name) == "Timestamp":
			if m.kind != scalarString {
				return Row{}, false
			}
			switch string(name) {
			case "PartitionKey":
				row.PartitionKey = text(m.s)
			case "RowKey":
				row.RowKey = text(m.s)
			default:
				timestamp = &m.s
			}
			m.role = roleSkip
		case string(name) == "odata.etag":
			row.ETag = ""
			if m.kind == scalarString {
				row.ETag = text(m.s)
			}
			m.role = roleSkip
		case strings.HasSuffix(string(name), "@odata.type") && !strings.HasPrefix(string(name), "odata."):
			m.role = roleAnnotation
		case strings.Contains(string(name), "@odata.") || strings.HasPrefix(string(name), "odata."):
			m.role = roleSkip
		default:
			m.role = roleProp
			nprops++
		}
	}
	if timestamp != nil {
		t, err := parseEdmTime(text(*timestamp))
		if err != nil {
			return Row{}, false
		}
		row.Timestamp = t
	}
	row.Props = make(map[string]Value, nprops)
	for i := range sc.members {
		m := &sc.members[i]
		if m.role != roleProp {
			continue
		}
		name := sc.arena[m.name.start:m.name.end]
		typ, ok := sc.annotation(name)
		if !ok {
			return Row{}, false
		}
		val, err := decodeValue(typ, scalar{kind: m.kind, s: text(m.s), b: m.b})
		if err != nil {
			return Row{}, false
		}
		row.Props[text(m.name)] = val
	}
	return row, true
}

// annotation returns the Edm type annotated for the property name (the
// last "name@odata.type" member, as a map keeps it), "" when there is
// none, and false when the annotation is not one of the Edm types.
func (sc *entityScanner) annotation(name []byte) (EdmType, bool) {
	const suffix = "@odata.type"
	for i := len(sc.members) - 1; i >= 0; i-- {
		m := &sc.members[i]
		if m.role != roleAnnotation || int(m.name.end-m.name.start) != len(name)+len(suffix) ||
			string(sc.arena[m.name.start:m.name.start+int32(len(name))]) != string(name) {
			continue
		}
		if m.kind != scalarString {
			return "", true // not a string: no annotation, as in decodeEntitySlow
		}
		switch t := EdmType(sc.arena[m.s.start:m.s.end]); t {
		case EdmString, EdmBoolean, EdmInt32, EdmInt64, EdmDouble, EdmDateTime, EdmGuid, EdmBinary:
			return t, true
		}
		return "", false
	}
	return "", true
}

// span is a part of entityScanner.arena.
type span struct{ start, end int32 }

type memberRole uint8

const (
	roleProp memberRole = iota
	roleSkip
	roleAnnotation
)

// entityMember is one member of the entity object: its name, and its
// value's kind, text (s, for strings and numbers) or boolean. It holds no
// pointers, so that filling the reused slice costs no write barriers.
type entityMember struct {
	name, s span
	kind    scalarKind
	b       bool
	role    memberRole
}

// entityScanner holds decodeEntityFast's state; its buffers are reused
// through entityScanners.
type entityScanner struct {
	data    []byte
	i       int
	arena   []byte
	members []entityMember
}

var entityScanners = sync.Pool{New: func() any {
	return &entityScanner{arena: make([]byte, 0, 4096), members: make([]entityMember, 0, 64)}
}}

func (sc *entityScanner) reset(data []byte) {
	if cap(sc.arena) > 1<<20 {
		sc.arena = nil // do not keep a huge buffer in the pool
	}
	sc.data, sc.i, sc.arena, sc.members = data, 0, sc.arena[:0], sc.members[:0]
}

func (sc *entityScanner) space() {
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *entityScanner) peek() byte {
	if sc.i < len(sc.data) {
		return sc.data[sc.i]
	}
	return 0
}

// object scans the whole input: one object of scalar members, then only
// white space.
func (sc *entityScanner) object() bool {
	sc.space()
	if sc.peek() != '{' {
		return false
	}
	sc.i++
	sc.space()
	if sc.peek() == '}' {
		sc.i++
	} else {
		for {
			sc.space()
			if sc.peek() != '"' {
				return false
			}
			var m entityMember
			var ok bool
			if m.name, ok = sc.str(); !ok {
				return false
			}
			sc.space()
			if sc.peek() != ':' {
				return false
			}
			sc.i++
			sc.space()
			if !sc.value(&m) {
				return false
			}
			sc.members = append(sc.members, m)
			sc.space()
			c := sc.peek()
			sc.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return false
			}
		}
	}
	sc.space()
	return sc.i == len(sc.data)
}

func (sc *entityScanner) value(m *entityMember) bool {
	var ok bool
	switch c := sc.peek(); {
	case c == '"':
		m.kind = scalarString
		m.s, ok = sc.str()
		return ok
	case c == 't':
		m.kind, m.b = scalarBool, true
		return sc.literal("true")
	case c == 'f':
		m.kind = scalarBool
		return sc.literal("false")
	case c == 'n':
		m.kind = scalarNull
		return sc.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		m.kind = scalarNumber
		m.s, ok = sc.number()
		return ok
	}
	return false // an object, an array or not JSON
}

func (sc *entityScanner) literal(lit string) bool {
	if len(sc.data)-sc.i >= len(lit) && string(sc.data[sc.i:sc.i+len(lit)]) == lit {
		sc.i += len(lit)
		return true
	}
	return false
}

// number scans a JSON number (RFC 8259 grammar) into the arena.
func (sc *entityScanner) number() (span, bool) {
	start := sc.i
	if sc.data[sc.i] == '-' {
		sc.i++
	}
	digits := func() int {
		n := sc.i
		for sc.i < len(sc.data) && sc.data[sc.i] >= '0' && sc.data[sc.i] <= '9' {
			sc.i++
		}
		return sc.i - n
	}
	switch {
	case sc.peek() == '0':
		sc.i++
	case digits() == 0:
		return span{}, false
	}
	if sc.peek() == '.' {
		sc.i++
		if digits() == 0 {
			return span{}, false
		}
	}
	if c := sc.peek(); c == 'e' || c == 'E' {
		sc.i++
		if c := sc.peek(); c == '+' || c == '-' {
			sc.i++
		}
		if digits() == 0 {
			return span{}, false
		}
	}
	s := span{start: int32(len(sc.arena))}
	sc.arena = append(sc.arena, sc.data[start:sc.i]...)
	s.end = int32(len(sc.arena))
	return s, true
}

// str scans a JSON string into the arena, unescaped. It refuses what
// encoding/json would change or reject: invalid UTF-8, control
// characters, bad escapes and \u escapes of surrogates. (Locals rather
// than fields in the loop: no write barrier per append.)
func (sc *entityScanner) str() (span, bool) {
	data, arena := sc.data, sc.arena
	i := sc.i + 1 // after the opening quote
	s := span{start: int32(len(arena))}
	start, ascii := i, true
	for i < len(data) {
		c := data[i]
		switch {
		case !needsJSONEscape[c] && c < 0x80:
			i++
		case c == '"':
			if !ascii && !utf8.Valid(data[start:i]) {
				return span{}, false
			}
			arena = append(arena, data[start:i]...)
			sc.i, sc.arena = i+1, arena
			s.end = int32(len(arena))
			return s, true
		case c >= 0x80:
			ascii = false
			i++
		case c == '\\':
			if !ascii && !utf8.Valid(data[start:i]) {
				return span{}, false
			}
			arena = append(arena, data[start:i]...)
			var ok bool
			if arena, i, ok = unescape(arena, data, i); !ok {
				return span{}, false
			}
			start, ascii = i, true
		default: // a control character
			return span{}, false
		}
	}
	return span{}, false
}

// unescape appends the escape at data[i] to arena and returns the index
// after it.
func unescape(arena, data []byte, i int) ([]byte, int, bool) {
	if len(data)-i < 2 {
		return arena, i, false
	}
	e := data[i+1]
	i += 2
	if b, ok := simpleEscape(e); ok {
		return append(arena, b), i, true
	}
	switch e {
	case 'u':
		r, ok := parseHex4(data[i:])
		if !ok {
			return arena, i, false
		}
		if r >= 0xD800 && r <= 0xDFFF {
			return arena, i, false // surrogates: left to encoding/json
		}
		i += 4
		arena = utf8.AppendRune(arena, r)
	default:
		return arena, i, false
	}
	return arena, i, true
}
