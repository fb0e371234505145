// Package verify compares every selected source row with what the
// migration left in Cosmos DB and Blob Storage (SPEC §12): it recomputes
// each row's disposition and doc with package transform, reads the actual
// docs in bulk, compares them field by field, checks the blobs docs name,
// and finds orphans and application-written docs. It never imports cobra or
// terminal code: it reports through Progress, and returns a Report that the
// command prints as text or JSON.
//
// # Strategy
//
// Requests stay few and memory stays bounded by never holding a doc body
// for longer than it takes to hash it:
//
//  1. One listing of container execution-data gives, per execution id,
//     which blobs exist and their sizes (transform.BlobFacts), as run uses
//     them.
//  2. Two streams run at the same time, one per service: every doc of each
//     container is read with one cross-partition query "SELECT * FROM c" in
//     pages of 10,000 (a handful of requests for 100,000 docs; the
//     @vercel/cosmosdb-server stand-in scans its whole container for every
//     page, so small pages would make the read quadratic), and every row of
//     the tables is read page by page (1,000 rows) and transformed. Each
//     side keeps only a compact entry per doc or row: a 16-byte key of
//     (container, scope, id), the provenance hash of the content
//     (transform.Hash, which leaves out _migration, ttl and the system
//     properties), a hash of _migration, the ttl, and the keys needed to
//     report it — roughly 250 bytes per doc and per row, never the body.
//  3. The join compares the entries. Equal hashes mean equal docs field by
//     field (canonical JSON compares numbers by value), so only docs whose
//     hashes differ are read again — one point read each, plus one
//     point query of their row — to compute the differing field paths.
//     Details are computed for the first MaxDetailedDocs differing docs;
//     the counts are always exact.
//
// A doc expected at (container, scope, id) that is absent there but whose
// _migration names the same row somewhere else (another scope, container
// or id) is reported as different, with the field paths (e.g. "scope"),
// not as one missing doc and one orphan. Orphans are docs carrying
// _migration that no selected row expects: the row is gone, or its
// disposition is no longer doc, or the doc duplicates the row's doc.
// Docs without _migration that are not where a row's doc should be are
// application-written: counted per container, not judged. A doc without
// _migration at an expected place is judged (it is not what the migration
// wrote).
//
// # Access patterns
//
// The execution index rows of Relationships are dropped: in Cosmos DB the
// questions they answered are queries on the execution docs. While the
// rows stream by, verify keeps compact facts of every execution of
// Entities (interned user, workflow, form, status and scope, about 130
// bytes per execution with its id) and, since Entities is read before
// Relationships, judges each index row against them as it is read
// (classifyIndex: dangling or stale), keeping no index row; once every
// row is read it judges the executions (classifyUnindexed: a migrated
// execution without a userexec or workflowexec row). The findings are
// data quality: they are in the report, never in OK.
package verify
