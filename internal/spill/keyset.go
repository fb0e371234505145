package spill

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// BloomHashes is how many bits a key sets in a Bloom filter. A filter's
// false-match rate grows with the keys it holds: 1 in 12,000 at 33 bits a
// key, 1 in 700 at 17, 1 in 24 at 7 (a 4 MiB filter holds 33.5 million
// bits).
const BloomHashes = 5

// Bloom is a blocked Bloom filter over keys that are already uniform
// hashes: a key sets BloomHashes bits in one 512-bit block. It never
// grows; the zero value is not usable (NewBloom). It is not safe for
// concurrent use.
type Bloom struct{ blocks [][8]uint64 }

// NewBloom returns an empty filter of about bytes bytes (64 at least).
func NewBloom(bytes int) Bloom {
	return Bloom{blocks: make([][8]uint64, max(1, bytes/64))}
}

func (b Bloom) locate(k [16]byte) (*[8]uint64, uint64) {
	h := binary.LittleEndian.Uint64(k[:8])
	return &b.blocks[h%uint64(len(b.blocks))], binary.LittleEndian.Uint64(k[8:])
}

// Add adds k.
func (b Bloom) Add(k [16]byte) {
	blk, bits := b.locate(k)
	for i := range BloomHashes {
		bit := (bits >> (9 * i)) & 511
		blk[bit>>6] |= 1 << (bit & 63)
	}
}

// Has reports whether k may have been added; false is certain.
func (b Bloom) Has(k [16]byte) bool {
	blk, bits := b.locate(k)
	for i := range BloomHashes {
		bit := (bits >> (9 * i)) & 511
		if blk[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
	}
	return true
}

// KeySet is an exact set of 16-byte keys (uniform hashes) whose memory
// does not grow with the keys: it holds up to memKeys of them in memory,
// writes them out as a sorted run when full, and merges the runs so that
// each is more than twice the size of the next. A filter of fixed size
// over every key sends a lookup to the runs only when the key may be
// there; a lookup reads one block per run. It is not safe for concurrent
// use.
type KeySet struct {
	runs    runSet
	memKeys int
	mem     map[[16]byte]struct{}
	filter  Bloom
	sorted  [][16]byte // spill's buffer
	block   []byte     // a lookup's buffer
	// diskLookups counts the lookups the filter let through to the runs.
	diskLookups int64
}

// NewKeySet returns an empty set that holds memKeys keys in memory (1 at
// least), with a filter of filterBytes, and puts its runs in the
// directory that mkdir makes at the first spill (mkdir returns its path;
// Close removes it).
func NewKeySet(memKeys, filterBytes int, mkdir func() (string, error)) *KeySet {
	return &KeySet{runs: runSet{mkdir: mkdir}, memKeys: max(1, memKeys), mem: make(map[[16]byte]struct{}, max(1, memKeys)),
		filter: NewBloom(filterBytes)}
}

// Add adds k and reports whether it was new. It returns an error when a
// run cannot be written or read; the set is then unusable.
func (s *KeySet) Add(k [16]byte) (bool, error) {
	if _, ok := s.mem[k]; ok {
		return false, nil
	}
	if len(s.runs.runs) > 0 && s.filter.Has(k) {
		s.diskLookups++
		found, buf, err := s.runs.has(k[:], s.block)
		s.block = buf
		if err != nil || found {
			return false, err
		}
	}
	s.mem[k] = struct{}{}
	s.filter.Add(k)
	if len(s.mem) >= s.memKeys {
		return true, s.spill()
	}
	return true, nil
}

// Has reports whether k is in the set. It returns an error when a run
// cannot be read.
func (s *KeySet) Has(k [16]byte) (bool, error) {
	if _, ok := s.mem[k]; ok {
		return true, nil
	}
	if len(s.runs.runs) == 0 || !s.filter.Has(k) {
		return false, nil
	}
	s.diskLookups++
	found, buf, err := s.runs.has(k[:], s.block)
	s.block = buf
	return found, err
}

// Len is the number of keys in the set.
func (s *KeySet) Len() int { return len(s.mem) + s.runs.records() }

// spill writes the keys in memory out as a run.
func (s *KeySet) spill() error {
	s.sorted = s.sorted[:0]
	for k := range s.mem {
		s.sorted = append(s.sorted, k)
	}
	slices.SortFunc(s.sorted, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	err := s.runs.write(func(yield func([]byte) error) error {
		for i := range s.sorted {
			if err := yield(s.sorted[i][:]); err != nil {
				return err
			}
		}
		return nil
	})
	clear(s.mem)
	return err
}

// Close removes the runs and their directory.
func (s *KeySet) Close() error { return s.runs.close() }
