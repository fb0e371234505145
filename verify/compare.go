package verify

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/bifrost/bifrost-migrate/transform"
)

// systemProps are the Cosmos DB system properties, never compared; ttl is
// compared by its own rule (checkTTL), not by value.
var systemProps = map[string]bool{"_rid": true, "_self": true, "_etag": true, "_ts": true, "_attachments": true, "ttl": true}

// fieldDiff is one differing field before it is tied to a doc.
type fieldDiff struct {
	path             string
	problem          string
	expected, actual json.RawMessage
}

// compareDocs returns the differing fields of two docs of a row of table,
// decoded by transform.DecodeDoc, by meaning (see transform.DiffMeaning:
// paths, timestamps as instants, null as absent, numbers by value,
// _migration without its hash, redaction), ignoring the system
// properties and ttl, each with its problem: a field absent from actual
// is missing, one absent from expected unexpected, else its value
// differs. No difference is nil.
func compareDocs(table string, expected, actual map[string]any) []fieldDiff {
	var out []fieldDiff
	for _, d := range transform.DiffMeaning(table, expected, actual, func(name string) bool { return systemProps[name] }) {
		problem := ProblemValue
		switch {
		case d.Actual == nil:
			problem = ProblemMissing
		case d.Expected == nil:
			problem = ProblemUnexpected
		}
		out = append(out, fieldDiff{d.Path, problem, d.Expected, d.Actual})
	}
	return out
}

// rawJSON marshals a decoded value; it cannot fail for values decoded by
// encoding/json.
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}
