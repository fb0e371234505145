package spill

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func testKey(i int) [16]byte {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	var k [16]byte
	copy(k[:], sum[:])
	return k
}

// runsDir returns a mkdir for a directory in the test's temporary
// directory, and how many times it was called.
func runsDir(t *testing.T) (dir string, mkdir func() (string, error), made *int) {
	dir = filepath.Join(t.TempDir(), "runs")
	made = new(int)
	return dir, func() (string, error) { *made++; return dir, os.Mkdir(dir, 0o700) }, made
}

// A KeySet is exact however few keys it holds in memory and however
// often its filter lets a lookup through: every key added twice is found
// the second time, in memory or in a run, and no other key is; its runs
// stay few; Close removes them.
func TestKeySetSpills(t *testing.T) {
	dir, mkdir, made := runsDir(t)
	s := NewKeySet(7, 64, mkdir)
	const n = 5000
	for i := range n {
		if added, err := s.Add(testKey(i)); err != nil || !added {
			t.Fatalf("key %d: added %v, %v", i, added, err)
		}
		// Every key added before, once in a while: the latest, in memory,
		// and old ones, on disk.
		if i%13 == 0 {
			for _, j := range []int{i, i / 2, i / 7} {
				if added, err := s.Add(testKey(j)); err != nil || added {
					t.Fatalf("key %d again after %d: added %v, %v", j, i, added, err)
				}
			}
		}
	}
	for _, i := range []int{0, n / 3, n - 1, n, n + 1} {
		if has, err := s.Has(testKey(i)); err != nil || has != (i < n) {
			t.Errorf("Has key %d: %v, %v", i, has, err)
		}
	}
	if s.Len() != n || *made != 1 {
		t.Errorf("%d keys, want %d; directory made %d times", s.Len(), n, *made)
	}
	// A filter of 64 bytes lets nearly every lookup through: the runs
	// answered them, and there are at most log₂(n/7)+1 of them.
	if s.diskLookups < n/2 || len(s.runs.runs) > 11 {
		t.Errorf("%d lookups on disk, %d runs", s.diskLookups, len(s.runs.runs))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(s.runs.runs) {
		t.Errorf("%d files for %d runs (merged runs not removed)", len(entries), len(s.runs.runs))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runs left after Close: %v", err)
	}
}

// A KeySet that cannot write its runs says so, naming the file.
func TestKeySetSpillFails(t *testing.T) {
	s := NewKeySet(2, 64, func() (string, error) { return filepath.Join(t.TempDir(), "missing"), nil })
	if _, err := s.Add(testKey(1)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Add(testKey(2))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want one about the missing directory", err)
	}
}

// drain returns a copy of every record next gives until its end.
func drain(t *testing.T, next func() ([]byte, bool, error)) [][]byte {
	t.Helper()
	var got [][]byte
	for {
		rec, ok, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got = append(got, bytes.Clone(rec))
	}
}

// A Sorter gives back every record it was given (duplicates as many
// times), in ascending order, whether they fit in memory or went through
// runs on disk; its runs stay few and Close removes them.
func TestSorterSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var recs [][]byte
	for range 5000 {
		// Lengths from 0 to 36 bytes, many equal prefixes and duplicates.
		rec := fmt.Appendf(nil, "%0*d", r.IntN(6), r.IntN(300))
		recs = append(recs, append(rec, bytes.Repeat([]byte{byte(r.IntN(3))}, r.IntN(30))...))
	}
	for _, mem := range []int{1 << 30, 4096, 1} {
		t.Run(fmt.Sprint(mem), func(t *testing.T) {
			dir, mkdir, made := runsDir(t)
			s := NewSorter(mem, mkdir)
			for _, rec := range recs {
				if err := s.Add(rec); err != nil {
					t.Fatal(err)
				}
			}
			want := slices.Clone(recs)
			slices.SortFunc(want, bytes.Compare)
			got := drain(t, s.Sorted().Next)
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("%d records back, want %d, in order", len(got), len(want))
			}
			if err := s.Add([]byte("x")); !errors.Is(err, ErrSorted) {
				t.Errorf("Add after Sorted: %v", err)
			}
			if spilled := mem < 1<<30; s.Spilled() != spilled || *made > 1 {
				t.Errorf("spilled %v, directory made %d times", s.Spilled(), *made)
			}
			// At most 63 runs of each size: 1 record, 64, 4,096.
			if len(s.runs.runs) > (sorterFanIn-1)*3 {
				t.Errorf("%d runs for %d records", len(s.runs.runs), len(recs))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("runs left after Close: %v", err)
			}
		})
	}
}

// A Sorter that cannot write its runs says so.
func TestSorterSpillFails(t *testing.T) {
	s := NewSorter(8, func() (string, error) { return filepath.Join(t.TempDir(), "missing"), nil })
	if err := s.Add([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := s.Add([]byte("defgh")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want one about the missing directory", err)
	}
}

// A Sorter given its records in ascending order writes them once, into
// one run that is never merged, and gives them back as they came; once a
// record comes out of order, it sorts and merges as usual, and every
// record still comes back in order.
func TestSorterRecordsInOrder(t *testing.T) {
	var ordered [][]byte
	for i := range 5000 {
		// Keys in order, some of them twice, with long shared beginnings.
		rec := fmt.Appendf(nil, "table\x00\x01partition-%03d\x00\x01row-%05d", i/100, i)
		ordered = append(ordered, rec)
		if i%7 == 0 {
			ordered = append(ordered, rec)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	late := slices.Clone(ordered)
	for range 300 {
		// Ordered up to the middle, then 300 records from anywhere.
		late = append(late[:len(ordered)/2], append(late[len(ordered)/2:], ordered[r.IntN(len(ordered))])...)
	}
	// A memory of 1 byte spills at every record, each extending the
	// open run while they come in order.
	for _, tc := range []struct {
		name  string
		recs  [][]byte
		mem   int
		files int // run files written, merged ones included
	}{
		{"in order", ordered, 4096, 1},
		{"in order, a record in memory", ordered, 1, 1},
		{"out of order at the middle", late, 4096, -1},
		{"out of order at the middle, a record in memory", late, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, mkdir, _ := runsDir(t)
			s := NewSorter(tc.mem, mkdir)
			for _, rec := range tc.recs {
				if err := s.Add(rec); err != nil {
					t.Fatal(err)
				}
			}
			got := drain(t, s.Sorted().Next)
			want := slices.Clone(tc.recs)
			slices.SortFunc(want, bytes.Compare)
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("%d records back, want %d, in order", len(got), len(want))
			}
			if tc.files > 0 && (s.runs.seq != tc.files || len(s.runs.runs) != 1) {
				t.Errorf("%d run files written, %d runs left; want %d and 1", s.runs.seq, len(s.runs.runs), tc.files)
			}
			if tc.files < 0 && s.runs.seq < 2 {
				t.Errorf("%d run files written: the records out of order were not sorted into runs of their own", s.runs.seq)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sliceSource is sorted records in memory as a source, each returned as
// its own slice.
type sliceSource struct{ recs [][]byte }

func (s *sliceSource) next() ([]byte, bool, error) {
	if len(s.recs) == 0 {
		return nil, false, nil
	}
	rec := s.recs[0]
	s.recs = s.recs[1:]
	return rec, true, nil
}

// mergeSources returns k sorted sources of random records (some empty
// sources, empty records and records in several sources) and all their
// records, sorted.
func mergeSources(k, n int) ([][][]byte, [][]byte) {
	r := rand.New(rand.NewPCG(5, uint64(k)))
	srcs := make([][][]byte, k)
	var all [][]byte
	for i := range srcs {
		if i%5 == 3 {
			continue // an empty source
		}
		for range n {
			rec := fmt.Appendf(nil, "executions\x00\x01scope-%02d\x00\x01%0*d", r.IntN(20), r.IntN(4), r.IntN(1000))
			if r.IntN(50) == 0 {
				rec = []byte{}
			}
			srcs[i] = append(srcs[i], rec)
		}
		slices.SortFunc(srcs[i], bytes.Compare)
		all = append(all, srcs[i]...)
	}
	slices.SortFunc(all, bytes.Compare)
	return srcs, all
}

// The merger gives back every record of its sources in ascending order,
// for any number of sources, and nothing once they are all read.
func TestMergerMerges(t *testing.T) {
	for _, k := range []int{0, 1, 2, 3, 7, 64, 65} {
		srcs, want := mergeSources(k, 300)
		ss := make([]source, k)
		for i := range srcs {
			ss[i] = &sliceSource{srcs[i]}
		}
		m := newMerger(ss)
		got := drain(t, m.next)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("%d sources: %d records back, want %d, in order", k, len(got), len(want))
		}
		if _, ok, err := m.next(); ok || err != nil {
			t.Errorf("%d sources: a record or %v after the end", k, err)
		}
	}
}

func BenchmarkMerger(b *testing.B) {
	srcs, all := mergeSources(64, 20000)
	b.ResetTimer()
	for range b.N {
		ss := make([]source, len(srcs))
		for i := range srcs {
			ss[i] = &sliceSource{srcs[i]}
		}
		m := newMerger(ss)
		for {
			if _, ok, _ := m.next(); !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(all)), "ns/record")
}
