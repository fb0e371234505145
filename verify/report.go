package verify

import (
	"encoding/json"
	"fmt"
	"time"
)

// Counts are the verify counters of one table and kind, or of all of them.
type Counts struct {
	// Rows is the number of source rows checked (after --sample).
	Rows int `json:"rows"`
	// ExpectedDocs is the number of those rows whose disposition is doc.
	ExpectedDocs int `json:"expectedDocs"`
	Matched      int `json:"matched"`
	Missing      int `json:"missing"`
	Different    int `json:"different"`
	// Orphans are docs carrying _migration from this table and kind that
	// no selected row expects.
	Orphans int `json:"orphans"`
	// The rows skipped by their disposition (SPEC §5).
	DroppedIndex int `json:"droppedIndex"`
	KeptInTables int `json:"keptInTables"`
	Expired      int `json:"expired"`
	DeadLetter   int `json:"deadLetter"`
	// ExpiredPresent is how many expired rows still have their doc
	// (allowed: the doc's own ttl removes it).
	ExpiredPresent int `json:"expiredPresent"`
	// ChangedWhileRunning counts the findings that a second read showed
	// to be changes in flight: a row or a doc written after verify
	// started (recheck.go). They are not failures; `verify --since` the
	// start judges them.
	ChangedWhileRunning int `json:"changedWhileRunning"`
}

func (c *Counts) add(o Counts) {
	c.Rows += o.Rows
	c.ExpectedDocs += o.ExpectedDocs
	c.Matched += o.Matched
	c.Missing += o.Missing
	c.Different += o.Different
	c.Orphans += o.Orphans
	c.DroppedIndex += o.DroppedIndex
	c.KeptInTables += o.KeptInTables
	c.Expired += o.Expired
	c.DeadLetter += o.DeadLetter
	c.ExpiredPresent += o.ExpiredPresent
	c.ChangedWhileRunning += o.ChangedWhileRunning
}

// KindCounts are the counts of one table and kind.
type KindCounts struct {
	Table string `json:"table"`
	Kind  string `json:"kind"`
	Counts
}

// DocRef names a doc and the row it comes from.
type DocRef struct {
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
	Container    string `json:"container"`
	Scope        string `json:"scope"`
	ID           string `json:"id"`
}

func (d DocRef) String() string {
	return fmt.Sprintf("%s/%s/%s (row %s %s/%s)", d.Container, d.Scope, d.ID, d.Table, d.PartitionKey, d.RowKey)
}

// Orphan is a doc carrying _migration that no selected row expects.
type Orphan struct {
	DocRef
	Reason string `json:"reason"`
}

// The problems a Difference reports. The last four have no field path:
// a different doc read again (recheck.go) whose row or doc is not what
// the first read found.
const (
	ProblemValue        = "value differs"
	ProblemMissing      = "field missing"
	ProblemUnexpected   = "unexpected field"
	ProblemTTL          = "ttl out of range"
	ProblemBlob         = "blob missing"
	ProblemRowGone      = "its row no longer exists"
	ProblemRowElsewhere = "its row no longer expects this doc"
	ProblemDocGone      = "the doc is gone"
	ProblemChanged      = "changed while verify ran; run verify again"
)

// Difference is one differing field of a doc. Expected and Actual are JSON
// values, redacted as SPEC §1 says; a nil one means the field is absent on
// that side. For ProblemTTL, Expected describes the allowed range; for
// ProblemBlob both are the blob path the doc names.
type Difference struct {
	// Doc is where the row's doc is expected; Actual, when not nil, where
	// the doc that was compared actually is (a doc in the wrong place).
	Doc       DocRef          `json:"doc"`
	ActualDoc *DocRef         `json:"actualDoc,omitempty"`
	Path      string          `json:"path"`
	Problem   string          `json:"problem"`
	Expected  json.RawMessage `json:"expected,omitempty"`
	Actual    json.RawMessage `json:"actual,omitempty"`
}

// AccessPatterns is what the access-pattern check found (SPEC §12):
// where a query on the execution docs will answer differently from the
// dropped index it replaces. These are data-quality findings: they never
// make the report fail.
type AccessPatterns struct {
	// Checked is false when --tables left out Entities or Relationships:
	// the check needs both, and then nothing was judged.
	Checked bool `json:"checked"`
	// Dangling and Stale count index rows, Unindexed executions; with
	// --sample, those of the sample (judged against every execution).
	Dangling  int `json:"dangling"`
	Stale     int `json:"stale"`
	Unindexed int `json:"unindexed"`
	// Findings lists the dangling rows (the first MaxAccessRows), then the
	// stale rows (the first MaxAccessRows), then the unindexed executions
	// (the first ShownDifferences), each in read order, with a finding per
	// differing field or missing row.
	Findings []Finding `json:"findings"`
}

// accessRows groups findings by what is counted: one group per index row
// (dangling, stale) or per execution (unindexed), in order.
func accessRows(fs []Finding) [][]Finding {
	var out [][]Finding
	for i, f := range fs {
		if i > 0 {
			p := fs[i-1]
			same := p.Kind == f.Kind && p.ExecutionID == f.ExecutionID &&
				(p.Index == nil) == (f.Index == nil) && (p.Index == nil || *p.Index == *f.Index)
			if same {
				out[len(out)-1] = append(out[len(out)-1], f)
				continue
			}
		}
		out = append(out, []Finding{f})
	}
	return out
}

// firstOfEach returns the findings of the first n index rows or
// executions of each kind.
func (a AccessPatterns) firstOfEach(n int) AccessPatterns {
	out := a
	out.Findings = []Finding{}
	shown := map[FindingKind]int{}
	for _, g := range accessRows(a.Findings) {
		if shown[g[0].Kind] < n {
			shown[g[0].Kind]++
			out.Findings = append(out.Findings, g...)
		}
	}
	return out
}

// Settings are the options a Report was made with.
type Settings struct {
	Database      string   `json:"database"`
	Tables        []string `json:"tables"`
	Sample        float64  `json:"sample"`
	ExecutionTTL  string   `json:"executionTtl"`
	BlobThreshold int      `json:"blobThreshold"`
	Relationships string   `json:"relationships"`
	Strict        bool     `json:"strict"`
	Now           string   `json:"now"`
}

// MaxDeadLetters is how many of the rows not migrated a Report lists.
const MaxDeadLetters = 100

// DeadLetterRow is a checked row that run dead-letters: its keys and
// kind, the transform's reason, and the row in the Table service's
// annotated JSON with the secrets of SPEC §1 as "***".
type DeadLetterRow struct {
	Table        string          `json:"table"`
	PartitionKey string          `json:"partitionKey"`
	RowKey       string          `json:"rowKey"`
	Kind         string          `json:"kind"`
	Reason       string          `json:"reason"`
	Row          json.RawMessage `json:"row"`
}

// Endpoints are where verify read, as its start-up line names them:
// endpoints, account and database names and how each authenticates;
// never a key.
type Endpoints struct {
	Tables Endpoint `json:"tables"`
	Blobs  Endpoint `json:"blobs"`
	Cosmos Endpoint `json:"cosmos"`
}

// Endpoint is one service's endpoint: its URL, the storage account, the
// blob container or the database it holds, and the authentication.
type Endpoint struct {
	Endpoint  string `json:"endpoint"`
	Account   string `json:"account,omitempty"`
	Container string `json:"container,omitempty"`
	Database  string `json:"database,omitempty"`
	Auth      string `json:"auth"`
}

// Migration is the run whose result a report judges, as its state
// directory holds it.
type Migration struct {
	RunID       string `json:"runId"`
	StateDir    string `json:"stateDir"`
	Started     string `json:"started"`
	Updated     string `json:"updated"`
	Done        bool   `json:"done"`
	ToolVersion string `json:"toolVersion,omitempty"`
}

// Report is everything verify found. It is what --report writes.
type Report struct {
	// RunID is the run of the migration judged (Migration.RunID; "" when
	// the state directory holds none); Started and Ended are verify's own
	// start and end (RFC 3339, UTC). CommandLine is verify's, connection
	// strings as "***". These, Endpoints and Migration are filled by the
	// command (verify itself reads no files and knows no endpoints).
	RunID       string     `json:"runId"`
	Started     string     `json:"started,omitempty"`
	Ended       string     `json:"ended,omitempty"`
	CommandLine string     `json:"commandLine,omitempty"`
	Endpoints   *Endpoints `json:"endpoints,omitempty"`
	Migration   *Migration `json:"migration,omitempty"`
	Settings    Settings   `json:"settings"`
	// Verdict is OK, Partial and Scope: whether what was judged is in
	// sync, and what was judged.
	Verdict
	Totals Counts       `json:"totals"`
	Tables []KindCounts `json:"tables"`
	// AppWritten counts, per container, the docs without _migration that
	// are not where a row's doc is expected (not judged).
	AppWritten map[string]int `json:"appWritten"`
	// DocsWithoutTTL counts, per container, the docs that lack the ttl
	// their row's doc has (the application wrote them after migration:
	// the tool always sets it); WithoutTTL names the first
	// MaxDetailedDocs. They are judged by their content, not failures:
	// the container's defaultTtl keeps each from its last write.
	DocsWithoutTTL map[string]int `json:"docsWithoutTtl"`
	WithoutTTL     []DocRef       `json:"withoutTtl"`
	// NotJudged counts docs carrying _migration of rows outside --tables
	// or --sample.
	NotJudged int `json:"notJudged"`
	// Docs is the number of docs read, per container.
	Docs map[string]int `json:"docs"`
	// BlobsListed is the number of blobs in execution-data.
	BlobsListed int `json:"blobsListed"`
	// Warnings counts the transform's data-quality warnings by reason.
	Warnings map[string]int `json:"warnings"`
	// NotMigrated counts the checked rows that are not in Cosmos DB
	// because run dead-letters them (Totals.DeadLetter); any makes the
	// report fail (SPEC §12: every source row accounted for).
	NotMigrated int `json:"notMigrated"`
	// DeadLetters lists the first MaxDeadLetters of them, in read order.
	DeadLetters []DeadLetterRow `json:"deadLetters"`
	// DeadLetterFile is run's dead-letter file, where those rows are
	// listed with their reasons, and DeadLetterFileFound whether it
	// exists. The command fills both (verify itself reads no files).
	DeadLetterFile      string `json:"deadLetterFile"`
	DeadLetterFileFound bool   `json:"deadLetterFileFound"`
	// AccessPatterns are the dropped execution indexes checked against
	// the executions; they do not change OK.
	AccessPatterns AccessPatterns `json:"accessPatterns"`
	Missing        []DocRef       `json:"missing"`
	Orphans        []Orphan       `json:"orphans"`
	Differences    []Difference   `json:"differences"`
	// DetailsTruncated is true when more than MaxDetailedDocs docs differ:
	// Differences then covers the first MaxDetailedDocs of them.
	DetailsTruncated bool `json:"detailsTruncated"`
	// ChangedWhileRunning names the first MaxDetailedDocs docs counted in
	// Totals.ChangedWhileRunning.
	ChangedWhileRunning []DocRef `json:"changedWhileRunning"`
	// NotReread counts the findings beyond the MaxRecheck that were read
	// again: they stand as first read, and may be changes in flight.
	NotReread      int     `json:"notReread"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`

	// startedAt is Started as a time, with its nanoseconds; docsWritten
	// says a full verify wrote DocsFile.
	startedAt   time.Time
	docsWritten bool
}

// Failures is the number of problems that make verify fail: rows not
// migrated (dead letters), missing, different and orphan docs.
func (r *Report) Failures() int {
	return r.NotMigrated + r.Totals.Missing + r.Totals.Different + r.Totals.Orphans
}

// ShownDifferences is how many differences the text output and the JSON
// summary list.
const ShownDifferences = 20

// Summary returns the report with its lists cut to their first
// ShownDifferences entries, for --output json.
func (r *Report) Summary() *Report {
	s := *r
	s.AccessPatterns = r.AccessPatterns.firstOfEach(ShownDifferences)
	s.Missing = first(r.Missing, ShownDifferences)
	s.WithoutTTL = first(r.WithoutTTL, ShownDifferences)
	s.Orphans = first(r.Orphans, ShownDifferences)
	s.Differences = first(r.Differences, ShownDifferences)
	s.ChangedWhileRunning = first(r.ChangedWhileRunning, ShownDifferences)
	s.DeadLetters = first(r.DeadLetters, ShownDifferences)
	return &s
}

func first[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// total is the sum of counts.
func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
