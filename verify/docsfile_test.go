package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A full verify lists every doc it read in DocsFile, by place, with the
// row its _migration names and its expiry; a cursor finds each of them
// and nothing else. A partial check writes none.
func TestDocsFile(t *testing.T) {
	w := newTestWorld(t, 30)
	w.spoil(t)
	dir := t.TempDir()
	v := &Verifier{Rows: w.tables, Docs: w.docs.Reader(), Blobs: w.blobs, Now: func() time.Time { return worldNow }}
	r, err := v.Run(context.Background(), Options{Transform: w.opts, DocsDir: dir, sizes: tiny})
	must(t, err)
	if !r.docsWritten {
		t.Fatal("no DocsFile written")
	}
	d, err := openDocsFile(filepath.Join(dir, DocsFile))
	must(t, err)
	defer d.Close()
	if !d.index.Started.Equal(worldNow) {
		t.Errorf("started %s, want %s", d.index.Started, worldNow)
	}
	snap := w.docs.Snapshot()
	listed := 0
	for _, s := range d.index.Sections {
		listed += s.Docs
	}
	if listed != len(snap) {
		t.Errorf("%d docs listed, %d in the database", listed, len(snap))
	}
	for k := range snap {
		// Snapshot keys are container/scope/id.
		p := strings.SplitN(k, "/", 3)
		e, ok, err := d.cursor(d.section(p[0], p[1])).seek(p[2])
		must(t, err)
		if !ok || e.id != p[2] {
			t.Errorf("%s: not found (%v, %q)", k, ok, e.id)
		}
		if e.hasMig && e.table == "" {
			t.Errorf("%s: no row", k)
		}
	}
	if e, ok, err := d.cursor(d.section("executions", "no-such-scope")).seek("x"); ok || err != nil {
		t.Errorf("a scope that had no doc: %v %v %v", e, ok, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, DocsFile+".tmp-*")); len(left) > 0 {
		t.Errorf("the temporary file is left: %q", left)
	}
	partial := t.TempDir()
	_, err = v.Run(context.Background(), Options{Transform: w.opts, DocsDir: partial, Sample: 0.5})
	must(t, err)
	if _, err := os.Stat(filepath.Join(partial, DocsFile)); err == nil {
		t.Error("a partial check wrote DocsFile")
	}
}
