package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxIDBytes is the longest id Cosmos DB accepts, in bytes.
const MaxIDBytes = 255

// idTruncatedPrefix is how many bytes of a too-long id are kept before
// "~" and the 16 hex digits of its hash (238 + 1 + 16 = 255).
const idTruncatedPrefix = 238

const upperHex = "0123456789ABCDEF"

// needsEscape reports whether an id byte is percent-encoded (SPEC §10):
// '%', '/', '\\', '?', '#' and the control characters U+0000–U+001F and
// U+007F. Bytes of multi-byte UTF-8 characters are never escaped.
func needsEscape(c byte) bool {
	return c < 0x20 || c == 0x7F || c == '%' || c == '/' || c == '\\' || c == '?' || c == '#'
}

// EncodeID percent-encodes the characters Cosmos DB does not allow in an
// id, and '%' itself, as %XX with upper-case hex (SPEC §10). It is
// reversible: DecodeID(EncodeID(s)) == s for every string s. It does not
// shorten the id; SanitizeID does.
func EncodeID(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&0xF])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// DecodeID reverses EncodeID: every %XX (either case of hex) becomes its
// byte. It returns an error for a '%' not followed by two hex digits, which
// EncodeID never produces. A truncated id (see SanitizeID) cannot be
// decoded back to its source; DecodeID decodes its prefix and keeps the
// "~hash" suffix.
func DecodeID(s string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("decode id: incomplete escape at byte %d", i)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("decode id: invalid escape at byte %d", i)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// SanitizeID returns the Cosmos DB id for a raw id (SPEC §10): EncodeID,
// then, when the result is longer than MaxIDBytes, its first 238 bytes +
// "~" + the first 16 hex digits of the SHA-256 of the whole encoded id.
// The cut backs off so that it never splits a UTF-8 character or a %XX
// escape (the prefix may then be a few bytes shorter than 238). The
// reports say whether the id changed and whether it was truncated.
func SanitizeID(raw string) (id string, encoded, truncated bool) {
	id = EncodeID(raw)
	encoded = len(id) != len(raw)
	if len(id) <= MaxIDBytes {
		return id, encoded, false
	}
	cut := idTruncatedPrefix
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	if cut >= 1 && id[cut-1] == '%' {
		cut--
	} else if cut >= 2 && id[cut-2] == '%' {
		cut -= 2
	}
	sum := sha256.Sum256([]byte(id))
	return id[:cut] + "~" + hex.EncodeToString(sum[:8]), encoded, true
}

// IDSet detects id collisions (SPEC §10): two rows that map to the same
// container, scope and id. Feed it every doc outcome in read order (tables
// Config, Entities, Relationships; rows in key order); the first row keeps
// the id, later ones are collisions. It stores 16 bytes of a SHA-256 per id
// (plus map overhead), not the strings. The zero value is not usable; use
// NewIDSet. It is not safe for concurrent use.
type IDSet struct {
	seen map[[16]byte]struct{}
}

// NewIDSet returns an empty IDSet.
func NewIDSet() *IDSet {
	return &IDSet{seen: make(map[[16]byte]struct{})}
}

// IDKey is the 16 bytes of a SHA-256 that an IDSet (and run's set on
// disk) keeps for a doc's container, scope and id.
func IDKey(container, scope, id string) [16]byte {
	h := sha256.New()
	h.Write([]byte(container))
	h.Write([]byte{0})
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [32]byte
	var key [16]byte
	copy(key[:], h.Sum(sum[:0]))
	return key
}

// Add records container/scope/id and reports whether it was new; false
// means an earlier row already maps to it.
func (s *IDSet) Add(container, scope, id string) bool {
	added, _ := memoryKeys{s}.Add(IDKey(container, scope, id))
	return added
}

// Len returns the number of distinct ids recorded.
func (s *IDSet) Len() int { return len(s.seen) }

// Check records a doc outcome's container, scope and id. An outcome that
// is not a doc is returned unchanged and not recorded. A doc whose id was
// already recorded is returned as a dead letter with the reason
// CollisionReason and Collision set; its Doc, DocJSON and Uploads are
// cleared.
func (s *IDSet) Check(o Outcome) Outcome {
	o, _ = CheckID(memoryKeys{s}, o) // a set in memory cannot fail
	return o
}

// KeySet is a set of the keys IDKey makes, kept anywhere (run's and
// verify's are partly on disk, internal/spill): Add records k and
// reports whether it was new; it fails when the set cannot be kept.
type KeySet interface {
	Add(k [16]byte) (added bool, err error)
}

// memoryKeys is an IDSet as a KeySet.
type memoryKeys struct{ s *IDSet }

func (m memoryKeys) Add(k [16]byte) (bool, error) {
	if _, ok := m.s.seen[k]; ok {
		return false, nil
	}
	m.s.seen[k] = struct{}{}
	return true, nil
}

// CheckID is IDSet.Check over the set keys: a doc outcome whose
// container, scope and id an earlier outcome took comes back a collision
// dead letter (Collide); an outcome that is not a doc is returned
// unchanged and not recorded. It returns keys' error, the outcome then
// unchecked.
func CheckID(keys KeySet, o Outcome) (Outcome, error) {
	if o.Disposition != DispositionDoc {
		return o, nil
	}
	added, err := keys.Add(IDKey(o.Container, o.Scope, o.ID))
	if err != nil {
		return o, fmt.Errorf("keeping the doc ids that find collisions: %w", err)
	}
	if !added {
		return Collide(o), nil
	}
	return o, nil
}

// Collide returns the doc outcome o as what IDSet.Check makes of a doc
// whose id an earlier row took: a dead letter with the reason
// CollisionReason and Collision set, its Doc, DocJSON and Uploads
// cleared.
func Collide(o Outcome) Outcome {
	o = o.deadLetter(CollisionReason(o.Container, o.Scope, o.ID))
	o.Collision = true
	return o
}

// CollisionReason is the dead-letter reason of a row whose doc collides
// with an earlier row's.
func CollisionReason(container, scope, id string) string {
	return fmt.Sprintf("id collision: container %s, scope %q, id %q is already taken by an earlier row", container, scope, id)
}
