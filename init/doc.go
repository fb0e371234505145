// Package provision creates and converges the Cosmos DB database, its
// containers and the blob containers that bifrost-migrate writes to
// (SPEC §4). It lives in the folder init/ but is named provision, because a
// Go package cannot be imported under the name init.
//
// A Layout is declarative: container definitions in JSON, embedded in the
// binary (containers/bifrost.json) or read from the user's own file. The
// flow is Parse → Validate (no request) → NewPlan (reads only) → Apply
// (creates and replaces). A dry run prints the Plan and never calls Apply.
package provision

import _ "embed"

//go:embed containers/bifrost.json
var defaultLayout []byte

// DefaultLayoutJSON returns the embedded definitions of Bifrost's layout:
// containers entities and executions, blob container execution-data.
func DefaultLayoutJSON() []byte { return append([]byte(nil), defaultLayout...) }
