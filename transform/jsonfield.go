package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth is the nesting limit of JSON-valued properties; it is the
// same as encoding/json's, so both accept the same texts.
const maxJSONDepth = 10000

// errNumberRange is returned for a JSON number that does not fit a double
// (Cosmos DB stores every number as one).
var errNumberRange = errors.New("number out of range")

// JSON is a value decoded from a JSON-valued property (InputData,
// Settings, a JSON Result, …). It is stored compactly — a few slices per
// property instead of one allocation per string, object and array — and
// keeps object members in source order. Use Value for the ordinary Go
// form. A JSON is immutable and safe for concurrent reads.
//
// Nodes hold no pointers (strings are spans of the source text), so the
// arenas cost the garbage collector nothing to scan.
type JSON struct {
	src     string       // the decoded text
	strs    []string     // strings with escapes or non-ASCII, decoded
	nodes   []jsonNode   // the root last
	members []jsonMember // object members, contiguous per object
	elems   []int32      // array elements (node indexes), contiguous per array
}

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonFalse
	jsonTrue
	jsonNumber
	jsonString
	jsonObject
	jsonArray
)

// jsonNode is one value: a string or number, whose text t locates, or an
// object or array, whose members or elements are t.a (the first) and t.b
// (how many).
type jsonNode struct {
	kind jsonKind
	t    jsonText
}

// jsonText locates a string's or number's text: src[a:b], or strs[a]
// when esc. A string is a span of src only when it is plain ASCII without
// escapes, control characters, '"' or '\\' (see jsonDecoder.str).
type jsonText struct {
	esc  bool
	a, b int32
}

type jsonMember struct {
	name jsonText
	val  int32
}

// appendText appends the string t locates as a JSON string. A span of
// the source text holds no character that needs escaping (the decoder
// takes only plain ASCII as a span), so it is copied without a scan.
func (j *JSON) appendText(b []byte, t jsonText) ([]byte, error) {
	if t.esc {
		return appendString(b, j.strs[t.a])
	}
	b = append(b, '"')
	b = append(b, j.src[t.a:t.b]...)
	return append(b, '"'), nil
}

// str returns the text t locates.
func (j *JSON) str(t jsonText) string {
	if t.esc {
		return j.strs[t.a]
	}
	return j.src[t.a:t.b]
}

func (j *JSON) root() int32 { return int32(len(j.nodes) - 1) }

// Value returns the value as a Go tree: Doc for objects (source order),
// []any, json.Number, string, bool or nil.
func (j *JSON) Value() any { return j.value(j.root()) }

func (j *JSON) value(i int32) any {
	n := j.nodes[i]
	switch n.kind {
	case jsonFalse:
		return false
	case jsonTrue:
		return true
	case jsonNumber:
		return json.Number(j.str(n.t))
	case jsonString:
		return j.str(n.t)
	case jsonObject:
		d := make(Doc, n.t.b)
		for k, m := range j.members[n.t.a : n.t.a+n.t.b] {
			d[k] = Field{j.str(m.name), j.value(m.val)}
		}
		return d
	case jsonArray:
		a := make([]any, n.t.b)
		for k, e := range j.elems[n.t.a : n.t.a+n.t.b] {
			a[k] = j.value(e)
		}
		return a
	}
	return nil
}

// MarshalJSON returns the value's JSON text without insignificant white
// space; numbers keep their source text.
func (j *JSON) MarshalJSON() ([]byte, error) {
	return j.appendNode(nil, j.root(), false)
}

// appendNode appends node i as doc JSON, or canonically (RFC 8785: members
// sorted by UTF-16 code units, numbers in ECMAScript form).
func (j *JSON) appendNode(b []byte, i int32, canonical bool) ([]byte, error) {
	n := j.nodes[i]
	var err error
	switch n.kind {
	case jsonNull:
		return append(b, "null"...), nil
	case jsonFalse:
		return append(b, "false"...), nil
	case jsonTrue:
		return append(b, "true"...), nil
	case jsonNumber:
		s := j.str(n.t)
		if !canonical || shortInteger(s) {
			return append(b, s...), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return b, fmt.Errorf("number %s does not fit a double", s)
		}
		return appendES6Number(b, f)
	case jsonString:
		return j.appendText(b, n.t)
	case jsonArray:
		b = append(b, '[')
		for k, e := range j.elems[n.t.a : n.t.a+n.t.b] {
			if k > 0 {
				b = append(b, ',')
			}
			if b, err = j.appendNode(b, e, canonical); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	// object
	members := j.members[n.t.a : n.t.a+n.t.b]
	if !canonical {
		b = append(b, '{')
		for k, m := range members {
			if k > 0 {
				b = append(b, ',')
			}
			if b, err = j.appendText(b, m.name); err != nil {
				return b, err
			}
			b = append(b, ':')
			if b, err = j.appendNode(b, m.val, false); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	// Sort member indexes with their names: small objects need no
	// allocation.
	var smallIdx [16]int
	var smallNames [16]string
	idx, names := smallIdx[:0], smallNames[:0]
	if len(members) > len(smallIdx) {
		idx, names = make([]int, 0, len(members)), make([]string, 0, len(members))
	}
	for k, m := range members {
		idx = append(idx, k)
		names = append(names, j.str(m.name))
	}
	sortByName(idx, names)
	b = append(b, '{')
	for k, m := range idx {
		if k > 0 {
			b = append(b, ',')
		}
		if b, err = j.appendText(b, members[m].name); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = j.appendNode(b, members[m].val, true); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// shortInteger reports whether a JSON number's text is an integer of at
// most 15 digits other than -0: a double holds it exactly and its RFC 8785
// form is the text itself, so it needs no conversion.
func shortInteger(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if len(s) == 0 || len(s) > 15 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decodeJSONField decodes the text of a JSON-valued property strictly by
// RFC 8259 into a *JSON. Object members keep their order; for a repeated
// name the last value wins, at the first position, as Python's json.loads
// does. Numbers keep their exact text. Leading and trailing white space is
// allowed, NaN/Infinity literals are not. Invalid UTF-8 and lone
// surrogates in strings become U+FFFD, as with encoding/json.
//
// bigInt reports an integer whose magnitude is above 2^53 (Cosmos DB will
// round it). The error names the byte offset, never the text.
func decodeJSONField(s string) (v *JSON, bigInt bool, err error) {
	return decodeJSONFieldScratch(s, &jsonScratch{})
}

// jsonScratch holds the decoder's scratch stacks so that one Transform
// reuses them across its JSON-valued properties.
type jsonScratch struct {
	members []jsonMember
	elems   []int32
}

func decodeJSONFieldScratch(s string, scratch *jsonScratch) (v *JSON, bigInt bool, err error) {
	n := len(s)/12 + 4 // rough node count, to allocate the arenas once
	d := jsonDecoder{
		s:      s,
		j:      &JSON{src: s, nodes: make([]jsonNode, 0, n), members: make([]jsonMember, 0, n/2+2), elems: make([]int32, 0, n/4+2)},
		mstack: scratch.members[:0],
		estack: scratch.elems[:0],
	}
	defer func() { scratch.members, scratch.elems = d.mstack[:0], d.estack[:0] }()
	d.space()
	if err = d.value(); err != nil {
		return nil, false, err
	}
	d.space()
	if d.i != len(d.s) {
		return nil, false, d.syntax()
	}
	return d.j, d.bigInt, nil
}

type jsonDecoder struct {
	s      string
	i      int
	depth  int
	bigInt bool
	j      *JSON
	mstack []jsonMember // members of the objects being decoded
	estack []int32      // elements of the arrays being decoded
}

func (d *jsonDecoder) syntax() error {
	return fmt.Errorf("invalid JSON at offset %d", d.i)
}

func (d *jsonDecoder) space() {
	s, i := d.s, d.i
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	d.i = i
}

func (d *jsonDecoder) node(n jsonNode) {
	d.j.nodes = append(d.j.nodes, n)
}

func (d *jsonDecoder) literal(lit string, kind jsonKind) error {
	if len(d.s)-d.i >= len(lit) && d.s[d.i:d.i+len(lit)] == lit {
		d.i += len(lit)
		d.node(jsonNode{kind: kind})
		return nil
	}
	return d.syntax()
}

// value decodes one value and appends its node (last).
func (d *jsonDecoder) value() error {
	if d.i >= len(d.s) {
		return d.syntax()
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		t, err := d.str()
		if err != nil {
			return err
		}
		d.node(jsonNode{kind: jsonString, t: t})
		return nil
	case c == 't':
		return d.literal("true", jsonTrue)
	case c == 'f':
		return d.literal("false", jsonFalse)
	case c == 'n':
		return d.literal("null", jsonNull)
	case c == '-' || (c >= '0' && c <= '9'):
		t, err := d.number()
		if err != nil {
			return err
		}
		d.node(jsonNode{kind: jsonNumber, t: t})
		return nil
	default:
		return d.syntax()
	}
}

func (d *jsonDecoder) enter() error {
	d.depth++
	if d.depth > maxJSONDepth {
		return fmt.Errorf("invalid JSON: nested deeper than %d", maxJSONDepth)
	}
	return nil
}

func (d *jsonDecoder) object() error {
	if err := d.enter(); err != nil {
		return err
	}
	d.i++ // {
	mark := len(d.mstack)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.depth--
		d.node(jsonNode{kind: jsonObject, t: jsonText{a: int32(len(d.j.members))}})
		return nil
	}
	var seen map[string]int // built only for large objects
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return d.syntax()
		}
		name, err := d.str()
		if err != nil {
			return err
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return d.syntax()
		}
		d.i++
		d.space()
		if err := d.value(); err != nil {
			return err
		}
		seen = d.setMember(mark, seen, name, int32(len(d.j.nodes)-1))
		d.space()
		if d.i >= len(d.s) {
			return d.syntax()
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			start := int32(len(d.j.members))
			d.j.members = append(d.j.members, d.mstack[mark:]...)
			d.node(jsonNode{kind: jsonObject, t: jsonText{a: start, b: int32(len(d.mstack) - mark)}})
			d.mstack = d.mstack[:mark]
			return nil
		default:
			return d.syntax()
		}
	}
}

// setMember sets name in the object being collected in d.mstack[mark:],
// replacing an earlier value in place.
func (d *jsonDecoder) setMember(mark int, seen map[string]int, name jsonText, v int32) map[string]int {
	obj := d.mstack[mark:]
	s := d.j.str(name)
	if seen == nil && len(obj) < 16 {
		for i := range obj {
			if d.j.str(obj[i].name) == s {
				obj[i].val = v
				return nil
			}
		}
		d.mstack = append(d.mstack, jsonMember{name, v})
		return nil
	}
	if seen == nil {
		seen = make(map[string]int, 2*len(obj))
		for i, m := range obj {
			seen[d.j.str(m.name)] = i
		}
	}
	if i, ok := seen[s]; ok {
		obj[i].val = v
		return seen
	}
	seen[s] = len(obj)
	d.mstack = append(d.mstack, jsonMember{name, v})
	return seen
}

func (d *jsonDecoder) array() error {
	if err := d.enter(); err != nil {
		return err
	}
	d.i++ // [
	mark := len(d.estack)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.depth--
		d.node(jsonNode{kind: jsonArray, t: jsonText{a: int32(len(d.j.elems))}})
		return nil
	}
	for {
		d.space()
		if err := d.value(); err != nil {
			return err
		}
		d.estack = append(d.estack, int32(len(d.j.nodes)-1))
		d.space()
		if d.i >= len(d.s) {
			return d.syntax()
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			start := int32(len(d.j.elems))
			d.j.elems = append(d.j.elems, d.estack[mark:]...)
			d.node(jsonNode{kind: jsonArray, t: jsonText{a: start, b: int32(len(d.estack) - mark)}})
			d.estack = d.estack[:mark]
			return nil
		default:
			return d.syntax()
		}
	}
}

func (d *jsonDecoder) number() (jsonText, error) {
	start := d.i
	integer := true
	if d.s[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := d.i
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
		}
		return d.i - n
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case digits() == 0:
		return jsonText{}, d.syntax()
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		integer = false
		d.i++
		if digits() == 0 {
			return jsonText{}, d.syntax()
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		integer = false
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return jsonText{}, d.syntax()
		}
	}
	t := jsonText{a: int32(start), b: int32(d.i)}
	text := d.s[start:d.i]
	if integer {
		if len(text) >= 16 && !intFitsDouble(text) {
			d.bigInt = true
		}
		if len(text) < 300 {
			return t, nil
		}
	}
	if _, err := strconv.ParseFloat(text, 64); err != nil {
		return jsonText{}, errNumberRange
	}
	return t, nil
}

// intFitsDouble reports whether a decimal integer's magnitude is at most 2^53.
func intFitsDouble(text string) bool {
	n, err := strconv.ParseInt(text, 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53)
}

// str decodes a string: a span of the source text, or, when it has
// escapes or non-ASCII characters, a new string in d.j.strs.
func (d *jsonDecoder) str() (jsonText, error) {
	start := d.i + 1 // after the opening quote
	s, i := d.s, start
	for i < len(s) && !needsJSONEscape[s[i]] && s[i] < 0x80 {
		i++
	}
	d.i = i
	if i < len(s) && s[i] == '"' {
		d.i++
		return jsonText{a: int32(start), b: int32(i)}, nil
	}
	// Slow path: escapes, control characters or non-ASCII.
	buf := make([]byte, 0, d.i-start+16)
	buf = append(buf, d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			d.j.strs = append(d.j.strs, string(buf))
			return jsonText{esc: true, a: int32(len(d.j.strs) - 1)}, nil
		case c < 0x20:
			return jsonText{}, d.syntax()
		case c == '\\':
			d.i++
			if d.i >= len(d.s) {
				return jsonText{}, d.syntax()
			}
			e := d.s[d.i]
			d.i++
			if b, ok := simpleEscape(e); ok {
				buf = append(buf, b)
				continue
			}
			switch e {
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return jsonText{}, d.syntax()
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if len(d.s)-d.i >= 6 && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						if x, ok := d.hex4(); ok {
							r2 = x
						} else {
							return jsonText{}, d.syntax()
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
						} else {
							d.i = save // the second escape stands alone
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return jsonText{}, d.syntax()
			}
		case c < 0x80:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			buf = utf8.AppendRune(buf, r) // RuneError for invalid bytes
			d.i += size
		}
	}
	return jsonText{}, d.syntax()
}

func (d *jsonDecoder) hex4() (rune, bool) {
	r, ok := parseHex4(d.s[d.i:])
	if ok {
		d.i += 4
	}
	return r, ok
}

// parseHex4 parses the four hex digits at the start of s (a \u escape's).
func parseHex4[T string | []byte](s T) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// simpleEscape returns the byte a one-character JSON escape \e stands for;
// false for 'u' and for anything that is not an escape.
func simpleEscape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
