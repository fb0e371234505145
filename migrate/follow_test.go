package migrate

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Follow moves its watermark to the newest change less the skew, never
// back; it reports every pass with its lag; the end of ctx during a pass
// lets the pass finish, and Follow returns nil.
func TestFollow(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := t0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	newest := []time.Time{t0.Add(-10 * time.Second), {}, t0.Add(-5 * time.Hour), t0.Add(30 * time.Second)}
	var sinces []time.Time
	var reports []PassReport
	pass := func(pctx context.Context, since time.Time) (PassResult, error) {
		sinces = append(sinces, since)
		clock = clock.Add(time.Second) // each pass takes a second
		i := len(sinces) - 1
		if i == 3 {
			cancel() // SIGINT during the fourth pass
			if pctx.Err() != nil {
				t.Error("the pass in progress was cancelled")
			}
		}
		return PassResult{Read: int64(i), Applied: int64(i), Newest: newest[i]}, nil
	}
	err := Follow(ctx, FollowOptions{
		Since: t0.Add(-time.Hour), Interval: 2 * time.Second, Skew: time.Minute,
		Now: func() time.Time { return clock },
		Sleep: func(ctx context.Context, d time.Duration) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			clock = clock.Add(d)
			return nil
		},
	}, pass, func(r PassReport) { reports = append(reports, r) })
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{
		t0.Add(-time.Hour),                    // --since
		t0.Add(-10*time.Second - time.Minute), // the first pass's newest, less the skew
		t0.Add(-10*time.Second - time.Minute), // nothing read: the watermark stays
		t0.Add(-10*time.Second - time.Minute), // an older change does not move it back
	}
	if len(sinces) != 4 {
		t.Fatalf("%d passes, want 4 (the fourth finished after the interruption)", len(sinces))
	}
	for i := range want {
		if !sinces[i].Equal(want[i]) {
			t.Errorf("pass %d since %s, want %s", i+1, sinces[i], want[i])
		}
	}
	if len(reports) != 4 || reports[0].Pass != 1 || reports[0].Lag != 11*time.Second || reports[1].Lag != 0 || reports[3].Took != time.Second {
		t.Errorf("reports %+v", reports)
	}
}

func TestFollowStopsOnAPassError(t *testing.T) {
	boom := errors.New("boom")
	err := Follow(context.Background(), FollowOptions{Since: time.Now()}, func(context.Context, time.Time) (PassResult, error) {
		return PassResult{}, boom
	}, nil)
	if !errors.Is(err, boom) {
		t.Errorf("err %v, want boom", err)
	}
}

// The next pass reads from the newest change a pass read, never later
// than when the pass started (before the skew).
func TestWatermark(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		newest, want time.Time
	}{
		{start.Add(-time.Hour), start.Add(-time.Hour)}, // all it read came before it started
		{start, start},
		{start.Add(time.Second), start}, // a change written while it read: others may have been missed
		{start.Add(time.Hour), start},
	} {
		if got := watermark(tc.newest, start); !got.Equal(tc.want) {
			t.Errorf("newest %s: watermark %s, want %s", tc.newest, got, tc.want)
		}
	}
}
