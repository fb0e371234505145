package testenv

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Benchmark skips t unless BIFROST_BENCH=1, which ./bench.sh sets: a
// benchmark of the built binary, not a test (docs/performance.md).
func Benchmark(t testing.TB) {
	t.Helper()
	if os.Getenv("BIFROST_BENCH") != "1" {
		t.Skip("benchmark: set BIFROST_BENCH=1 (./bench.sh; docs/performance.md)")
	}
}

// Numbers is the comma-separated list of numbers in the environment
// variable name, each at least least, or def when name is not set. It
// fails the test on anything else, naming the variable.
func Numbers(t testing.TB, name string, least int, def ...int) []int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var ns []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			t.Fatalf("%s=%q: want numbers of at least %d, comma-separated", name, v, least)
		}
		ns = append(ns, n)
	}
	return ns
}
