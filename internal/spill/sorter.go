package spill

import (
	"bytes"
	"errors"
	"slices"
)

// Sorter sorts records by their bytes in memory that does not grow with
// their number: it holds about memBytes of them, writes them out as a
// sorted run when that is full (merging 64 runs of a size into one of the
// next), and gives them all back in ascending order (Sorted) from its
// runs and what is left in memory, merged. Records added in ascending
// order are neither sorted nor merged: while each comes no less than the
// one before, a full memory extends one run (verify's rows by their
// keys, which the tables give in key order). Equal records come back as
// many times as they were added. It is not safe for concurrent use.
type Sorter struct {
	runs     runSet
	memBytes int
	arena    []byte   // the records in memory, one after the other
	ends     []uint32 // where each ends in arena
	n        int      // records added
	sorted   bool     // Sorted was called: no more Add
	// inOrder: every record came no less than the one before.
	inOrder bool
}

// NewSorter returns an empty sorter that holds about memBytes of records
// in memory (a record and 4 bytes of bookkeeping count; a record larger
// than memBytes is kept alone) and puts its runs in the directory mkdir
// makes at the first spill (mkdir returns its path; Close removes it).
func NewSorter(memBytes int, mkdir func() (string, error)) *Sorter {
	return &Sorter{runs: runSet{mkdir: mkdir, fanIn: sorterFanIn, readBuf: sorterReadBuf, shared: true}, memBytes: max(1, memBytes), inOrder: true}
}

// sorterFanIn is how many runs of a size a Sorter merges into one, and
// sorterReadBuf the buffer it reads each through: a record is rewritten
// once per 64-fold growth of the data (once at 1 and at 5 million rows
// of verify, where 16 rewrote it twice at 5 million), and a merge reads
// 64 runs through 1 MiB of buffers, as 16 runs of 64 KiB did; the final
// merge reads at most 63 runs of each size.
const (
	sorterFanIn   = 64
	sorterReadBuf = 16 << 10
)

// ErrSorted is returned by Add after Sorted.
var ErrSorted = errors.New("spill: record added after Sorted")

// Add adds a copy of rec. It returns an error when a run cannot be
// written; the sorter is then unusable.
func (s *Sorter) Add(rec []byte) error {
	if s.sorted {
		return ErrSorted
	}
	if s.inOrder && s.n > 0 && bytes.Compare(rec, s.lastAdded()) < 0 {
		// Out of order: the run written so far is one to merge.
		s.inOrder = false
		if err := s.runs.seal(); err != nil {
			return err
		}
	}
	if len(s.ends) > 0 && len(s.arena)+len(rec)+4*(len(s.ends)+1) > s.memBytes {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena = append(s.arena, rec...)
	s.ends = append(s.ends, uint32(len(s.arena)))
	s.n++
	return nil
}

// lastAdded is the record added last, when there is one: memory always
// holds it, since Add spills before it adds the record that filled it.
func (s *Sorter) lastAdded() []byte {
	n := len(s.ends)
	start := uint32(0)
	if n > 1 {
		start = s.ends[n-2]
	}
	return s.arena[start:s.ends[n-1]]
}

// Len is the number of records added.
func (s *Sorter) Len() int { return s.n }

// Spilled reports whether records went to disk.
func (s *Sorter) Spilled() bool { return s.runs.dir != "" }

// memory returns the records in memory, sorted.
func (s *Sorter) memory() [][]byte {
	recs := make([][]byte, len(s.ends))
	start := uint32(0)
	for i, end := range s.ends {
		recs[i] = s.arena[start:end:end]
		start = end
	}
	if !s.inOrder {
		// Unstable: records that compare equal are the same bytes.
		slices.SortFunc(recs, bytes.Compare)
	}
	return recs
}

// spill writes the records in memory out, keeping the memory: after the
// open run while they come in order, else as a run of their own.
func (s *Sorter) spill() error {
	recs := s.memory()
	if s.inOrder {
		err := s.runs.extend(recs)
		s.arena, s.ends = s.arena[:0], s.ends[:0]
		return err
	}
	err := s.runs.write(func(yield func([]byte) error) error {
		for _, r := range recs {
			if err := yield(r); err != nil {
				return err
			}
		}
		return nil
	})
	s.arena, s.ends = s.arena[:0], s.ends[:0]
	return err
}

// Sorted returns every record added, in ascending order; Add may not be
// called after it. The stream reads the runs as it goes; a record it
// returns is valid until its next call.
func (s *Sorter) Sorted() *Stream {
	s.sorted = true
	if err := s.runs.seal(); err != nil {
		return &Stream{err: err}
	}
	srcs := make([]source, 0, len(s.runs.runs)+1)
	for _, r := range s.runs.runs {
		srcs = append(srcs, newRunReader(r, s.runs.readBuf))
	}
	srcs = append(srcs, &memSource{recs: s.memory()})
	return &Stream{m: newMerger(srcs)}
}

// Close removes the runs and their directory, and drops the records in
// memory.
func (s *Sorter) Close() error {
	s.arena, s.ends = nil, nil
	return s.runs.close()
}

// Stream is the records of a Sorter in ascending order.
type Stream struct {
	m   *merger
	err error // the open run could not be written out
}

// Next returns the next record, valid until the next call, and false at
// the end. It returns an error when a run cannot be written out or read.
func (st *Stream) Next() ([]byte, bool, error) {
	if st.err != nil {
		return nil, false, st.err
	}
	return st.m.next()
}

// memSource is sorted records in memory as a source.
type memSource struct {
	recs [][]byte
	i    int
}

func (m *memSource) next() ([]byte, bool, error) {
	if m.i == len(m.recs) {
		return nil, false, nil
	}
	m.i++
	return m.recs[m.i-1], true, nil
}
