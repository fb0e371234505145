package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bifrost/bifrost-migrate/transform"
)

// DeadLetter is one line of dead-letter.jsonl (SPEC §11). Row is the
// source row in the Table service's annotated JSON (transform.EncodeEntity,
// the format of fixtures/tables/*.jsonl), redacted with
// transform.RedactRow, so that a fixed row can be loaded again; its
// Timestamp and ETag are not included.
type DeadLetter struct {
	Table        string          `json:"table"`
	PartitionKey string          `json:"partitionKey"`
	RowKey       string          `json:"rowKey"`
	Reason       string          `json:"reason"`
	Row          json.RawMessage `json:"row"`
	// Doc names the doc of a reverse dead letter (Table and the keys are
	// then the row it would have written, or the doc's place when it has
	// none); the doc itself stays in Cosmos DB.
	Doc *DeadLetterDoc `json:"doc,omitempty"`
}

// DeadLetterDoc names a doc in Cosmos DB.
type DeadLetterDoc struct {
	Container string `json:"container"`
	Scope     string `json:"scope"`
	ID        string `json:"id"`
}

func newDeadLetter(row transform.Row, table, reason string) DeadLetter {
	return DeadLetter{
		Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Reason: reason,
		Row: transform.EncodeEntity(transform.RedactRow(row)),
	}
}

// deadLetterSink records dead letters. It is used by one goroutine.
type deadLetterSink interface {
	// Append records dls durably and returns the total length recorded
	// so far (bytes of the file).
	Append(dls []DeadLetter) (int64, error)
	Close() error
}

// fileSink appends to dead-letter.jsonl.
type fileSink struct {
	f    *os.File
	size int64
}

// openDeadLetters opens dir/dead-letter.jsonl for appending after
// truncating it to size, the length at the checkpoint resumed from (0 for
// a new run).
func openDeadLetters(dir string, size int64) (*fileSink, error) {
	f, err := os.OpenFile(filepath.Join(dir, DeadLetterFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if st.Size() < size {
		f.Close()
		return nil, fmt.Errorf("dead letters: %s is shorter (%d bytes) than the checkpoint says (%d); use --restart to start over", f.Name(), st.Size(), size)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if _, err := f.Seek(size, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	return &fileSink{f: f, size: size}, nil
}

func (s *fileSink) Append(dls []DeadLetter) (int64, error) {
	if len(dls) == 0 {
		return s.size, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, dl := range dls {
		if err := enc.Encode(dl); err != nil {
			return s.size, fmt.Errorf("dead letters: %w", err)
		}
	}
	n, err := s.f.Write(buf.Bytes())
	s.size += int64(n)
	if err != nil {
		return s.size, fmt.Errorf("dead letters: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return s.size, fmt.Errorf("dead letters: %w", err)
	}
	return s.size, nil
}

func (s *fileSink) Close() error { return s.f.Close() }

// maxListed is how many dead letters, collisions, sanitized ids a dry
// run lists; the counts are always complete.
const maxListed = 1000

// memorySink keeps the first maxListed dead letters of a dry run, without
// their rows.
type memorySink struct {
	list []DeadLetter
	n    int64
}

func (s *memorySink) Append(dls []DeadLetter) (int64, error) {
	for _, dl := range dls {
		s.n++
		if len(s.list) < maxListed {
			dl.Row = nil
			s.list = append(s.list, dl)
		}
	}
	return 0, nil
}

func (s *memorySink) Close() error { return nil }

// deadLetters is where replay and reverse record their dead letters: the
// file name in the state directory dir (replaced, or with keep added
// to), or for a dry run, which writes nothing, a list in memory.
func deadLetters(dir, name string, dryRun, keep bool) (deadLetterSink, error) {
	if dryRun {
		return &memorySink{}, nil
	}
	return openDeadLetterFile(dir, name, keep)
}

// openDeadLetterFile creates (or empties, unless keep) the dead-letter
// file name in dir.
func openDeadLetterFile(dir, name string, keep bool) (*fileSink, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if keep {
		flags = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(filepath.Join(dir, name), flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return &fileSink{f: f, size: size}, nil
}

// readDeadLetterKeys adds the keys of the dead letters in file (a
// dead-letter.jsonl of run or replay; none when it does not exist) to
// keys.
func readDeadLetterKeys(file string, keys map[[16]byte]struct{}) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the dead letters: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var dl DeadLetter
		if err := dec.Decode(&dl); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the dead letters in %s: %w", file, err)
		}
		keys[rowKeyHash(dl.Table, dl.PartitionKey, dl.RowKey)] = struct{}{}
	}
}
