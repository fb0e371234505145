package migrate

import "github.com/bifrost/bifrost-migrate/transform"

// diffIgnored are the top-level properties a conflict does not list: the
// system properties, ttl (recomputed at every write) and _migration
// (provenance, not content).
var diffIgnored = map[string]bool{
	"_rid": true, "_self": true, "_etag": true, "_ts": true, "_attachments": true, "_lsn": true,
	"ttl": true, "_migration": true,
}

// diffDocs returns the differing fields of the doc of a row of table
// (tables) and the doc in Cosmos DB (cosmos), both decoded by
// transform.DecodeDoc, in path order, by meaning (see
// transform.DiffMeaning: timestamps as instants, null as absent, numbers
// by value, values of redacted properties "***"), leaving out
// diffIgnored. No difference is nil.
func diffDocs(table string, tables, cosmos map[string]any) []FieldDiff {
	var out []FieldDiff
	for _, d := range transform.DiffMeaning(table, tables, cosmos, func(name string) bool { return diffIgnored[name] }) {
		out = append(out, FieldDiff{Path: d.Path, Tables: d.Expected, Cosmos: d.Actual})
	}
	return out
}
