package transform

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A doc's JSON read in one pass (ReadDoc): its text is checked as
// strictly as jsontext checks by default and, as it is read, the RFC 8785
// form of each top-level member's value is written (what Canonical
// writes), so that the doc's hash by meaning is the hash of those forms
// put together, without a decoded tree and without reading the text
// again. Whatever the reader is not sure to read as DecodeDoc does — a
// text that is not JSON, a repeated name, invalid UTF-8 or escapes, a
// number beyond a double, a doc nested deeper than maxCanonDepth — it
// leaves to DecodeDoc (errNotCanonical).

// errNotCanonical is any reason for canonReader to leave a text to
// DecodeDoc.
var errNotCanonical = errors.New("not read by the canonical reader")

// maxCanonDepth is how deep canonReader reads; a deeper doc goes to
// DecodeDoc (which accepts 10,000 levels).
const maxCanonDepth = 256

// canonReader reads one JSON text. in is the text, pos where it stands;
// out receives the canonical forms.
type canonReader struct {
	in    []byte
	pos   int
	out   []byte
	depth int
	// members are the members of the objects being read, innermost last,
	// their names decoded in names; tmp is where an object's members are
	// put in order. (Offsets, not slices: sorting them moves no pointer.)
	members []canonMember
	names   []byte
	tmp     []byte
	// wide is set once a name has a character from U+E000 up, the only
	// ones whose UTF-16 order is not the order of their UTF-8 bytes.
	wide bool
	// top and sorted are doc's top-level members as read and in order;
	// perm and moved sortMembers' scratch space.
	top    []canonMember
	sorted []rawMember
	perm   []int32
	moved  []canonMember
	// last is the top-level names of the last doc sortTop sorted and
	// their order, kept from doc to doc.
	last lastOrder
}

// lastOrder is the top-level names of a doc, in the order read (their
// bytes one after the other, and where each ends), and the order of
// their members (perm as sortMembers leaves it).
type lastOrder struct {
	names []byte
	ends  []int
	perm  []int32
}

// reset readies c to read in, keeping its buffers.
func (c *canonReader) reset(in []byte) {
	clear(c.sorted) // they refer to the last text
	*c = canonReader{in: in, out: c.out[:0], members: c.members[:0], names: c.names[:0], tmp: c.tmp[:0],
		top: c.top[:0], sorted: c.sorted[:0], perm: c.perm[:0], moved: c.moved[:0], last: c.last}
}

// canonMember is one member of an object being read: where its name is
// in names, decoded, and where its canonical form ("name":value) is in
// out; for a top-level member, also where its value's canonical form
// starts in out and where its value is in the text.
type canonMember struct {
	// prefix is the name's first 8 bytes, big-endian (zeros after a
	// shorter name): in byte order, two names whose prefixes differ are
	// in the order of their prefixes.
	prefix               uint64
	nameStart, nameEnd   int
	start, end           int
	canonStart           int
	valueStart, valueEnd int
}

// name returns m's name.
func (c *canonReader) name(m canonMember) []byte { return c.names[m.nameStart:m.nameEnd] }

// cmpNames compares two members by name, in RFC 8785's order.
func (c *canonReader) cmpNames(x, y canonMember) int {
	if !c.wide {
		// Byte order: the first bytes decide, unless they are the same.
		if x.prefix != y.prefix {
			return cmp.Compare(x.prefix, y.prefix)
		}
		return bytes.Compare(c.name(x), c.name(y))
	}
	// Rare (a name with a character from U+E000 up): no short way.
	return CompareUTF16(string(c.name(x)), string(c.name(y)))
}

// sortTop puts a doc's top-level members in RFC 8785's order. The docs
// of a container mostly have the same members in the same order (as run
// wrote them, the service's own after them): the order found for the
// last doc serves for the next one whose names are the same, in the same
// order.
func (c *canonReader) sortTop(top []canonMember) {
	if c.sameNames(top) {
		c.moved = append(c.moved[:0], top...)
		for i, p := range c.last.perm {
			top[i] = c.moved[p]
		}
		return
	}
	if len(top) > maxInsertionSort {
		c.sortMembers(top)
		return
	}
	c.last.names, c.last.ends = c.last.names[:0], c.last.ends[:0]
	for _, m := range top {
		c.last.names = append(c.last.names, c.name(m)...)
		c.last.ends = append(c.last.ends, len(c.last.names))
	}
	c.sortMembers(top)
	c.last.perm = append(c.last.perm[:0], c.perm...)
}

// sameNames reports whether top's names are the last doc's.
func (c *canonReader) sameNames(top []canonMember) bool {
	if len(top) != len(c.last.ends) || len(top) == 0 {
		return false
	}
	start := 0
	for i, m := range top {
		if !bytes.Equal(c.name(m), c.last.names[start:c.last.ends[i]]) {
			return false
		}
		start = c.last.ends[i]
	}
	return true
}

// sortMembers puts ms in RFC 8785's order. An object has a few dozen
// members at most, as a rule: those are put in order by an insertion
// sort of their indexes, which compares most of them by their first
// bytes alone and moves each member once; more are left to SortFunc.
func (c *canonReader) sortMembers(ms []canonMember) {
	if len(ms) > maxInsertionSort {
		slices.SortFunc(ms, c.cmpNames)
		return
	}
	perm := c.perm[:0]
	for i := range ms {
		p := int32(i)
		j := len(perm)
		perm = append(perm, p)
		for ; j > 0 && c.after(&ms[perm[j-1]], &ms[p]); j-- {
			perm[j] = perm[j-1]
		}
		perm[j] = p
	}
	c.perm = perm
	c.moved = append(c.moved[:0], ms...)
	for i, p := range perm {
		ms[i] = c.moved[p]
	}
}

// maxInsertionSort is the most members sortMembers sorts by insertion.
const maxInsertionSort = 64

// after reports whether x's name comes after y's in RFC 8785's order.
func (c *canonReader) after(x, y *canonMember) bool {
	if !c.wide && x.prefix != y.prefix {
		return x.prefix > y.prefix
	}
	return c.cmpNames(*x, *y) > 0
}

// readName reads a member's name, writes its canonical form and returns
// the member as far as its name: where the name is, decoded, in names,
// its first bytes as a number, and where its canonical form starts in out.
func (c *canonReader) readName() (canonMember, error) {
	start := len(c.out)
	name, high, err := c.str()
	if err != nil {
		return canonMember{}, err
	}
	m := canonMember{nameStart: len(c.names), start: start}
	c.names = append(c.names, name...)
	m.nameEnd = len(c.names)
	var first [8]byte
	copy(first[:], name)
	m.prefix = binary.BigEndian.Uint64(first[:])
	if high && !c.wide {
		// 0xEE starts U+E000 and up.
		c.wide = slices.ContainsFunc(name, func(b byte) bool { return b >= 0xEE })
	}
	return m, nil
}

// rawMember is one top-level member of a doc: its name decoded, its value
// as it is in the doc's text, and its canonical form: the quoted name
// with its colon ("name":), then the value (canon).
type rawMember struct {
	name, value, quoted, canon []byte
}

// doc reads the top-level object of c.in and returns its members sorted
// by name (RFC 8785's order, UTF-16 code units), their canonical forms
// slices of c.out; what follows the object is not read, as DecodeDoc
// does not read it. Any error is errNotCanonical.
func (c *canonReader) doc() ([]rawMember, error) {
	c.space()
	if !c.skip('{') {
		return nil, errNotCanonical
	}
	top := c.top[:0]
	c.space()
	for first := true; !c.skip('}'); first = false {
		if !first && !c.skip(',') {
			return nil, errNotCanonical
		}
		c.space()
		m, err := c.readName()
		if err != nil {
			return nil, err
		}
		c.space()
		if !c.skip(':') {
			return nil, errNotCanonical
		}
		c.out = append(c.out, ':')
		c.space()
		m.canonStart, m.valueStart = len(c.out), c.pos
		if err := c.value(); err != nil {
			return nil, err
		}
		m.end, m.valueEnd = len(c.out), c.pos
		top = append(top, m)
		c.space()
	}
	c.top = top
	c.sortTop(top)
	members := c.sorted[:0]
	for i, m := range top {
		if i > 0 && c.cmpNames(top[i-1], m) == 0 {
			return nil, errNotCanonical // encoding/json keeps the last
		}
		members = append(members, rawMember{name: c.name(m), value: c.in[m.valueStart:m.valueEnd],
			quoted: c.out[m.start:m.canonStart:m.canonStart], canon: c.out[m.canonStart:m.end:m.end]})
	}
	c.sorted = members
	return members, nil
}

// value reads one value and writes its canonical form.
func (c *canonReader) value() error {
	if c.pos >= len(c.in) {
		return errNotCanonical
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		_, _, err := c.str()
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	}
	return errNotCanonical
}

// object reads an object and writes its members in RFC 8785's order.
func (c *canonReader) object() error {
	if c.depth++; c.depth > maxCanonDepth {
		return errNotCanonical
	}
	c.pos++
	open := len(c.out)
	c.out = append(c.out, '{')
	mark := len(c.members)
	c.space()
	for first := true; !c.skip('}'); first = false {
		if !first {
			if !c.skip(',') {
				return errNotCanonical
			}
			c.out = append(c.out, ',')
			c.space()
		}
		m, err := c.readName()
		if err != nil {
			return err
		}
		c.space()
		if !c.skip(':') {
			return errNotCanonical
		}
		c.out = append(c.out, ':')
		c.space()
		if err := c.value(); err != nil {
			return err
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		c.space()
	}
	err := c.order(open, c.members[mark:])
	c.members = c.members[:mark]
	c.out = append(c.out, '}')
	c.depth--
	return err
}

// order puts the members ms of the object that starts at out[open] in
// RFC 8785's order, where they are not already; a repeated name is
// errNotCanonical.
func (c *canonReader) order(open int, ms []canonMember) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		switch c.cmpNames(ms[i-1], ms[i]) {
		case 0:
			return errNotCanonical // encoding/json keeps the last
		case 1:
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	c.sortMembers(ms)
	for i := 1; i < len(ms); i++ {
		if c.cmpNames(ms[i-1], ms[i]) == 0 {
			return errNotCanonical
		}
	}
	c.tmp = c.tmp[:0]
	for i, m := range ms {
		if i > 0 {
			c.tmp = append(c.tmp, ',')
		}
		c.tmp = append(c.tmp, c.out[m.start:m.end]...)
	}
	c.out = append(c.out[:open+1], c.tmp...)
	return nil
}

// array reads an array and writes it.
func (c *canonReader) array() error {
	if c.depth++; c.depth > maxCanonDepth {
		return errNotCanonical
	}
	c.pos++
	c.out = append(c.out, '[')
	c.space()
	for first := true; !c.skip(']'); first = false {
		if !first {
			if !c.skip(',') {
				return errNotCanonical
			}
			c.out = append(c.out, ',')
			c.space()
		}
		if err := c.value(); err != nil {
			return err
		}
		c.space()
	}
	c.out = append(c.out, ']')
	c.depth--
	return nil
}

// str reads a string, writes its canonical form and returns its value
// (a slice of the text when it has no escape), and whether it has a
// character beyond ASCII.
func (c *canonReader) str() (value []byte, high bool, err error) {
	in, start := c.in, c.pos
	if start >= len(in) || in[start] != '"' {
		return nil, false, errNotCanonical
	}
	escaped := false
	i := start + 1
scan:
	for ; i < len(in); i++ {
		if i += plainRun(in, i); i >= len(in) {
			break
		}
		switch b := in[i]; {
		case b == '"':
			break scan
		case b == '\\':
			escaped = true
			i++ // the escaped character (a \u's digits are read as characters)
		case b < 0x20:
			return nil, false, errNotCanonical
		case b >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false, errNotCanonical
			}
			high = true
			i += n - 1
		}
	}
	if i >= len(in) {
		return nil, false, errNotCanonical
	}
	c.pos = i + 1
	quoted := in[start:c.pos]
	if !escaped {
		// As it is: canonical JSON escapes only '"', '\' and control
		// characters.
		c.out = append(c.out, quoted...)
		return quoted[1 : len(quoted)-1], high, nil
	}
	value, err = jsontext.AppendUnquote(nil, quoted)
	if err != nil {
		return nil, false, errNotCanonical // invalid UTF-8, a lone surrogate, a bad escape
	}
	if c.out, err = jsontext.AppendQuote(c.out, value); err != nil {
		return nil, false, errNotCanonical
	}
	return value, true, nil
}

// literal reads true, false or null.
func (c *canonReader) literal(word string) error {
	if len(c.in)-c.pos < len(word) || string(c.in[c.pos:c.pos+len(word)]) != word {
		return errNotCanonical
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

// number reads a number (RFC 8259's grammar) and writes its canonical
// form: an integer of up to 15 digits as it is, any other by jsontext's
// canonicalization, which Canonical uses too. A number beyond a double
// is errNotCanonical: Hash refuses it where canonical JSON would write
// the largest double.
func (c *canonReader) number() error {
	start := c.pos
	c.skip('-')
	switch {
	case c.skip('0'):
	case c.digits() == 0:
		return errNotCanonical
	}
	simple := true
	if c.skip('.') {
		simple = false
		if c.digits() == 0 {
			return errNotCanonical
		}
	}
	if c.skip('e') || c.skip('E') {
		simple = false
		if !c.skip('+') {
			c.skip('-')
		}
		if c.digits() == 0 {
			return errNotCanonical
		}
	}
	text := c.in[start:c.pos]
	digits := len(text)
	if text[0] == '-' {
		digits--
	}
	if simple && digits <= 15 && string(text) != "-0" {
		c.out = append(c.out, text...)
		return nil
	}
	if _, err := strconv.ParseFloat(string(text), 64); err != nil {
		return errNotCanonical
	}
	mark := len(c.out)
	c.out = append(c.out, text...)
	v := jsontext.Value(c.out[mark:])
	if err := v.Canonicalize(); err != nil {
		return errNotCanonical
	}
	c.out = append(c.out[:mark], v...)
	return nil
}

// digits skips decimal digits and returns how many.
func (c *canonReader) digits() int {
	n := 0
	for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
		c.pos++
		n++
	}
	return n
}

// skip skips b if it is next.
func (c *canonReader) skip(b byte) bool {
	if c.pos < len(c.in) && c.in[c.pos] == b {
		c.pos++
		return true
	}
	return false
}

// space skips JSON's white space.
func (c *canonReader) space() { c.pos = skipSpace(c.in, c.pos) }
