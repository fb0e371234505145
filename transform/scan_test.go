package transform

import (
	"math/rand/v2"
	"testing"
)

// plainRunByBytes is plainRun one byte at a time.
func plainRunByBytes(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] != '"' && b[i+n] != '\\' && b[i+n] >= 0x20 && b[i+n] < 0x80 {
		n++
	}
	return min(n, (len(b)-i)/8*8) // within whole words only
}

// stringEndByBytes is stringEnd one byte at a time.
func stringEndByBytes(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// TestScanWords: reading eight bytes at a time finds what reading one
// at a time finds, for texts of every kind of byte at every place.
func TestScanWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\x00\x1f\x7f\x80\xc3\xa9~ \x20!")
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for k := range b {
			if r.IntN(4) == 0 {
				b[k] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[k] = 'a' + byte(r.IntN(26))
			}
		}
		for i := range len(b) {
			if got, want := plainRun(b, i), plainRunByBytes(b, i); got != want {
				t.Fatalf("plainRun(%q, %d) = %d, want %d", b, i, got, want)
			}
			if got, want := stringEnd(b, i), stringEndByBytes(b, i); got != want {
				t.Fatalf("stringEnd(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	}
}
