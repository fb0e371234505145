package azure

import (
	"errors"
	"net/url"
	"path"
	"strings"
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

// oneLineError is a one-line message that wraps errors whose own text can
// span many lines (an azcore.ResponseError dumps the whole answer).
type oneLineError struct {
	msg  string
	errs []error
}

func (e *oneLineError) Error() string   { return e.msg }
func (e *oneLineError) Unwrap() []error { return e.errs }

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
