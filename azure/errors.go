package azure

import (
	"errors"
	"net/url"
)

// ScrubError removes the query string from URL errors, which can carry a
// shared access signature. Other errors are returned as they are.
func ScrubError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}

// ErrBlobConflict means a blob that must be created already exists with
// different content.
var ErrBlobConflict = errors.New("a different blob already exists")

// PermanentError is a write failure that retrying cannot fix (a 4xx other
// than 408, 409 where noted, 429 and 449); the row is dead-lettered with
// Reason, which never contains credentials or the doc.
type PermanentError struct {
	StatusCode int
	Reason     string
}

func (e *PermanentError) Error() string { return e.Reason }
