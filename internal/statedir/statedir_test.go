package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileReplacesWhole: WriteFile replaces a file whole and leaves
// no temporary file; ReadFile reads it back, and nothing for a file that
// is not there.
func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	if data, err := ReadFile(dir, "r.json"); data != nil || err != nil {
		t.Fatalf("ReadFile of a missing file: %q, %v; want nil, nil", data, err)
	}
	for _, want := range []string{"first, longer content\n", "second\n"} {
		if err := WriteFile(dir, "r.json", []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(dir, "r.json")
		if err != nil || string(got) != want {
			t.Fatalf("ReadFile: %q, %v; want %q", got, err, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want r.json alone", entries, err)
	}
	if err := WriteFile(filepath.Join(dir, "missing"), "r.json", nil); err == nil {
		t.Error("WriteFile into a missing directory: no error")
	}
}
