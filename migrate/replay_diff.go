package migrate

import "github.com/bifrost/bifrost-migrate/transform"

// diffIgnored are the top-level properties a conflict does not list: the
// system properties, ttl (recomputed at every write) and _migration
// (provenance, not content).
var diffIgnored = map[string]bool{
	"_rid": true, "_self": true, "_etag": true, "_ts": true, "_attachments": true, "_lsn": true,
	"ttl": true, "_migration": true,
}

// diffDocs returns the differing fields of the row's doc (tables) and the
// doc in Cosmos DB (cosmos), both decoded by transform.DecodeDoc, in path
// order (see transform.DiffDocs: numbers by value, values of redacted
// properties "***"), leaving out diffIgnored. No difference is nil.
func diffDocs(tables, cosmos map[string]any) []FieldDiff {
	var out []FieldDiff
	for _, d := range transform.DiffDocs(tables, cosmos, func(name string) bool { return diffIgnored[name] }) {
		out = append(out, FieldDiff{Path: d.Path, Tables: d.Expected, Cosmos: d.Actual})
	}
	return out
}
