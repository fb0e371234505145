// Command bifrost-migrate moves Bifrost's data from Azure Table Storage to
// Azure Cosmos DB. See README.md.
package main

import (
	"os"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/memlimit"
)

func main() {
	// The garbage collector's rule (README, Performance): a floor, then
	// twice what is live; GOMEMLIMIT or GOGC from the user wins.
	memlimit.Start(os.Getenv)
	os.Exit(cmd.Main())
}
