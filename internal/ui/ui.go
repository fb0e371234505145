// Package ui is what a command shows while it works and how: its status
// lines and warnings (Output), --output json's lines (JSONLines), the
// progress of an engine (Progress: one sink that fans out to a terminal
// bar, timestamped progress lines, JSON progress lines, the throughput
// samples of run and the metrics), the Prometheus metrics and /healthz
// (Metrics), --log-file (LogFile), --verbose (VerboseTransport) and the
// request-unit part of a summary (RUReport).
//
// The engines (migrate, verify) never import it: they report through
// their own small interfaces, which Progress implements; the commands
// (cmd) choose the displays and print their summaries. restic's
// internal/ui and rclone's fs/accounting are the models.
package ui

import (
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// Words are what a command's progress calls what it reads and what it
// writes.
type Words struct {
	// Read: "rows" (run, replay) or "docs" (reverse); Written: "docs
	// written" or "rows written".
	Read, Written string
}

// The words of the commands.
var (
	// RowsToDocs are the words of run and replay.
	RowsToDocs = Words{Read: "rows", Written: "docs written"}
	// DocsToRows are the words of reverse.
	DocsToRows = Words{Read: "docs", Written: "rows written"}
)

// Meters are what the displays read of a command's use of Cosmos DB: the
// pacer every request goes through and the flow that sizes the writes in
// flight. A zero Meters shows none (a dry run, fixtures load).
type Meters struct {
	Pacer *azure.Pacer
	Flow  *migrate.Flow
	// MaxRU is --max-ru (0: none).
	MaxRU float64
}

// recentWindow is the span RU/s and the throttled share are measured
// over, in every display.
const recentWindow = 5 * time.Second

// live are the figures of m a display shows now: the RU/s and the share
// of requests answered 429 over the last seconds, the writes in flight and
// their median latency, and the flow's state.
type live struct {
	hasRU, hasFlow              bool
	ruPerSecond, throttledShare float64
	flow                        migrate.FlowStats
}

// now reads m.
func (m Meters) now() live {
	var l live
	if m.Pacer != nil {
		l.hasRU = true
		l.ruPerSecond, l.throttledShare = m.Pacer.Recent(recentWindow)
	}
	if m.Flow != nil {
		l.hasFlow = true
		l.flow = m.Flow.Stats()
	}
	return l
}
