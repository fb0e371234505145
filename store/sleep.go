package store

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it returns ctx's error in that case,
// else nil. It is the wait of every retry, pacing and --follow loop.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
