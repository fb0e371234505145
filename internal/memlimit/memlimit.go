// Package memlimit sets the garbage collector's rule for the command
// (docs/performance.md, "At any size"): the collector runs when the heap has grown by
// the live heap or by Headroom, whichever is more, beyond what was live
// after the last collection. So it never runs back to back because the
// live heap neared a fixed limit, and never runs often because the live
// heap is small.
package memlimit

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
)

// Headroom is the least the heap may grow by between two collections.
const Headroom = 64 << 20

// Start sets the collector's rule for the process: GOGC off, and a soft
// memory limit of (the runtime's memory besides the heap) + live +
// max(live, Headroom), set again after each collection from what it
// found live. A GOMEMLIMIT or GOGC the user set (getenv) wins: Start
// then changes nothing. It returns whether it set the rule. Call it
// once, at the start.
func Start(getenv func(string) string) bool {
	if getenv("GOMEMLIMIT") != "" || getenv("GOGC") != "" {
		return false
	}
	samples := newSamples()
	debug.SetMemoryLimit(Limit(samples))
	debug.SetGCPercent(-1) // the limit alone starts a collection
	afterEachGC(func() { debug.SetMemoryLimit(Limit(samples)) })
	return true
}

func newSamples() []metrics.Sample {
	return []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
}

// Limit is the memory limit for what samples read now: the runtime's
// memory besides the heap + live + max(live, Headroom).
func Limit(samples []metrics.Sample) int64 {
	metrics.Read(samples)
	v := func(i int) int64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(samples[i].Value.Uint64())
	}
	live := v(0)
	other := max(0, v(1)-v(2)-v(3)-v(4)-v(5)) // stacks, metadata, buffers
	return other + live + max(live, Headroom)
}

// afterEachGC calls f after every collection, on the finalizer goroutine.
func afterEachGC(f func()) {
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) {
		f()
		afterEachGC(f)
	})
}

// sentinel is garbage as soon as it is made; its finalizer runs after the
// next collection. It is big enough not to be a tiny allocation, whose
// finalizers may never run.
type sentinel struct {
	_ *int
	_ [16]byte
}

// CPUClasses are the runtime's own account of a process's processor time
// (runtime/metrics /cpu/classes/…, in seconds): what the garbage
// collector, the Go code and the scavenger used, and the time the
// processors were idle. They are estimates from the time each processor
// spent on each, not from the operating system; GC / (GC + User +
// Scavenge) is the collector's share of the time the process worked,
// whoever else shares the machine.
type CPUClasses struct {
	GC       float64 `json:"gc"`
	User     float64 `json:"user"`
	Scavenge float64 `json:"scavenge"`
	Idle     float64 `json:"idle"`
}

// ReadCPUClasses reads the process's CPUClasses now.
func ReadCPUClasses() CPUClasses {
	s := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/user:cpu-seconds"},
		{Name: "/cpu/classes/scavenge/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
	}
	metrics.Read(s)
	f := func(i int) float64 {
		if s[i].Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return s[i].Value.Float64()
	}
	return CPUClasses{GC: f(0), User: f(1), Scavenge: f(2), Idle: f(3)}
}

// GCShare is GC / (GC + User + Scavenge): the collector's share of the
// time the process worked.
func (c CPUClasses) GCShare() float64 {
	if w := c.GC + c.User + c.Scavenge; w > 0 {
		return c.GC / w
	}
	return 0
}

// WriteCPUClasses writes the process's CPUClasses as JSON to the file
// path; an empty path writes nothing.
func WriteCPUClasses(path string) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(ReadCPUClasses())
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("BIFROST_CPU_CLASSES: %w", err)
	}
	return nil
}

// StartCPUProfile starts a CPU profile of the process written to the
// file path, for the benchmarks (BIFROST_CPU_PROFILE: pprof of the binary
// as they run it); an empty path profiles nothing. Call the stop it
// returns before the process ends.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("BIFROST_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("BIFROST_CPU_PROFILE: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("BIFROST_CPU_PROFILE: %w", err)
		}
		return nil
	}, nil
}
