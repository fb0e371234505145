package verify

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
)

// DocsFile is the file in the state directory where a full verify lists
// every doc it read, by place: its id, the row its _migration names and
// when its ttl ends. `verify --since` takes from it what a change feed
// cannot say: which docs existed (so that a doc in the feed is known to
// be new or changed) and which are gone (a deletion is in no feed): it
// counts the docs of each scope now and reads again only the scopes
// whose count is not what DocsFile and the changes since explain
// (since.go).
//
// The file is sections, one per container and scope in place order,
// each a run of blocks of up to docsBlockEntries entries compressed with
// DEFLATE, then an index in JSON (each section's container, scope and
// count; each block's offset, length, first id, count and earliest
// expiry), then the index's offset (8 bytes, big-endian) and docsMagic.
// It is written through a temporary file and renamed when the verify
// ends, as RecordFile is.
const DocsFile = "verify-docs"

const (
	docsMagic        = "BFVDOCS1"
	docsVersion      = 1
	docsBlockEntries = 4096
	// neverExpires is the expiry of a doc without a ttl.
	neverExpires = math.MaxInt64
)

// docsEntry is one doc of DocsFile.
type docsEntry struct {
	id     string
	hasMig bool
	// table, partitionKey, rowKey: the row its _migration names.
	table, partitionKey, rowKey string
	// expiry is when its ttl ends (Unix seconds: _ts + ttl), or
	// neverExpires.
	expiry int64
}

type docsIndex struct {
	Version  int           `json:"version"`
	Started  time.Time     `json:"started"`
	Sections []docsSection `json:"sections"`
}

type docsSection struct {
	Container string      `json:"container"`
	Scope     string      `json:"scope"`
	Docs      int         `json:"docs"`
	Blocks    []docsBlock `json:"blocks"`
}

type docsBlock struct {
	Offset    int64  `json:"offset"`
	Length    int64  `json:"length"`
	First     string `json:"first"`
	Docs      int    `json:"docs"`
	MinExpiry int64  `json:"minExpiry"`
}

// docsWriter writes DocsFile as the join goes through the docs in place
// order, into a temporary file of its own beside it (two verifies on one
// state directory never write the same one).
type docsWriter struct {
	path  string
	tmp   string
	f     *os.File
	w     *bufio.Writer
	off   int64
	index docsIndex
	block bytes.Buffer
	rec   recWriter
	cur   docsBlock
	zw    *flate.Writer
}

// newDocsWriter creates path's temporary file; commit renames it.
func newDocsWriter(path string, started time.Time) (*docsWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	zw, _ := flate.NewWriter(nil, flate.BestSpeed)
	return &docsWriter{path: path, tmp: f.Name(), f: f, w: bufio.NewWriterSize(f, 256<<10), index: docsIndex{Version: docsVersion, Started: started.UTC()}, zw: zw}, nil
}

// add adds the doc a; docs come in place order.
func (d *docsWriter) add(a *actualDoc) error {
	n := len(d.index.Sections)
	if n == 0 || d.index.Sections[n-1].Container != a.ref.Container || d.index.Sections[n-1].Scope != a.ref.Scope {
		if err := d.flush(); err != nil {
			return err
		}
		d.index.Sections = append(d.index.Sections, docsSection{Container: a.ref.Container, Scope: a.ref.Scope, Blocks: []docsBlock{}})
		n++
	}
	if d.cur.Docs == docsBlockEntries {
		if err := d.flush(); err != nil {
			return err
		}
	}
	if d.cur.Docs == 0 {
		d.cur = docsBlock{First: a.ref.ID, MinExpiry: neverExpires}
	}
	d.cur.Docs++
	d.cur.MinExpiry = min(d.cur.MinExpiry, a.expiry)
	d.index.Sections[n-1].Docs++
	d.rec.reset()
	d.rec.str(a.ref.ID)
	d.rec.bool(a.hasMig)
	d.rec.str(a.ref.Table)
	d.rec.str(a.ref.PartitionKey)
	d.rec.str(a.ref.RowKey)
	d.rec.varint(a.expiry)
	d.block.Write(binary.AppendUvarint(nil, uint64(len(d.rec.b))))
	d.block.Write(d.rec.b)
	return nil
}

// flush writes the block in hand.
func (d *docsWriter) flush() error {
	if d.cur.Docs == 0 {
		return nil
	}
	var z bytes.Buffer
	d.zw.Reset(&z)
	if _, err := d.zw.Write(d.block.Bytes()); err != nil {
		return err
	}
	if err := d.zw.Close(); err != nil {
		return err
	}
	d.cur.Offset, d.cur.Length = d.off, int64(z.Len())
	if _, err := d.w.Write(z.Bytes()); err != nil {
		return err
	}
	d.off += d.cur.Length
	s := &d.index.Sections[len(d.index.Sections)-1]
	s.Blocks = append(s.Blocks, d.cur)
	d.cur = docsBlock{}
	d.block.Reset()
	return nil
}

// commit ends the file and renames it into place.
func (d *docsWriter) commit() error {
	if err := d.flush(); err != nil {
		return d.fail(err)
	}
	idx, err := json.Marshal(d.index)
	if err != nil {
		return d.fail(err)
	}
	tail := binary.BigEndian.AppendUint64(idx, uint64(d.off))
	tail = append(tail, docsMagic...)
	if _, err := d.w.Write(tail); err != nil {
		return d.fail(err)
	}
	if err := d.w.Flush(); err != nil {
		return d.fail(err)
	}
	if err := d.f.Sync(); err != nil {
		return d.fail(err)
	}
	if err := d.f.Close(); err != nil {
		return d.fail(err)
	}
	if err := os.Rename(d.tmp, d.path); err != nil {
		return d.fail(err)
	}
	return statedir.SyncDir(filepath.Dir(d.path))
}

// abort removes the temporary file.
func (d *docsWriter) abort() {
	_ = d.f.Close()
	_ = os.Remove(d.tmp)
}

func (d *docsWriter) fail(err error) error {
	d.abort()
	return fmt.Errorf("write %s: %w", d.path, err)
}

// docsFile is DocsFile open for reading.
type docsFile struct {
	path  string
	f     *os.File
	index docsIndex
}

// errDocsFile says DocsFile is not what a full verify wrote.
var errDocsFile = errors.New("is not a file of the docs a full verify read")

// openDocsFile opens path and reads its index.
func openDocsFile(path string) (*docsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	d := &docsFile{path: path, f: f}
	if err := d.readIndex(); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func (d *docsFile) readIndex() error {
	fi, err := d.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	tail := make([]byte, 8+len(docsMagic))
	if size < int64(len(tail)) {
		return fmt.Errorf("%s %w", d.path, errDocsFile)
	}
	if _, err := d.f.ReadAt(tail, size-int64(len(tail))); err != nil {
		return err
	}
	if string(tail[8:]) != docsMagic {
		return fmt.Errorf("%s %w", d.path, errDocsFile)
	}
	off := int64(binary.BigEndian.Uint64(tail))
	if off < 0 || off > size-int64(len(tail)) {
		return fmt.Errorf("%s %w", d.path, errDocsFile)
	}
	idx := make([]byte, size-int64(len(tail))-off)
	if _, err := d.f.ReadAt(idx, off); err != nil {
		return err
	}
	if err := json.Unmarshal(idx, &d.index); err != nil || d.index.Version != docsVersion {
		return fmt.Errorf("%s %w", d.path, errDocsFile)
	}
	return nil
}

func (d *docsFile) Close() error { return d.f.Close() }

// section returns the section of container and scope, nil when the full
// verify read no doc there.
func (d *docsFile) section(container, scope string) *docsSection {
	ss := d.index.Sections
	i := sort.Search(len(ss), func(i int) bool { return comparePlace(ss[i].Container, ss[i].Scope, "", container, scope, "") >= 0 })
	if i < len(ss) && ss[i].Container == container && ss[i].Scope == scope {
		return &ss[i]
	}
	return nil
}

// block reads the entries of block b.
func (d *docsFile) block(b docsBlock) ([]docsEntry, error) {
	z := make([]byte, b.Length)
	if _, err := d.f.ReadAt(z, b.Offset); err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	out := make([]docsEntry, 0, b.Docs)
	for len(raw) > 0 {
		n, k := binary.Uvarint(raw)
		if k <= 0 || uint64(len(raw)-k) < n {
			return nil, fmt.Errorf("%s %w", d.path, errDocsFile)
		}
		r := recReader{b: raw[k : k+int(n)]}
		e := docsEntry{id: r.str(), hasMig: r.bool(), table: r.str(), partitionKey: r.str(), rowKey: r.str(), expiry: r.varint()}
		if r.err != nil {
			return nil, fmt.Errorf("%s %w", d.path, errDocsFile)
		}
		out = append(out, e)
		raw = raw[k+int(n):]
	}
	return out, nil
}

// cursor goes through the entries of one section in order.
type docsCursor struct {
	d       *docsFile
	s       *docsSection
	block   int
	entries []docsEntry
	i       int
}

func (d *docsFile) cursor(s *docsSection) *docsCursor { return &docsCursor{d: d, s: s, block: -1} }

// seek moves to the first entry whose id is at or after id (in the
// escaped order of places) and returns it; ok is false past the end.
// Calls must come with ids in ascending order.
func (c *docsCursor) seek(id string) (docsEntry, bool, error) {
	if c.s == nil {
		return docsEntry{}, false, nil
	}
	for {
		// Skip whole blocks whose successor starts at or before id.
		for c.block+1 < len(c.s.Blocks) && compareID(c.s.Blocks[c.block+1].First, id) <= 0 {
			c.block++
			c.entries = nil
		}
		if c.block < 0 {
			c.block = 0
		}
		if c.block >= len(c.s.Blocks) {
			return docsEntry{}, false, nil
		}
		if c.entries == nil {
			es, err := c.d.block(c.s.Blocks[c.block])
			if err != nil {
				return docsEntry{}, false, err
			}
			c.entries, c.i = es, 0
		}
		for c.i < len(c.entries) && compareID(c.entries[c.i].id, id) < 0 {
			c.i++
		}
		if c.i < len(c.entries) {
			return c.entries[c.i], true, nil
		}
		if c.block+1 >= len(c.s.Blocks) {
			return docsEntry{}, false, nil
		}
		c.block++
		c.entries = nil
	}
}

// compareID compares two ids in the order of places (escaped keys).
func compareID(a, b string) int {
	var x, y recWriter
	x.key(a)
	y.key(b)
	return bytes.Compare(x.b, y.b)
}

// comparePlace compares two places in the order of the join.
func comparePlace(c1, s1, i1, c2, s2, i2 string) int {
	var x, y recWriter
	x.key(c1)
	x.key(s1)
	x.key(i1)
	y.key(c2)
	y.key(s2)
	y.key(i2)
	return bytes.Compare(x.b, y.b)
}
