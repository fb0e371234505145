// Command bifrost-migrate moves Bifrost's data from Azure Table Storage to
// Azure Cosmos DB. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/memlimit"
)

func main() {
	// The garbage collector's rule (README, Performance, Memory): it runs
	// when the heap has grown by the live heap or by 64 MiB, whichever is
	// more; GOMEMLIMIT or GOGC from the user wins.
	memlimit.Start(os.Getenv)
	code := cmd.Main()
	// For the benchmarks (README, Performance): the collector's share of
	// the work, as the runtime counts it.
	if err := memlimit.WriteCPUClasses(os.Getenv("BIFROST_CPU_CLASSES")); err != nil {
		fmt.Fprintln(os.Stderr, "bifrost-migrate:", err)
	}
	os.Exit(code)
}
