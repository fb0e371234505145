package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// limitReaches waits (collecting) until the memory limit satisfies ok.
func limitReaches(t *testing.T, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer goroutine sets it
		l := debug.SetMemoryLimit(-1)
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory limit stays %d", l)
		}
	}
}

func TestStart(t *testing.T) {
	env := map[string]string{"GOMEMLIMIT": "1GiB"}
	if Start(func(k string) string { return env[k] }) || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatal("GOMEMLIMIT set: Start changed the limit")
	}
	env = map[string]string{"GOGC": "50"}
	if Start(func(k string) string { return env[k] }) || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatal("GOGC set: Start changed the limit")
	}
	if !Start(func(string) string { return "" }) {
		t.Fatal("Start did not set the rule")
	}
	defer debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetGCPercent(100)
	limitReaches(t, func(l int64) bool { return l == Floor })
	// The limit follows what is live: 200 MB live, a limit above 400 MB.
	live := make([][]byte, 200)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	l := limitReaches(t, func(l int64) bool { return l >= 400<<20 })
	if l > 500<<20 {
		t.Errorf("limit %d MB for 200 MB live", l>>20)
	}
	runtime.KeepAlive(live)
	live = nil
	limitReaches(t, func(l int64) bool { return l == Floor })
}
