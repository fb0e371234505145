// Package spill keeps sets and sorted streams of records in memory that
// does not grow with their number (SPEC §11 for run, §12 for verify): a
// bounded number of records in memory, the rest in sorted runs on disk
// that are merged so that each run is more than twice the size of the
// next (at most log₂(n/m)+1 runs for n records, m in memory).
//
//   - KeySet is an exact set of 16-byte keys (uniform hashes), with a
//     filter of fixed size (Bloom) that spares almost every lookup the
//     disk: run's doc ids, which find collisions.
//   - Sorter sorts records of any length by their bytes and gives them
//     back in order, merged from its runs: verify's merge joins.
//
// The runs go into a directory that a function given by the caller makes
// at the first spill (in the state directory, or a temporary one); Close
// removes it. A run is a file of records, each its length (uvarint) then
// its bytes, in ascending order, with the first record of every
// runBlockRecords kept in memory so that a lookup reads one block; a
// Sorter's runs write each record as how many bytes it shares with the
// one before, then the length of the rest and the rest. It
// imports nothing of the project: run (package migrate) and verify both
// use it.
package spill

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// runBlockRecords is how many records a run's in-memory index skips: a
// lookup in a run of 16-byte keys reads one block of about 4 KiB.
const runBlockRecords = 256

// run is one sorted run on disk: its records, its size in bytes and the
// first record and offset of each block.
type run struct {
	f     *os.File
	n     int
	size  int64
	index []blockStart
	// shared: each record is written as how many bytes it shares with
	// the one before (uvarint), then the length of the rest (uvarint)
	// and the rest (runSet.shared).
	shared bool
}

type blockStart struct {
	first []byte
	off   int64
}

func (r *run) remove() {
	_ = r.f.Close()
	_ = os.Remove(r.f.Name())
}

// runSet is the runs of one KeySet or Sorter, in the order they were
// written, in a directory that mkdir makes at the first run. fanIn says
// how they are merged: 0 (a KeySet, whose lookups read every run) so
// that each run is more than twice the size of the next; F (a Sorter,
// which reads its runs once, at the end) F runs of a size into one of
// the next size, so that each record is written once per F-fold growth
// of the data (log_F(n/m) times) and at most F-1 runs of each size
// remain.
type runSet struct {
	mkdir func() (string, error)
	fanIn int
	// readBuf is the buffer each run is read through in a merge (0:
	// 64 KiB).
	readBuf int
	// shared writes each record of a run as what it does not share with
	// the one before (a Sorter's: sorted records share long beginnings,
	// their first keys); a KeySet's runs, which has reads by block, are
	// written whole.
	shared bool
	dir    string
	seq    int
	runs   []*run
	// open, when not nil, is the last run, still being written by extend.
	open *runWriter
}

// write writes the records that records yields, in ascending order, as a
// new run and merges runs by the set's rule.
func (s *runSet) write(records func(yield func([]byte) error) error) error {
	r, err := s.writeRun(records)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, r)
	for {
		k := s.mergeable()
		if k == 0 {
			return nil
		}
		tail := s.runs[len(s.runs)-k:]
		m, err := s.merge(tail)
		if err != nil {
			return err
		}
		s.runs = append(s.runs[:len(s.runs)-k], m)
	}
}

// mergeable returns how many runs at the end of the set to merge now (0:
// none). Runs are written in decreasing size, so the runs of one level
// are always the last ones.
func (s *runSet) mergeable() int {
	n := len(s.runs)
	if s.fanIn == 0 {
		if n >= 2 && 2*s.runs[n-1].n > s.runs[n-2].n {
			return 2
		}
		return 0
	}
	if n < s.fanIn {
		return 0
	}
	// The last fanIn runs are of one level when the first of them is
	// less than fanIn times the size of the last.
	if first, last := s.runs[n-s.fanIn].n, s.runs[n-1].n; first < s.fanIn*max(last, 1) {
		return s.fanIn
	}
	return 0
}

// writeRun writes the records records yields as a new run file.
func (s *runSet) writeRun(records func(yield func([]byte) error) error) (*run, error) {
	rw, err := s.create()
	if err != nil {
		return nil, err
	}
	err = records(rw.add)
	if err == nil {
		err = rw.w.Flush()
	}
	if err != nil {
		rw.r.remove()
		return nil, fmt.Errorf("write %s: %w", rw.r.f.Name(), err)
	}
	return rw.r, nil
}

// extend appends recs, in ascending order and none less than a record
// before them, to the open run, which it opens as the set's last run
// when there is none: a Sorter whose records come in order writes them
// once, into one run, never merged. The run is written through a buffer
// until seal.
func (s *runSet) extend(recs [][]byte) error {
	if s.open == nil {
		rw, err := s.create()
		if err != nil {
			return err
		}
		s.open = rw
		s.runs = append(s.runs, rw.r)
	}
	for _, rec := range recs {
		if err := s.open.add(rec); err != nil {
			return fmt.Errorf("write %s: %w", s.open.r.f.Name(), err)
		}
	}
	return nil
}

// seal writes out the open run's buffer: the run is then one like the
// others, and the next extend opens another.
func (s *runSet) seal() error {
	rw := s.open
	if rw == nil {
		return nil
	}
	s.open = nil
	if err := rw.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", rw.r.f.Name(), err)
	}
	return nil
}

// runWriter writes one run's records, in ascending order.
type runWriter struct {
	r    *run
	w    *bufio.Writer
	prev []byte // the record before, when the run is shared
	head [2 * binary.MaxVarintLen64]byte
}

// create makes a new run file, and the set's directory at the first.
func (s *runSet) create() (*runWriter, error) {
	if s.dir == "" {
		dir, err := s.mkdir()
		if err != nil {
			return nil, err
		}
		s.dir = dir
	}
	s.seq++
	f, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("run-%d", s.seq)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &runWriter{r: &run{f: f, shared: s.shared}, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// add writes rec after the run's records.
func (rw *runWriter) add(rec []byte) error {
	r := rw.r
	if r.n%runBlockRecords == 0 {
		r.index = append(r.index, blockStart{bytes.Clone(rec), r.size})
	}
	r.n++
	h, rest := 0, rec
	if r.shared {
		k := sharedLen(rw.prev, rec)
		h = binary.PutUvarint(rw.head[:], uint64(k))
		rest = rec[k:]
		rw.prev = append(rw.prev[:0], rec...)
	}
	h += binary.PutUvarint(rw.head[h:], uint64(len(rest)))
	r.size += int64(h + len(rest))
	if _, err := rw.w.Write(rw.head[:h]); err != nil {
		return err
	}
	_, err := rw.w.Write(rest)
	return err
}

// sharedLen is how many bytes a and b share at their beginnings.
func sharedLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// merge merges runs into a new run and removes them.
func (s *runSet) merge(runs []*run) (*run, error) {
	srcs := make([]source, len(runs))
	for i, r := range runs {
		srcs[i] = newRunReader(r, s.readBuf)
	}
	it := newMerger(srcs)
	m, err := s.writeRun(func(yield func([]byte) error) error {
		for {
			rec, ok, err := it.next()
			if err != nil || !ok {
				return err
			}
			if err := yield(rec); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		r.remove()
	}
	return m, nil
}

// has reports whether a run holds rec, reading one block per run. buf is
// the caller's buffer, grown as needed and returned.
func (s *runSet) has(rec, buf []byte) (bool, []byte, error) {
	for _, r := range s.runs {
		b := sort.Search(len(r.index), func(i int) bool { return bytes.Compare(r.index[i].first, rec) > 0 }) - 1
		if b < 0 {
			continue
		}
		end := r.size
		if b+1 < len(r.index) {
			end = r.index[b+1].off
		}
		n := int(end - r.index[b].off)
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := r.f.ReadAt(buf, r.index[b].off); err != nil {
			return false, buf, fmt.Errorf("read %s: %w", r.f.Name(), err)
		}
		for p := buf; len(p) > 0; {
			l, h := binary.Uvarint(p)
			if h <= 0 || uint64(len(p)-h) < l {
				return false, buf, fmt.Errorf("read %s: a record is cut short", r.f.Name())
			}
			switch c := bytes.Compare(p[h:h+int(l)], rec); {
			case c == 0:
				return true, buf, nil
			case c > 0:
				p = nil
			default:
				p = p[h+int(l):]
			}
		}
	}
	return false, buf, nil
}

// records is the number of records in the runs.
func (s *runSet) records() int {
	n := 0
	for _, r := range s.runs {
		n += r.n
	}
	return n
}

// close removes the runs and their directory.
func (s *runSet) close() error {
	s.open = nil
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

// source is an ordered stream of records: a run on disk, or records in
// memory. A record it returns is valid until its next call.
type source interface {
	next() (rec []byte, ok bool, err error)
}

// runReader reads a run's records in order.
type runReader struct {
	r    *bufio.Reader
	name string
	// buf holds the record read last; shared is the run's.
	buf    []byte
	shared bool
}

// newRunReader reads r through a buffer of size bytes (0: 64 KiB).
func newRunReader(r *run, size int) *runReader {
	if size <= 0 {
		size = 64 << 10
	}
	return &runReader{r: bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.size), size), name: r.f.Name(), shared: r.shared}
}

func (rr *runReader) next() ([]byte, bool, error) {
	l, err := binary.ReadUvarint(rr.r)
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	k := uint64(0) // the bytes shared with the record before, in buf
	if err == nil && rr.shared {
		k = l
		if l, err = binary.ReadUvarint(rr.r); errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && k > uint64(len(rr.buf)) {
			err = errors.New("a record shares more than the one before holds")
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", rr.name, err)
	}
	if n := k + l; uint64(cap(rr.buf)) < n {
		rr.buf = append(make([]byte, 0, n), rr.buf[:k]...)
	}
	rr.buf = rr.buf[:k+l]
	if _, err := io.ReadFull(rr.r, rr.buf[k:]); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", rr.name, err)
	}
	return rr.buf, true, nil
}

// merger merges sources into one ascending stream: a tree of losers
// over their heads, so that each record takes one comparison per level
// of the tree (log₂ of the sources), where a heap takes two. Equal
// records come in the order of the sources.
type merger struct {
	srcs  []source
	heads [][]byte
	done  []bool // the source has no head left
	// tree[0] is the source whose head is the smallest; tree[n], for n
	// from 1, the loser of the match at node n, whose children are 2n
	// and 2n+1, source i being the leaf len(srcs)+i.
	tree  []int
	begun bool
}

func newMerger(srcs []source) *merger {
	return &merger{srcs: srcs, heads: make([][]byte, len(srcs)), done: make([]bool, len(srcs))}
}

// less orders sources by their heads, a source without one last, equal
// heads by source.
func (m *merger) less(a, b int) bool {
	if m.done[a] || m.done[b] {
		return !m.done[a] || (m.done[b] && a < b)
	}
	if c := bytes.Compare(m.heads[a], m.heads[b]); c != 0 {
		return c < 0
	}
	return a < b
}

// advance reads the next head of source i.
func (m *merger) advance(i int) error {
	rec, ok, err := m.srcs[i].next()
	if err != nil {
		return err
	}
	m.heads[i], m.done[i] = rec, !ok
	return nil
}

// build plays the matches below node n and returns their winner.
func (m *merger) build(n int) int {
	k := len(m.srcs)
	if n >= k {
		return n - k
	}
	a, b := m.build(2*n), m.build(2*n+1)
	if m.less(b, a) {
		a, b = b, a
	}
	m.tree[n] = b
	return a
}

// next returns the smallest record left, valid until the next call.
func (m *merger) next() ([]byte, bool, error) {
	k := len(m.srcs)
	if k == 0 {
		return nil, false, nil
	}
	if !m.begun {
		m.begun = true
		for i := range m.srcs {
			if err := m.advance(i); err != nil {
				return nil, false, err
			}
		}
		m.tree = make([]int, k)
		m.tree[0] = m.build(1)
	} else {
		// The source of the record returned last plays its new head
		// against the losers on its way up.
		w := m.tree[0]
		if m.done[w] {
			return nil, false, nil // every source is read
		}
		if err := m.advance(w); err != nil {
			return nil, false, err
		}
		for n := (w + k) / 2; n >= 1; n /= 2 {
			if m.less(m.tree[n], w) {
				m.tree[n], w = w, m.tree[n]
			}
		}
		m.tree[0] = w
	}
	w := m.tree[0]
	if m.done[w] {
		return nil, false, nil
	}
	return m.heads[w], true, nil
}
