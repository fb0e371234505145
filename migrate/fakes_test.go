package migrate

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
)

// The services are the shared in-memory fakes (internal/fakes), checked
// against the real adapters by their conformance suite; the Azure adapters
// themselves are tested against the emulators, and so is the whole command
// (cmd/run_test.go).

// fixtureTables returns the fixture tables in a fake Table Storage that
// serves pageSize rows a page.
func fixtureTables(t testing.TB, pageSize int) *fakes.Tables {
	t.Helper()
	tables := fakes.NewTables()
	tables.PageSize = pageSize
	for _, table := range fixtures.Tables() {
		rows, err := fixtures.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		tables.Add(table, rows...)
	}
	return tables
}

// fixtureBlobs returns the fixture blobs in a fake blob container.
func fixtureBlobs(t testing.TB) *fakes.Blobs {
	t.Helper()
	b := fakes.NewBlobs()
	bs, err := fixtures.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, blob := range bs {
		if err := b.Upload(context.Background(), blob.Path, blob.Data); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// recordingProgress records what the pipeline reports.
type recordingProgress struct {
	mu       sync.Mutex
	counting []string
	totals   map[string]int64
	read     map[string]int64
	advanced map[string]int64
	outcomes Outcome
	done     []string
	messages []string
}

func newRecordingProgress() *recordingProgress {
	return &recordingProgress{totals: map[string]int64{}, read: map[string]int64{}, advanced: map[string]int64{}}
}

func (p *recordingProgress) Counting(tables []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counting = append(p.counting, tables...)
}

func (p *recordingProgress) Read(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read[table] += n
}

func (p *recordingProgress) Outcome(_ string, o Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcomes.Written += o.Written
	p.outcomes.DeadLetters += o.DeadLetters
	p.outcomes.Conflicts += o.Conflicts
}

func (p *recordingProgress) Total(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals[table] = n
}

func (p *recordingProgress) Resumed(table string, n int64) { p.Advance(table, n) }

func (p *recordingProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanced[table] += n
}

func (p *recordingProgress) TableDone(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = append(p.done, table)
}

func (p *recordingProgress) Message(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, msg)
}

func (p *recordingProgress) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.messages, "\n")
}
