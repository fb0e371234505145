package memlimit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// limitReaches waits (collecting) until the memory limit satisfies ok.
func limitReaches(t *testing.T, what string, ok func(int64) bool) int64 {
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
			t.Fatalf("%s: the memory limit stays %d MB", what, l>>20)
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
	if old := debug.SetGCPercent(-1); old != -1 {
		t.Errorf("GOGC %d, want off", old)
	}
	// Little live: Headroom above it.
	small := limitReaches(t, "little live", func(l int64) bool { return l >= Headroom && l < Headroom+64<<20 })
	// The limit follows what is live: twice the 200 MB live, and the rest.
	live := make([][]byte, 200)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	limitReaches(t, "200 MB live", func(l int64) bool { return l >= 400<<20 && l < small+400<<20 })
	runtime.KeepAlive(live)
	live = nil
	limitReaches(t, "live again released", func(l int64) bool { return l < Headroom+64<<20 })
}

// The CPU classes go to the file named, as JSON; no file, no output; a
// file that cannot be written is an error naming the setting.
func TestWriteCPUClasses(t *testing.T) {
	if err := WriteCPUClasses(""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "classes.json")
	if err := WriteCPUClasses(path); err != nil {
		t.Fatal(err)
	}
	var c CPUClasses
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &c) != nil || c.User <= 0 || c.GCShare() < 0 || c.GCShare() >= 1 {
		t.Fatalf("classes %+v, %v", c, err)
	}
	err := WriteCPUClasses(filepath.Join(t.TempDir(), "missing", "classes.json"))
	if err == nil || !strings.HasPrefix(err.Error(), "BIFROST_CPU_CLASSES: ") {
		t.Fatalf("err %v", err)
	}
}
