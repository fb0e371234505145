package migrate

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/bifrost/bifrost-migrate/transform"
)

// The sets run keeps of every row read (SPEC §9, §10), in memory that does
// not grow with the tables (SPEC §11; docs/performance.md, "At any size"):
//
//   - the doc ids, to find collisions: exact, because a collision
//     dead-letters a row. A keySet: the latest ids in memory, the rest in
//     sorted runs on disk, and a filter of fixed size that spares almost
//     every lookup the disk;
//   - the execution ids, to find dangling indexes: a filter of fixed size
//     alone (execFilter). A false match can only hide a dangling-index
//     warning, which SPEC §9 makes a warning, not a disposition.
//
// Both are deterministic: a resumed run that reads the same rows again
// builds the same sets and decides exactly what an uninterrupted run
// decides (SPEC §11).

// Their sizes. A filter's false-match rate grows with the keys it holds:
// with bloomHashes 5, 1 in 12,000 at 33 bits a key, 1 in 700 at 17, 1 in
// 24 at 7 (a 4 MiB filter holds 33.5 million bits; docs/performance.md).
const (
	// idMemoryKeys is how many doc ids a keySet holds in memory (a map of
	// 16-byte keys, about 1 MB) before it writes them out as a run.
	idMemoryKeys = 1<<16 - 1<<13
	// idFilterBytes is the size of the filter before the runs on disk.
	idFilterBytes = 2 << 20
	// execFilterBytes is the size of the execution-id filter.
	execFilterBytes = 4 << 20
	bloomHashes     = 5
	// runBlockKeys is how many keys a run's in-memory index skips: a
	// lookup reads one block of 4 KiB per run.
	runBlockKeys = 256
)

// bloom is a blocked Bloom filter over keys that are already uniform
// hashes: a key sets bloomHashes bits in one 512-bit block. It never
// grows; the zero value is not usable (newBloom).
type bloom struct{ blocks [][8]uint64 }

func newBloom(bytes int) bloom {
	return bloom{blocks: make([][8]uint64, max(1, bytes/64))}
}

func (b bloom) locate(k [16]byte) (*[8]uint64, uint64) {
	h := binary.LittleEndian.Uint64(k[:8])
	return &b.blocks[h%uint64(len(b.blocks))], binary.LittleEndian.Uint64(k[8:])
}

func (b bloom) add(k [16]byte) {
	blk, bits := b.locate(k)
	for i := range bloomHashes {
		bit := (bits >> (9 * i)) & 511
		blk[bit>>6] |= 1 << (bit & 63)
	}
}

func (b bloom) has(k [16]byte) bool {
	blk, bits := b.locate(k)
	for i := range bloomHashes {
		bit := (bits >> (9 * i)) & 511
		if blk[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
	}
	return true
}

// execFilter is the set of execution ids seen in Entities, for the
// dangling-index check (SPEC §9): a filter of fixed size, so a false
// match (see the sizes above) can only hide a dangling-index warning,
// never change a disposition. It is not safe for concurrent use.
type execFilter struct{ f bloom }

func newExecFilter(bytes int) *execFilter { return &execFilter{newBloom(bytes)} }

// AddRow adds the execution ids of an Entities row (both, when its
// property and its RowKey differ: an index naming either is not
// dangling).
func (s *execFilter) AddRow(row transform.Row) {
	prop, fromKey := transform.ExecutionIDs(row)
	for _, id := range []string{prop, fromKey} {
		if id != "" {
			s.f.add(transform.BlobKey(id))
		}
	}
}

// Has reports whether the execution id may have been added; false is
// certain.
func (s *execFilter) Has(id string) bool { return s.f.has(transform.BlobKey(id)) }

// idSet finds doc id collisions (SPEC §10) exactly, as transform.IDSet
// does, in memory bounded by keySet.
type idSet struct{ keys *keySet }

// Check is transform.IDSet.Check: a doc outcome whose container, scope
// and id an earlier outcome took comes back a collision dead letter. It
// fails when the runs on disk cannot be written or read; the set is then
// unusable.
func (s idSet) Check(o transform.Outcome) (transform.Outcome, error) {
	if o.Disposition != transform.DispositionDoc {
		return o, nil
	}
	added, err := s.keys.Add(transform.IDKey(o.Container, o.Scope, o.ID))
	if err != nil {
		return o, fmt.Errorf("keeping the doc ids that find collisions: %w", err)
	}
	if !added {
		return transform.Collide(o), nil
	}
	return o, nil
}

// keySet is an exact set of 16-byte keys (uniform hashes) whose memory
// does not grow with the keys: it holds up to memKeys of them in memory,
// writes them out as a sorted run when full, and merges the runs so that
// each is more than twice the size of the next (at most log₂(n/memKeys)+1
// runs). A filter of fixed size over every key sends a lookup to the
// runs only when the key may be there; a lookup reads one block per run.
// The runs go into a directory that mkdir makes at the first spill;
// Close removes it. It is not safe for concurrent use.
type keySet struct {
	mkdir   func() (string, error)
	dir     string
	memKeys int
	mem     map[[16]byte]struct{}
	filter  bloom
	runs    []*keyRun
	seq     int
	sorted  [][16]byte // spill's buffer
	block   []byte     // a lookup's buffer
	// diskLookups counts the lookups the filter let through to the runs.
	diskLookups int64
}

// keyRun is one sorted run on disk, with the first key of each block.
type keyRun struct {
	f     *os.File
	n     int
	index [][16]byte
}

func newKeySet(memKeys, filterBytes int, mkdir func() (string, error)) *keySet {
	return &keySet{mkdir: mkdir, memKeys: max(1, memKeys), mem: make(map[[16]byte]struct{}, memKeys),
		filter: newBloom(filterBytes), block: make([]byte, runBlockKeys*16)}
}

// Add adds k and reports whether it was new. It returns an error when a
// run cannot be written or read.
func (s *keySet) Add(k [16]byte) (bool, error) {
	if _, ok := s.mem[k]; ok {
		return false, nil
	}
	if len(s.runs) > 0 && s.filter.has(k) {
		s.diskLookups++
		found, err := s.onDisk(k)
		if err != nil || found {
			return false, err
		}
	}
	s.mem[k] = struct{}{}
	s.filter.add(k)
	if len(s.mem) >= s.memKeys {
		return true, s.spill()
	}
	return true, nil
}

// Len is the number of keys in the set.
func (s *keySet) Len() int {
	n := len(s.mem)
	for _, r := range s.runs {
		n += r.n
	}
	return n
}

// onDisk reports whether a run holds k.
func (s *keySet) onDisk(k [16]byte) (bool, error) {
	for _, r := range s.runs {
		b := sort.Search(len(r.index), func(i int) bool { return bytes.Compare(r.index[i][:], k[:]) > 0 }) - 1
		if b < 0 {
			continue
		}
		n := min(runBlockKeys, r.n-b*runBlockKeys)
		buf := s.block[:n*16]
		if _, err := r.f.ReadAt(buf, int64(b)*runBlockKeys*16); err != nil {
			return false, fmt.Errorf("read %s: %w", r.f.Name(), err)
		}
		i := sort.Search(n, func(i int) bool { return bytes.Compare(buf[i*16:i*16+16], k[:]) >= 0 })
		if i < n && bytes.Equal(buf[i*16:i*16+16], k[:]) {
			return true, nil
		}
	}
	return false, nil
}

// spill writes the keys in memory out as a run and merges runs.
func (s *keySet) spill() error {
	if s.dir == "" {
		dir, err := s.mkdir()
		if err != nil {
			return err
		}
		s.dir = dir
	}
	s.sorted = s.sorted[:0]
	for k := range s.mem {
		s.sorted = append(s.sorted, k)
	}
	slices.SortFunc(s.sorted, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	r, err := s.writeRun(func(yield func([16]byte) error) error {
		for _, k := range s.sorted {
			if err := yield(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	clear(s.mem)
	s.runs = append(s.runs, r)
	for len(s.runs) >= 2 && 2*s.runs[len(s.runs)-1].n > s.runs[len(s.runs)-2].n {
		a, b := s.runs[len(s.runs)-2], s.runs[len(s.runs)-1]
		m, err := s.merge(a, b)
		if err != nil {
			return err
		}
		s.runs = append(s.runs[:len(s.runs)-2], m)
	}
	return nil
}

// writeRun writes the keys keys yields, in ascending order, as a new run.
func (s *keySet) writeRun(keys func(yield func([16]byte) error) error) (*keyRun, error) {
	s.seq++
	f, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("run-%d", s.seq)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	r := &keyRun{f: f}
	w := bufio.NewWriterSize(f, 64<<10)
	err = keys(func(k [16]byte) error {
		if r.n%runBlockKeys == 0 {
			r.index = append(r.index, k)
		}
		r.n++
		_, err := w.Write(k[:])
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		r.remove()
		return nil, fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return r, nil
}

// merge merges runs a and b into a new run and removes them.
func (s *keySet) merge(a, b *keyRun) (*keyRun, error) {
	ra, rb := newRunReader(a), newRunReader(b)
	m, err := s.writeRun(func(yield func([16]byte) error) error {
		ka, okA, err := ra.next()
		if err != nil {
			return err
		}
		kb, okB, err := rb.next()
		if err != nil {
			return err
		}
		for okA || okB {
			if okA && (!okB || bytes.Compare(ka[:], kb[:]) < 0) {
				if err := yield(ka); err != nil {
					return err
				}
				if ka, okA, err = ra.next(); err != nil {
					return err
				}
				continue
			}
			if err := yield(kb); err != nil {
				return err
			}
			if kb, okB, err = rb.next(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.remove()
	b.remove()
	return m, nil
}

// runReader reads a run's keys in order.
type runReader struct {
	r    *bufio.Reader
	name string
}

func newRunReader(r *keyRun) *runReader {
	return &runReader{r: bufio.NewReaderSize(io.NewSectionReader(r.f, 0, int64(r.n)*16), 64<<10), name: r.f.Name()}
}

func (rr *runReader) next() (k [16]byte, ok bool, err error) {
	if _, err := io.ReadFull(rr.r, k[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return k, false, nil
		}
		return k, false, fmt.Errorf("read %s: %w", rr.name, err)
	}
	return k, true, nil
}

func (r *keyRun) remove() {
	_ = r.f.Close()
	_ = os.Remove(r.f.Name())
}

// Close removes the runs and their directory.
func (s *keySet) Close() error {
	for _, r := range s.runs {
		r.remove()
	}
	s.runs = nil
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}
