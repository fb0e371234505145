package ui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
)

// LogFile is --log-file: a timestamped record of what a command did, one
// line per page, retry, dead letter and checkpoint, for a long production
// run. Lines name tables, keys, endpoints and reasons, never a property's
// value; each is scrubbed of the settings' secrets before it is written,
// as a last line of defence. It is safe for concurrent use.
type LogFile struct {
	now    func() time.Time
	redact func(string) string

	mu  sync.Mutex
	f   *os.File
	err error // the first write error, reported when the command ends
}

// OpenLogFile opens (creating, or appending to) the file at path,
// readable by its owner only; its lines are stamped by now and scrubbed by
// redact. It returns the error of opening it.
func OpenLogFile(path string, now func() time.Time, redact func(string) string) (*LogFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &LogFile{f: f, now: now, redact: redact}, nil
}

// Printf writes one line: an RFC 3339 UTC timestamp with milliseconds,
// then the message. A nil *LogFile writes nothing.
func (l *LogFile) Printf(format string, args ...any) {
	if l == nil {
		return
	}
	msg := strings.ReplaceAll(l.redact(fmt.Sprintf(format, args...)), "\n", " ")
	line := l.now().UTC().Format("2006-01-02T15:04:05.000Z07:00") + " " + msg + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.f, line); err != nil && l.err == nil {
		l.err = err
	}
}

// Logf returns l.Printf, or nil when there is no log file.
func (l *LogFile) Logf() func(string, ...any) {
	if l == nil {
		return nil
	}
	return l.Printf
}

// Retried is the OnRetry hook of the clients: one line per retry.
func (l *LogFile) Retried(e azure.RetryEvent) {
	l.Printf("retry %s (attempt %d): %s; waiting %s", e.Op, e.Attempt, e.Cause, e.Wait.Round(time.Millisecond))
}

// Close closes the file and returns the first error met writing it.
func (l *LogFile) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.f.Close()
	if l.err != nil {
		err = l.err
	}
	if err != nil {
		return fmt.Errorf("--log-file: %w", err)
	}
	return nil
}
