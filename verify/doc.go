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
// Requests stay few, and memory does not grow with the source ("Flat at
// any size"): no doc body is held longer than it takes to hash it, and no
// entry of a row or a doc stays in memory beyond a bounded number of them.
//
//  1. One listing of container execution-data gives, per execution id,
//     which blobs exist and their sizes (transform.BlobFacts), as run uses
//     them.
//  2. Two streams run at the same time, one per service: every doc of each
//     container is read with one cross-partition query "SELECT * FROM c" in
//     pages of DefaultPageSize (the @vercel/cosmosdb-server stand-in scans
//     its whole container for every page, so pages are few), and every row
//     of the tables is read page by page (1,000 rows) and transformed. Each
//     side turns each doc or row into a compact entry — its place
//     (container, scope, id), the provenance hash of the content by
//     meaning, a hash of _migration, the ttl, the row keys, its read order
//     — and hands it to a sorter (internal/spill): a bounded number of
//     entries in memory, the rest in sorted runs on disk (work.go).
//  3. The join is two merges of the sorted streams (join.go): by place,
//     scope by scope — the rows whose doc belongs there meet the doc
//     there —, then by row — a row not found at its place meets the docs
//     whose _migration names it, and the other docs that name a row are
//     orphans. Equal hashes mean equal docs field by field (canonical JSON
//     compares numbers by value).
//  4. Every finding (missing, different, orphan) is read again, its row
//     and its doc (recheck.go): what agrees now is matched, what changed
//     while verify ran is counted apart, and what still differs gets its
//     field paths from that read. Details are listed for the first
//     MaxDetailedDocs differing docs; the counts are always exact.
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
// A full check writes DocsFile, the docs it read; Options.Since makes the
// check a --since (since.go), which judges the rows and docs changed
// since a time and, on a full check's DocsFile, the docs deleted since.
// RecordFile is where the command keeps what each check concluded.
//
// # Access patterns
//
// The execution index rows of Relationships are dropped: in Cosmos DB the
// questions they answered are queries on the execution docs. While the
// rows stream by, verify sorts the facts of every execution of Entities
// (user, workflow, form, status and scope) by its ids, and every dropped
// index row by the execution id it names (accessindex.go); once every row
// is read, a merge by execution id judges each index row against its
// execution (classifyIndex: dangling or stale) and notes which executions
// have a userexec or workflowexec row, and the executions are then judged
// in read order (classifyUnindexed: a migrated execution without a
// userexec or workflowexec row). The findings are data quality: they are
// in the report, never in OK.
package verify
