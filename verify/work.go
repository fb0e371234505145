package verify

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/bifrost/bifrost-migrate/internal/spill"
)

// sizes bound what verify holds in memory, whatever the size of the
// source (SPEC §12, "Flat at any size"): each sorter's records, and the
// sets of ids. Zero fields take the defaults; tests make them tiny, and
// the report must not change.
type sizes struct {
	// sortBytes is what each sorter holds in memory before it writes a
	// sorted run (spill.Sorter). About ten sorters exist in a run, at
	// most six of them filling at once.
	sortBytes int
	// idMemoryKeys and idFilterBytes size the set of doc ids that finds
	// collisions, as run's (spill.KeySet).
	idMemoryKeys, idFilterBytes int
	// execMemoryKeys and execFilterBytes size the set of execution ids
	// of the access-pattern check (the first row of an id keeps it).
	execMemoryKeys, execFilterBytes int
}

// The default sizes: about 4 MiB of records per sorter, and run's sizes
// for the sets (migrate/keyset.go).
const (
	defaultSortBytes       = 512 << 10
	defaultIDMemoryKeys    = 1 << 14
	defaultIDFilterBytes   = 1 << 20
	defaultExecMemoryKeys  = 1 << 14
	defaultExecFilterBytes = 1 << 20
)

func (z sizes) withDefaults() sizes {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&z.sortBytes, defaultSortBytes)
	def(&z.idMemoryKeys, defaultIDMemoryKeys)
	def(&z.idFilterBytes, defaultIDFilterBytes)
	def(&z.execMemoryKeys, defaultExecMemoryKeys)
	def(&z.execFilterBytes, defaultExecFilterBytes)
	return z
}

// work is where one Run keeps its sorters' and sets' runs: a directory
// per sorter under base (Options.TempDir, or a temporary directory made
// at the first spill), all removed by close.
type work struct {
	z    sizes
	temp string // Options.TempDir
	// mu guards base and closers: sorters on both sides spill at once.
	mu      sync.Mutex
	base    string // "" until made
	closers []func() error
}

func newWork(tempDir string, z sizes) *work { return &work{z: z.withDefaults(), temp: tempDir} }

// mkdir returns the function that makes the directory of name's runs.
func (w *work) mkdir(name string) func() (string, error) {
	return func() (string, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.base == "" {
			if w.temp == "" {
				dir, err := os.MkdirTemp("", "bifrost-migrate-verify-")
				if err != nil {
					return "", err
				}
				w.base = dir
			} else {
				if err := os.MkdirAll(w.temp, 0o700); err != nil {
					return "", err
				}
				w.base = w.temp
			}
		}
		dir := filepath.Join(w.base, name)
		return dir, os.Mkdir(dir, 0o700)
	}
}

// sorter returns a sorter whose runs go into the directory name.
func (w *work) sorter(name string) *spill.Sorter {
	s := spill.NewSorter(w.z.sortBytes, w.mkdir(name))
	w.mu.Lock()
	w.closers = append(w.closers, s.Close)
	w.mu.Unlock()
	return s
}

// keySet returns a set of keys whose runs go into the directory name.
func (w *work) keySet(name string, memKeys, filterBytes int) *spill.KeySet {
	s := spill.NewKeySet(memKeys, filterBytes, w.mkdir(name))
	w.mu.Lock()
	w.closers = append(w.closers, s.Close)
	w.mu.Unlock()
	return s
}

// close removes every run and the directories.
func (w *work) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, c := range w.closers {
		errs = append(errs, c())
	}
	w.closers = nil
	if w.base != "" {
		errs = append(errs, os.RemoveAll(w.base))
		w.base = ""
	}
	return errors.Join(errs...)
}

// stream is a sorter's records in order with one record of lookahead,
// kept in its own buffer; prev holds the record next returned last.
type stream struct {
	st        *spill.Stream
	cur, prev []byte
	ok        bool
	err       error
}

func newStream(s *spill.Sorter) *stream {
	st := &stream{st: s.Sorted()}
	st.advance()
	return st
}

func (s *stream) advance() {
	if s.err != nil {
		s.ok = false
		return
	}
	rec, ok, err := s.st.Next()
	s.cur, s.ok, s.err = append(s.cur[:0], rec...), ok, err
}

// group returns the first n keys of the current record ("" at the end).
func (s *stream) group(n int) []byte {
	if !s.ok {
		return nil
	}
	return s.cur[:keyLen(s.cur, n)]
}

// next returns the current record if its first n keys are g, and moves
// on; else nil. The record is valid until the next call.
func (s *stream) next(g []byte, n int) []byte {
	if !s.ok || !bytes.Equal(s.group(n), g) {
		return nil
	}
	// The record stays in its buffer, which the next record does not
	// take.
	s.cur, s.prev = s.prev, s.cur
	s.advance()
	return s.prev
}

// skipTo moves past the records whose first n keys come before g.
func (s *stream) skipTo(g []byte, n int) {
	for s.ok && bytes.Compare(s.group(n), g) < 0 {
		s.advance()
	}
}

// minGroup returns the smallest group of n keys among the streams' heads,
// copied into dst's array, and false when they are all at their end.
func minGroup(dst []byte, n int, ss ...*stream) ([]byte, bool) {
	var g []byte
	found := false
	for _, s := range ss {
		if !s.ok {
			continue
		}
		if h := s.group(n); !found || bytes.Compare(h, g) < 0 {
			g, found = h, true
		}
	}
	return append(dst[:0], g...), found
}

// firstErr is the first error among the streams.
func firstErr(ss ...*stream) error {
	for _, s := range ss {
		if s.err != nil {
			return s.err
		}
	}
	return nil
}
