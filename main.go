// Command bifrost-migrate moves Bifrost's data from Azure Table Storage to
// Azure Cosmos DB. See README.md.
package main

import (
	"encoding/json"
	"os"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/memlimit"
)

func main() {
	// The garbage collector's rule (README, Performance): a floor, then
	// twice what is live; GOMEMLIMIT or GOGC from the user wins.
	memlimit.Start(os.Getenv)
	code := cmd.Main()
	if path := os.Getenv("BIFROST_CPU_CLASSES"); path != "" {
		// For the benchmarks (README, Performance): the collector's share
		// of the work, as the runtime counts it.
		if b, err := json.Marshal(memlimit.ReadCPUClasses()); err == nil {
			_ = os.WriteFile(path, b, 0o600)
		}
	}
	os.Exit(code)
}
