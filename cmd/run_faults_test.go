package cmd_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// TestRunFaultsGiveTheCleanResult runs `run` twice over the same source:
// once straight into database A, once into database B through the
// fault-injecting proxy, which answers a share of the doc writes with 429
// (short retry-after; 2 s, beyond the SDK's own patience, for one doc; four
// in a row for some docs), 503, 408, 449, and resets connections before and
// after forwarding. The faulted run must end like the clean one: the same
// exit status, the same counts and dead letters, the same blobs, and every
// doc of B equal to A's (system properties aside), none missing, none
// extra.
func TestRunFaultsGiveTheCleanResult(t *testing.T) {
	t.Parallel()
	src := newResSource(t, 300, 7, resNow, 2)

	dbA := src.newDatabase()
	stateA := filepath.Join(t.TempDir(), "state")
	codeA, outA, errA := resExecute(src.env(""), nil, src.runArgs(dbA, 0, stateA)...)
	if codeA != cmd.ExitOK && codeA != cmd.ExitPartial {
		t.Fatalf("clean run: exit %d: %s", codeA, errA)
	}
	sumA := resSummary(t, outA)
	if !sumA.Complete || sumA.DocsWritten < 300 {
		t.Fatalf("clean run: complete %v, %d docs written; want complete with at least 300", sumA.Complete, sumA.DocsWritten)
	}

	proxy, err := faultproxy.Start(faultproxy.Config{
		Target: src.cosmos.Endpoint,
		Seed:   11,
		Rules: []faultproxy.Rule{
			// The first doc write waits 2 s (longer than the SDK's
			// maximum wait), then four 429s in a row for one doc.
			{Kind: faultproxy.Throttle, Share: 1, Count: 1, RetryAfter: 2 * time.Second},
			{Kind: faultproxy.Throttle, Share: 1, Count: 4, Run: 4, RetryAfter: 5 * time.Millisecond},
			// Then a share of every kind, throughout the run. The 429s
			// are few: random 429s are not what the service sends (its
			// 429s follow the rate, and the pacer, tested against the
			// simulated account in run_ru_test.go, slows down on each),
			// here they test that every write outlives them.
			{Kind: faultproxy.Throttle, Share: 0.01, Run: 4, RetryAfter: 5 * time.Millisecond},
			{Kind: faultproxy.Throttle, Share: 0.01, RetryAfter: 10 * time.Millisecond},
			{Kind: faultproxy.Unavailable, Share: 0.06},
			{Kind: faultproxy.Timeout, Share: 0.03},
			{Kind: faultproxy.RetryWith, Share: 0.03},
			{Kind: faultproxy.DropBefore, Share: 0.05},
			{Kind: faultproxy.DropAfter, Share: 0.05},
			{Kind: faultproxy.CloseBefore, Share: 0.03},
		},
		MaxPerDoc: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })

	dbB := src.newDatabase()
	stateB := filepath.Join(t.TempDir(), "state")
	codeB, outB, errB := resExecute(src.env(proxy.URL()), nil, src.runArgs(dbB, 1, stateB)...)
	if codeB != codeA {
		t.Fatalf("run through the faults: exit %d, the clean run's was %d: %s", codeB, codeA, errB)
	}
	sumB := resSummary(t, outB)

	for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.Unavailable, faultproxy.Timeout,
		faultproxy.RetryWith, faultproxy.DropBefore, faultproxy.DropAfter, faultproxy.CloseBefore} {
		if proxy.Injected(k) == 0 {
			t.Errorf("the proxy injected no %s fault (counts %v): the test proves nothing about it", k, proxy.Counts())
		}
	}
	if s := proxy.MaxStreak(faultproxy.Throttle); s < 4 {
		t.Errorf("longest run of 429s for one doc: %d, want at least 4", s)
	}
	t.Logf("faults injected: %v over %d forwarded requests", proxy.Counts(), proxy.Forwarded())

	if a, b := resCounts(sumA), resCounts(sumB); a != b {
		t.Errorf("counts differ:\nclean:  %s\nfaults: %s", a, b)
	}
	if sumB.DocsWritten != sumA.DocsWritten || sumB.BlobsUploaded != sumA.BlobsUploaded || sumB.BlobBytes != sumA.BlobBytes {
		t.Errorf("docs written %d, blobs %d (%d bytes); the clean run: %d, %d (%d bytes)",
			sumB.DocsWritten, sumB.BlobsUploaded, sumB.BlobBytes, sumA.DocsWritten, sumA.BlobsUploaded, sumA.BlobBytes)
	}
	if a, b := resDeadLetters(t, stateA), resDeadLetters(t, stateB); !slices.Equal(a, b) {
		t.Errorf("dead letters differ: %d lines in the clean run, %d with faults", len(a), len(b))
	}
	docsA := src.docs(dbA)
	if int64(len(docsA)) != sumA.DocsWritten {
		t.Errorf("database A holds %d docs, the clean run wrote %d", len(docsA), sumA.DocsWritten)
	}
	resSameMaps(t, "docs with faults vs clean", docsA, src.docs(dbB))
	resSameMaps(t, "blobs with faults vs clean", src.blobList(0), src.blobList(1))
}
