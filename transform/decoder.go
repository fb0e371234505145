package transform

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// textDecoder is a jsontext.Decoder that accepts in strings what
// encoding/json accepts: invalid UTF-8 and lone surrogates, which become
// U+FFFD; and repeated member names, which the caller handles. It comes
// from decoderPool with its readers, so that their buffers and the
// decoder's are reused.
type textDecoder struct {
	jsontext.Decoder
	bytes bytes.Reader
	str   strings.Reader
	size  int
	// members is DecodeEntity's list of an entity's members, reused.
	members []entityMember
}

// decoderPool holds textDecoders (*textDecoder) for reuse.
var decoderPool = sync.Pool{New: func() any { return new(textDecoder) }}

// maxPooledInput is the largest input after which a textDecoder goes back
// to the pool; a decoder keeps a buffer as large as what it read.
const maxPooledInput = 256 << 10

// newTextDecoder returns a decoder reading data, or s when data is nil.
// Call release when done.
func newTextDecoder(data []byte, s string) *textDecoder {
	d := decoderPool.Get().(*textDecoder)
	var r io.Reader
	if data != nil {
		d.bytes.Reset(data)
		d.size, r = len(data), &d.bytes
	} else {
		d.str.Reset(s)
		d.size, r = len(s), &d.str
	}
	d.Reset(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return d
}

// release returns d to the pool, without references to its input.
func (d *textDecoder) release() {
	if d.size > maxPooledInput {
		return
	}
	d.bytes.Reset(nil)
	d.str.Reset("")
	clear(d.members) // no strings kept alive in the pool
	d.members = d.members[:0]
	d.Reset(&d.str)
	decoderPool.Put(d)
}
