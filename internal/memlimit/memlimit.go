// Package memlimit sets the garbage collector of the command
// (README, Performance, memory): the heap may grow to a floor before the
// collector runs, and beyond it to twice what is live, so that the
// collector never runs back to back because the live heap neared a fixed
// limit, and never runs often because the live heap is small.
package memlimit

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Floor is the memory the process may use before the collector runs,
// whatever is live: the pages and requests in flight, the sets of ids and
// the runtime's own.
const Floor = 64 << 20

// Start sets the collector's rule for the process: the collector runs
// when the process's memory reaches max(Floor, what the runtime holds
// besides the heap + twice the live heap), the limit set again after each
// collection from what it found live. A GOMEMLIMIT or GOGC the user set
// (getenv) wins: Start then changes nothing. It returns whether it set
// the rule. Call it once, at the start.
func Start(getenv func(string) string) bool {
	if getenv("GOMEMLIMIT") != "" || getenv("GOGC") != "" {
		return false
	}
	debug.SetMemoryLimit(Floor)
	debug.SetGCPercent(-1) // the limit alone starts a collection
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	afterEachGC(func() { debug.SetMemoryLimit(Limit(samples)) })
	return true
}

// Limit is the memory limit for the live heap and the runtime's other
// memory that samples read now: max(Floor, other + 2 × live).
func Limit(samples []metrics.Sample) int64 {
	metrics.Read(samples)
	v := func(i int) int64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(samples[i].Value.Uint64())
	}
	live := v(0)
	other := v(1) - v(2) - v(3) - v(4) - v(5) // stacks, metadata, buffers
	return max(Floor, max(other, 0)+2*live)
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
