// Command bifrost-migrate moves Bifrost's data from Azure Table Storage to
// Azure Cosmos DB. See README.md.
package main

import (
	"os"

	"github.com/bifrost/bifrost-migrate/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
