package migrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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
	// Append records dls durably and returns how far the file reaches
	// now (its length, and for run's file its digest).
	Append(dls []DeadLetter) (deadLetterMark, error)
	Close() error
}

// deadLetterMark is how far a dead-letter file reaches: its length in
// bytes and, for run's dead-letter.jsonl, the SHA-256 of those bytes in
// hex (empty where no digest is kept).
type deadLetterMark struct {
	size int64
	sum  string
}

// fileSink appends to a dead-letter file. sum is the running SHA-256 of
// the file's bytes from its start (nil where no digest is kept: replay's
// and reverse's files, which no checkpoint records): it is fed as lines
// are written, so a checkpoint's digest costs no read of the file.
type fileSink struct {
	f    *os.File
	size int64
	sum  hash.Hash
}

// openDeadLetters opens dir/dead-letter.jsonl for appending, after
// checking that its first want.size bytes are those the checkpoint
// resumed from recorded (checkDeadLetters) and truncating it to them;
// want is zero for a new run. A file that does not match is left as it
// is.
func openDeadLetters(dir string, want deadLetterMark) (*fileSink, error) {
	f, err := os.OpenFile(filepath.Join(dir, DeadLetterFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	s := &fileSink{f: f, sum: sha256.New()}
	if err := s.resumeAt(want); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// resumeAt hashes the file's first want.size bytes, checks them against
// want, and truncates the file there, ready to append.
func (s *fileSink) resumeAt(want deadLetterMark) error {
	n, err := io.CopyN(s.sum, s.f, want.size)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("dead letters: %w", err)
	}
	s.size = n
	if err := checkDeadLetters(s.f.Name(), s.mark(), want); err != nil {
		return err
	}
	if err := s.f.Truncate(want.size); err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	if _, err := s.f.Seek(want.size, io.SeekStart); err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	return nil
}

// checkDeadLetters says whether a dead-letter file whose first bytes are
// have (up to want.size of them) is the one a checkpoint recorded as
// want: nil when it is, else the one-line refusal naming file. A
// checkpoint without a digest (saved by a build before digests,
// docs/design.md) is checked for its length only.
func checkDeadLetters(file string, have, want deadLetterMark) error {
	switch {
	case have.size < want.size:
		return fmt.Errorf("dead letters: %s is shorter (%d bytes) than the checkpoint says (%d); restore the file, or use --restart to start over", file, have.size, want.size)
	case want.sum != "" && have.sum != want.sum:
		return fmt.Errorf("dead letters: %s is not the file the checkpoint recorded (its first %d bytes differ); restore the file, or use --restart to start over", file, want.size)
	}
	return nil
}

// mark is how far the file reaches now.
func (s *fileSink) mark() deadLetterMark {
	m := deadLetterMark{size: s.size}
	if s.sum != nil {
		m.sum = hex.EncodeToString(s.sum.Sum(nil))
	}
	return m
}

func (s *fileSink) Append(dls []DeadLetter) (deadLetterMark, error) {
	if len(dls) == 0 {
		return s.mark(), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, dl := range dls {
		if err := enc.Encode(dl); err != nil {
			return s.mark(), fmt.Errorf("dead letters: %w", err)
		}
	}
	n, err := s.f.Write(buf.Bytes())
	s.size += int64(n)
	if s.sum != nil {
		s.sum.Write(buf.Bytes()[:n]) // never fails
	}
	if err != nil {
		return s.mark(), fmt.Errorf("dead letters: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return s.mark(), fmt.Errorf("dead letters: %w", err)
	}
	return s.mark(), nil
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

func (s *memorySink) Append(dls []DeadLetter) (deadLetterMark, error) {
	for _, dl := range dls {
		s.n++
		if len(s.list) < maxListed {
			dl.Row = nil
			s.list = append(s.list, dl)
		}
	}
	return deadLetterMark{}, nil
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
// file name in dir. It keeps no digest: no checkpoint records the file.
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
