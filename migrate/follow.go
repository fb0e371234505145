package migrate

import (
	"context"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
)

// Defaults of FollowOptions (SPEC §16).
const (
	DefaultFollowInterval = 10 * time.Second
	DefaultFollowSkew     = 60 * time.Second
)

// FollowOptions say how Follow repeats passes.
type FollowOptions struct {
	// Since is where the first pass starts.
	Since time.Time
	// Interval is the wait between the end of a pass and the start of the
	// next; 0 means DefaultFollowInterval.
	Interval time.Duration
	// Skew is the margin taken off each watermark, for clocks that differ
	// between the servers that stamp the changes; 0 means
	// DefaultFollowSkew.
	Skew time.Duration
	// Now and Sleep are the clock (tests); nil uses the real ones.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// PassResult is what one pass did.
type PassResult struct {
	// Read counts the changes the pass read; Applied those it wrote.
	Read, Applied int64
	// Conflicts counts the changes it left unresolved.
	Conflicts int64
	// Newest is the time of the newest change it read (zero when none):
	// the next pass's watermark.
	Newest time.Time
}

// PassReport is one finished pass, as Follow reports it.
type PassReport struct {
	// Pass numbers the passes from 1.
	Pass int
	// Started is when the pass began; Since is where it read from.
	Started, Since time.Time
	PassResult
	// Lag is the age of the newest change the pass read when it ended;
	// zero when it read none.
	Lag time.Duration
	// Took is how long the pass ran.
	Took time.Duration
}

// Follow runs pass again and again (SPEC §16): each pass applies what
// changed since the previous pass's watermark (the newest change it read,
// or when it started if that was earlier: watermark) less opts.Skew,
// never going back before where the previous pass started; between
// passes it waits opts.Interval. onPass hears each pass
// that ended. When ctx ends, the pass in progress runs to its end (it gets
// a context that ctx's end does not cancel) and Follow returns nil: an
// operator's SIGINT, SIGTERM or SIGHUP stops following cleanly. A pass's error
// ends Follow with that error.
func Follow(ctx context.Context, opts FollowOptions, pass func(ctx context.Context, since time.Time) (PassResult, error), onPass func(PassReport)) error {
	if opts.Interval <= 0 {
		opts.Interval = DefaultFollowInterval
	}
	if opts.Skew <= 0 {
		opts.Skew = DefaultFollowSkew
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = store.Sleep
	}
	since := opts.Since
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			return nil
		}
		start := opts.Now()
		res, err := pass(context.WithoutCancel(ctx), since)
		if err != nil {
			return err
		}
		end := opts.Now()
		rep := PassReport{Pass: n, Started: start, Since: since, PassResult: res, Took: end.Sub(start)}
		if !res.Newest.IsZero() {
			rep.Lag = end.Sub(res.Newest)
			if next := watermark(res.Newest, start).Add(-opts.Skew); next.After(since) {
				since = next
			}
		}
		if onPass != nil {
			onPass(rep)
		}
		if err := opts.Sleep(ctx, opts.Interval); err != nil {
			return nil // interrupted between passes
		}
	}
}

// watermark is where the pass after one that started at start and read
// changes up to newest reads from, before the skew: newest, but never
// later than start. A pass reads its ranges over time, so a change
// written while it read, to a range it had already read, is not among
// what it read, while a later change to a range it read afterwards may
// be: only the changes before its start are all behind it.
func watermark(newest, start time.Time) time.Time {
	if newest.After(start) {
		return start
	}
	return newest
}
