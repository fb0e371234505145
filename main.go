// Command bifrost-migrate moves Bifrost's data from Azure Table Storage to
// Azure Cosmos DB. See README.md.
package main

import (
	"os"
	"runtime/debug"

	"github.com/bifrost/bifrost-migrate/cmd"
)

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// says otherwise (docs/design.md, run): the garbage collector
// works harder as the process nears it, instead of letting the heap grow
// to twice what is live. What is live is bounded by the pages in flight
// and the requests in flight, well below it.
const memoryLimit = 64 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(cmd.Main())
}
