package ui

import (
	"errors"
	"io/fs"
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// markAt is what Progress has seen at now (the caller holds mu).
func (p *Progress) markAt(now time.Time) mark {
	m := mark{at: now, rows: p.t.session}
	if p.meters.Pacer != nil {
		s := p.meters.Pacer.Stats()
		m.ru, m.requests, m.throttled = s.RequestUnits, s.Requests, s.Throttled
	}
	if p.meters.Flow != nil {
		m.items = p.meters.Flow.Stats().Items
	}
	return m
}

// takeSample appends one throughput sample of run, when it is at work
// and some time went by since the last (any time, when last: the end of
// the session); it reports whether it took one. A samples file that
// cannot be written is warned about once, and no more samples are taken:
// the run goes on.
func (p *Progress) takeSample(last bool) bool {
	if p.samples == nil {
		return false
	}
	p.mu.Lock()
	now := p.clock()
	least := p.samples.Every / 2
	if last {
		least = time.Millisecond
	}
	if !p.sampling || !p.active || len(p.t.order) == 0 || now.Sub(p.sample.at) < least {
		p.mu.Unlock()
		return false
	}
	if p.runID == "" {
		st, err := migrate.LoadState(p.stateDir)
		if err != nil || st == nil {
			p.mu.Unlock()
			return false
		}
		p.runID = st.RunID
	}
	cur, prev := p.markAt(now), p.sample
	var done int64
	for _, t := range p.t.tables {
		done += t.done
	}
	var inFlight int
	if p.meters.Flow != nil {
		inFlight = p.meters.Flow.Stats().InFlight
	}
	p.sample = cur
	secs := now.Sub(prev.at).Seconds()
	s := migrate.ThroughputSample{
		Time: p.stamp().UTC(), RunID: p.runID, Seconds: secs, RowsDone: done,
		RowsPerSecond: float64(cur.rows-prev.rows) / secs, DocsPerSecond: float64(cur.items-prev.items) / secs,
		RUPerSecond: (cur.ru - prev.ru) / secs, InFlight: inFlight,
	}
	if n := cur.requests - prev.requests; n > 0 {
		s.ThrottledShare = float64(cur.throttled-prev.throttled) / float64(n)
	}
	err := p.samples.Append(s)
	if err != nil {
		p.sampling = false
	}
	p.mu.Unlock()
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		p.out.Warning("throughput samples: %v; the report's charts stop here", pe.Err)
	case err != nil:
		p.out.Warning("throughput samples: %v; the report's charts stop here", err)
	}
	return err == nil
}
