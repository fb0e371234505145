package ui

// RUNow is the part of a progress line that tells how a command is using
// Cosmos DB: request units per second and the share of requests answered
// 429, both over the last 5 seconds, the requests in flight now and the
// median latency of the recent ones (SPEC §14, Latency); absent when the
// command sends no Cosmos DB requests in volume.
type RUNow struct {
	RUPerSecond    *float64 `json:"ruPerSecond,omitempty"`
	ThrottledShare *float64 `json:"throttledShare,omitempty"`
	InFlight       *int     `json:"inFlight,omitempty"`
	LatencyP50Ms   *float64 `json:"latencyP50Ms,omitempty"`
}

// ruNow is RUNow of what l read (none without a pacer).
func ruNow(l live) RUNow {
	if !l.hasRU {
		return RUNow{}
	}
	ru, share := l.ruPerSecond, l.throttledShare
	inFlight := l.flow.InFlight
	ms := float64(l.flow.LatencyP50.Microseconds()) / 1000
	return RUNow{RUPerSecond: &ru, ThrottledShare: &share, InFlight: &inFlight, LatencyP50Ms: &ms}
}

// TableProgress is the progress line of a command that goes table by
// table (run, replay, reverse per container, fixtures load). Done counts
// the table's rows whose outcome is final, including those a resumed run
// did before; Read the rows this invocation read of it (run), which move
// long before a checkpoint; RowsPerSecond counts this invocation's rows
// only. Total is null until the command knows it.
type TableProgress struct {
	Table         string  `json:"table"`
	Done          int64   `json:"done"`
	Total         *int64  `json:"total"`
	Read          int64   `json:"read,omitempty"`
	RowsPerSecond float64 `json:"rowsPerSecond"`
	RUNow
	Finished bool `json:"finished"`
}

// StepProgress is the progress line of verify: the phase it enters.
type StepProgress struct {
	Step string `json:"step"`
	RUNow
}
