package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
	"github.com/bifrost/bifrost-migrate/transform"
)

// RangeRows is how many rows a key range holds at most once a read of
// the whole table has learned where to split it (KeySampler). A scan
// that filters on Timestamp has the service read every row of each
// range it asks for, each range at the same time as the others: with
// ranges of at most RangeRows rows, a pass takes about the time the
// service needs for RangeRows rows, whatever the size of the table.
const RangeRows = 50_000

// RangesFile, in the state directory, holds the split keys a full verify
// learned of each table (Ranges). The passes (replay, replay --follow,
// verify --since) read it; without it they split each table at Splits
// only.
const RangesFile = "ranges.json"

// Ranges are the split keys learned of each table (KeySampler), by the
// table's name without the prefix, each table's in ascending key order.
type Ranges map[string][]Key

// Splits is where a scan of table splits it into key ranges: Bifrost's
// own splits (Splits) and the keys learned of it, in key order, each
// once. Any set of split keys covers every key, so a learned key that
// is out of date (rows added or deleted since) only makes its ranges
// larger or smaller, never leaves a row out.
func (r Ranges) Splits(table string) []Key {
	out := append(Splits(table), r[table]...)
	slices.SortFunc(out, compareKeys)
	return slices.CompactFunc(out, func(a, b Key) bool { return compareKeys(a, b) == 0 })
}

// KeySampler learns where to split tables as their rows pass by in key
// order: the key of every every-th row of a table (after the first) is
// a split, so that each range between two splits holds every rows when
// the sampler saw them all. It is not safe for concurrent use.
type KeySampler struct {
	every   int
	seen    map[string]int
	learned Ranges
}

// NewKeySampler returns a sampler that splits every every rows
// (RangeRows in the commands; tests make it small).
func NewKeySampler(every int) *KeySampler {
	return &KeySampler{every: max(every, 1), seen: map[string]int{}, learned: Ranges{}}
}

// Add passes rows of table, the next in key order after those passed
// before.
func (s *KeySampler) Add(table string, rows []transform.Row) {
	n := s.seen[table]
	for _, row := range rows {
		if n > 0 && n%s.every == 0 {
			s.learned[table] = append(s.learned[table], Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey})
		}
		n++
	}
	s.seen[table] = n
}

// Ranges are the splits learned of every table passed, also those
// without any (fewer rows than every): a table that shrank forgets its
// older splits when saved.
func (s *KeySampler) Ranges() Ranges {
	out := Ranges{}
	for table := range s.seen {
		out[table] = slices.Clone(s.learned[table])
	}
	return out
}

// rangesFile is RangesFile's content.
type rangesFile struct {
	Version int                    `json:"version"`
	Tables  map[string][]rangesKey `json:"tables"`
}

type rangesKey struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

const rangesVersion = 1

// errRangesFile says what to do with a RangesFile that cannot be used.
var errRangesFile = errors.New("is not a file of key ranges this version writes: remove it (the passes then split each table as before, and the next full verify writes it again)")

// LoadRanges reads RangesFile in dir: nil and no error when there is
// none; an error naming the file when it is not one this version writes
// or its keys are out of order.
func LoadRanges(dir string) (Ranges, error) {
	data, err := statedir.ReadFile(dir, RangesFile)
	if err != nil || data == nil {
		return nil, err
	}
	unusable := fmt.Errorf("%s %w", filepath.Join(dir, RangesFile), errRangesFile)
	var f rangesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || f.Version != rangesVersion {
		return nil, unusable
	}
	out := Ranges{}
	for table, keys := range f.Tables {
		out[table] = make([]Key, 0, len(keys))
		for i, k := range keys {
			key := Key(k)
			if i > 0 && compareKeys(out[table][i-1], key) >= 0 {
				return nil, unusable
			}
			out[table] = append(out[table], key)
		}
	}
	return out, nil
}

// SaveRanges writes learned into RangesFile in dir, whole and
// atomically, keeping the tables learned leaves out as the file had
// them (a verify of some tables learns only theirs).
func SaveRanges(dir string, learned Ranges) error {
	old, err := LoadRanges(dir)
	if err != nil {
		return err
	}
	f := rangesFile{Version: rangesVersion, Tables: map[string][]rangesKey{}}
	for _, r := range []Ranges{old, learned} {
		for table, keys := range r {
			f.Tables[table] = make([]rangesKey, len(keys))
			for i, k := range keys {
				f.Tables[table][i] = rangesKey(k)
			}
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return statedir.WriteFile(dir, RangesFile, append(data, '\n'))
}

// Span is the span of a scan of table that q selects, split at Splits;
// Large when a full read learned splits of it (more than RangeRows rows).
func (r Ranges) Span(table string, q Query) Span {
	return Span{Table: table, Query: q, Splits: r.Splits(table), Large: len(r[table]) > 0}
}
