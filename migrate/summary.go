package migrate

import (
	"encoding/json"
	"time"
)

// Summary is what a run did (SPEC §11), per table and kind. Counts cover
// the whole run, including what earlier invocations did before a resume;
// DocsWritten, the blob and RU totals of the Tables, ElapsedSeconds and
// DocsPerSecond are explained per field.
type Summary struct {
	RunID  string `json:"runId,omitempty"`
	DryRun bool   `json:"dryRun"`
	// Resumed is true when this invocation continued a saved run.
	Resumed bool `json:"resumed"`
	// AlreadyComplete is true when the saved run was already done: nothing
	// was read or written, and the counts are the saved ones.
	AlreadyComplete bool `json:"alreadyComplete,omitempty"`
	// Complete is true when every selected table is done.
	Complete bool           `json:"complete"`
	Tables   []TableSummary `json:"tables"`
	// Dispositions are the totals per disposition over all tables.
	Dispositions map[string]int64 `json:"dispositions"`
	// Warnings are the totals per reason over all tables.
	Warnings map[string]int64 `json:"warnings"`
	// DeadLetters is the number of dead-lettered rows; DeadLetterFile the
	// file they are in (empty in a dry run, which lists them in Plan).
	DeadLetters    int64  `json:"deadLetters"`
	DeadLetterFile string `json:"deadLetterFile,omitempty"`
	// BlobsUploaded and BlobBytes count the blobs created (in a dry run:
	// that would be created); existing identical blobs are not counted.
	BlobsUploaded int64 `json:"blobsUploaded"`
	BlobBytes     int64 `json:"blobBytes"`
	// RequestCharge is the sum of the request units of every write.
	RequestCharge float64 `json:"requestCharge"`
	// DocsWritten is the number of docs this invocation wrote (0 in a dry
	// run); DocsPerSecond is DocsWritten per second of ElapsedSeconds,
	// the time this invocation took.
	DocsWritten    int64   `json:"docsWritten"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	DocsPerSecond  float64 `json:"docsPerSecond"`
	// SaveFailed is true when a checkpoint could not be recorded (state.json
	// or dead-letter.jsonl could not be written), which stopped the run;
	// Complete is then false, and LastSaved is the checkpoint state.json
	// still holds, from which a rerun resumes (its Updated is zero when
	// this run saved none). LastSaved is nil when SaveFailed is false.
	SaveFailed bool             `json:"saveFailed,omitempty"`
	LastSaved  *SavedCheckpoint `json:"lastSaved,omitempty"`
	// Plan is the dry-run report; nil for a real run.
	Plan *Plan `json:"plan,omitempty"`
}

// TableSummary is one table's part of a Summary.
type TableSummary struct {
	Table string `json:"table"`
	Done  bool   `json:"done"`
	Counts
}

// Plan is what a dry run adds to its Summary (SPEC §11). Lists stop at
// 1,000 entries; the counts are complete.
type Plan struct {
	Collisions     []Collision   `json:"collisions"`
	CollisionCount int64         `json:"collisionCount"`
	SanitizedIDs   []SanitizedID `json:"sanitizedIds"`
	SanitizedCount int64         `json:"sanitizedCount"`
	// ResultsToBlob counts inline results above --blob-threshold that
	// would move to a blob, and their bytes.
	ResultsToBlob      int64 `json:"resultsToBlob"`
	ResultsToBlobBytes int64 `json:"resultsToBlobBytes"`
	// DeadLetters lists dead letters without their rows.
	DeadLetters []DeadLetter `json:"deadLetters"`
	// EstimatedRU is 5 RU per started KB (1,024 bytes) of each doc;
	// EstimatedBytes the sum of the docs' JSON sizes (the stored size
	// before Cosmos DB's own overhead and indexes).
	EstimatedRU    int64 `json:"estimatedRu"`
	EstimatedBytes int64 `json:"estimatedBytes"`
	// Samples are up to --show transformed docs per table and kind,
	// redacted (SPEC §1).
	Samples []Sample `json:"samples,omitempty"`
}

// Collision is a row whose doc has the container, scope and id of an
// earlier row's; it is dead-lettered.
type Collision struct {
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
	Container    string `json:"container"`
	Scope        string `json:"scope"`
	ID           string `json:"id"`
}

// SanitizedID is a doc id changed by the id rules (SPEC §10).
type SanitizedID struct {
	Table        string `json:"table"`
	PartitionKey string `json:"partitionKey"`
	RowKey       string `json:"rowKey"`
	RawID        string `json:"rawId"`
	ID           string `json:"id"`
}

// Sample is one transformed doc, redacted.
type Sample struct {
	Table string          `json:"table"`
	Kind  string          `json:"kind"`
	Doc   json.RawMessage `json:"doc"`
}

// Kinds returns the counts of every table of s by kind and disposition,
// by table: the shape of fixtures.InventoryCounts. The inner maps are s's
// own, not copies.
func (s Summary) Kinds() map[string]map[string]map[string]int64 {
	out := make(map[string]map[string]map[string]int64, len(s.Tables))
	for _, ts := range s.Tables {
		out[ts.Table] = ts.Kinds
	}
	return out
}

func buildSummary(st *State, tables []string) Summary {
	s := Summary{RunID: st.RunID, Complete: true, Dispositions: map[string]int64{}, Warnings: map[string]int64{}}
	for _, t := range tables {
		ts := st.table(t)
		if ts == nil {
			continue
		}
		s.Tables = append(s.Tables, TableSummary{Table: t, Done: ts.Done, Counts: ts.Counts})
		s.Complete = s.Complete && ts.Done
		for _, ds := range ts.Kinds {
			for d, n := range ds {
				s.Dispositions[d] += n
			}
		}
		for r, n := range ts.Warnings {
			s.Warnings[r] += n
		}
		s.DeadLetters += ts.disposition("dead-letter")
		s.BlobsUploaded += ts.BlobsUploaded
		s.BlobBytes += ts.BlobBytes
		s.RequestCharge += ts.RequestCharge
	}
	return s
}

func (s *Summary) setElapsed(d time.Duration) {
	s.ElapsedSeconds = d.Seconds()
	if s.ElapsedSeconds > 0 {
		s.DocsPerSecond = float64(s.DocsWritten) / s.ElapsedSeconds
	}
}
