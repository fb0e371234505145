package transform

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Scanning JSON strings eight bytes at a time: most of a doc's bytes are
// in strings (names, ids, text), and most of a string's bytes are plain
// ASCII that neither ends it nor needs a look (docs/performance.md,
// "verify").

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun returns how many bytes of b from i on are plain string
// bytes, looking at whole words of eight only: none is '"', '\' or a
// control character (below 0x20), and none starts or continues a
// multi-byte character. It stops at the first byte that is not plain, or
// where fewer than eight bytes are left; what follows is to be read one
// byte at a time.
func plainRun(b []byte, i int) int {
	start := i
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, s := x^(ones*'"'), x^(ones*'\\')
		// A byte below 0x20 (or ≥ 0x80) borrows; a zero byte of q or s
		// is a quote or a backslash. A word of plain bytes sets no high
		// bit in any of them, and the lowest bit set is the first byte
		// that is not plain (a borrow only sets bits above it).
		if m := (x | (x - ones*0x20) | (q - ones) | (s - ones)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8 - start
		}
	}
	return i - start
}

// stringEnd returns the index of the quote that ends the string that
// starts at b[i], in valid JSON: the first quote after it that an even
// number of backslashes precede (len(b) when there is none).
func stringEnd(b []byte, i int) int {
	from := i + 1 // where a run of backslashes before a quote can start
	for p := from; p < len(b); {
		q := bytes.IndexByte(b[p:], '"')
		if q < 0 {
			return len(b)
		}
		q += p
		k := q
		for k > from && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		p, from = q+1, q+1
	}
	return len(b)
}
