package azure

import (
	"errors"
	"net"
	"net/url"
	"path"
	"strings"
)

// ScrubError returns err with the query string, which can carry a
// shared access signature, removed from the URL of the first *url.Error
// in its chain; an error without one, or whose URL has no query, is
// returned as it is. It wraps err, not rebuilds it: errors.Is and
// errors.As still see all of err's chain (store.ErrRetriesExhausted, the
// *store.Fault), while its text, and the *url.Error (or net.Error)
// errors.As finds, are the scrubbed ones.
func ScrubError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil || u.RawQuery == "" {
		return err
	}
	u.RawQuery = ""
	clean := &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
	msg := strings.ReplaceAll(err.Error(), ue.Error(), clean.Error())
	return &scrubbedError{err: err, url: clean, msg: strings.ReplaceAll(msg, ue.URL, clean.URL)}
}

// scrubbedError is an error whose URL error's query string is removed
// (ScrubError): its text, and the URL error errors.As finds through it.
type scrubbedError struct {
	err error
	url *url.Error
	msg string
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// As finds the scrubbed URL error before the one in the chain it wraps.
func (e *scrubbedError) As(target any) bool {
	switch t := target.(type) {
	case **url.Error:
		*t = e.url
	case *net.Error:
		*t = e.url
	default:
		return false
	}
	return true
}

// Service is one of the Azure services the tool talks to.
type Service string

// The services, as messages name them.
const (
	ServiceTables Service = "Table Storage"
	ServiceCosmos Service = "Cosmos DB"
	ServiceBlobs  Service = "Blob Storage"
)

// The kinds of Resource.
const (
	KindTable         = "table"
	KindDatabase      = "database"
	KindContainer     = "container"      // a Cosmos DB container; Name is "database/container"
	KindBlobContainer = "blob container" // a Blob Storage container
)

// Resource names what a request was about, so that a message can say
// which table, database or container failed and where. It never holds a
// secret.
type Resource struct {
	Service Service
	// Kind is one of KindTable, KindDatabase, KindContainer and
	// KindBlobContainer.
	Kind string
	// Name is the resource's name as sent to the service.
	Name string
	// Endpoint is the account's service endpoint, without credentials or
	// query string.
	Endpoint string
}

// String is "table Config", "container bifrost/entities", ….
func (r Resource) String() string { return r.Kind + " " + r.Name }

// ResourceError is a failed request about one Resource. Err is what the
// request returned: an *azcore.ResponseError for a service answer, a
// transport error (scrubbed of query strings), or an error wrapping one of
// this package's sentinels. Package cmd turns it into a sentence that says
// what to do; its Error text is the technical detail.
type ResourceError struct {
	Resource
	// Op is the context the message starts with, such as "table Config" or
	// "list blob container execution-data"; empty means none.
	Op  string
	Err error
}

func (e *ResourceError) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *ResourceError) Unwrap() error { return e.Err }

// blobEndpoint returns the account endpoint of a blob container URL: the
// URL without its query string (which can hold a SAS) and without the
// container's own path segment.
func blobEndpoint(containerURL string) string {
	u, err := url.Parse(containerURL)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(path.Dir(strings.TrimSuffix(u.Path, "/")), "/")
	u.RawPath = ""
	return u.String()
}
