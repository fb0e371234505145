// Package statedir writes and reads the files the commands keep in their
// state directory (--state-dir): a file replaced whole and atomically
// (WriteFile), a record read back (ReadFile). It is a leaf: migrate and
// verify use it.
package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces dir/name with data through a temporary file in dir
// that is synced and renamed over it, then syncs dir: a reader, or a
// process that starts after a crash, finds the old file or the new one,
// whole. It returns the first error; the temporary file is removed.
func WriteFile(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir syncs the directory dir, so that a file created or renamed in
// it stays after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadFile reads dir/name: nil and no error when there is no such file.
func ReadFile(dir, name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
