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
