package azure

import (
	"errors"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func asResponseError(err error, target **azcore.ResponseError) bool {
	return errors.As(err, target)
}

// scrubError removes the query string from URL errors, which can carry a
// shared access signature.
func scrubError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}
