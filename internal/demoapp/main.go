// Command demoapp plays the Bifrost application in demo.sh's rollback
// rehearsal, through the Azure SDKs as the application uses them:
//
//	demoapp complete --org ORG EXECUTION_ID   # on Cosmos DB (CosmosDBConnection)
//	demoapp show --org ORG EXECUTION_ID       # on the tables (BIFROST_TABLES_CONNECTION)
//
// complete is the application after the cutover: it reads the execution's
// doc in the container executions (scope org-ORG), which must be Running,
// and completes it as the application's execution repository does —
// status Success, completedAt, durationMs (20 min 0.25 s after startedAt)
// and a JSON result — with a replace conditional on the doc's ETag. It
// prints one line, e.g. "application on Cosmos DB: execution ID completed
// (Running → Success)".
//
// show is the application back on the tables after the rollback: it finds
// the execution's Entities row by its ExecutionId in partition ORG and
// looks it up in the status:Running index of Relationships, as the
// Table-based application lists running executions, and prints one line:
// "application on the tables: execution ID is Success, completed …, result
// …; not in the status:Running index".
//
// Flags: --database (default bifrost), --table-prefix (default none), as
// bifrost-migrate's. Exit 0, 1 on any failure (the execution is missing,
// or not Running for complete: nothing is written), 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// clientOptions retry a failed request for 30 s at most, 5 attempts but
// 429s: a demo application waits less than bifrost-migrate (10 min).
var clientOptions = azure.Options{Retry: azure.RetryOptions{Timeout: 30 * time.Second, MaxAttempts: 5}}

// options are demoapp's command, flags and argument.
type options struct {
	command     string
	org         string
	database    string
	tablePrefix string
	execution   string
}

// errPrinted is parse's error when the flag package already printed the
// error and the usage on stderr.
var errPrinted = errors.New("usage printed")

const usage = "usage: demoapp complete|show --org ORG [--database NAME] [--table-prefix PREFIX] EXECUTION_ID"

// parse reads the command line; its error, but errPrinted, is the line to
// print.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	if len(args) == 0 || (args[0] != "complete" && args[0] != "show") {
		return o, errors.New(usage)
	}
	o.command = args[0]
	fs := flag.NewFlagSet("demoapp "+o.command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.org, "org", "", "the execution's organization id (required)")
	fs.StringVar(&o.database, "database", "bifrost", "the Cosmos DB database")
	fs.StringVar(&o.tablePrefix, "table-prefix", "", "the prefix of the table names")
	if err := fs.Parse(args[1:]); err != nil {
		return o, errPrinted
	}
	if o.org == "" || fs.NArg() != 1 || fs.Arg(0) == "" {
		return o, errors.New(usage)
	}
	o.execution = fs.Arg(0)
	return o, nil
}

// run runs one command and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, errPrinted) {
			fmt.Fprintf(stderr, "demoapp: %v\n", err)
		}
		return 2
	}
	var line string
	switch o.command {
	case "complete":
		line, err = complete(ctx, o, getenv("CosmosDBConnection"))
	default:
		line, err = show(ctx, o, getenv("BIFROST_TABLES_CONNECTION"))
	}
	if err != nil {
		fmt.Fprintf(stderr, "demoapp %s: %v\n", o.command, err)
		return 1
	}
	fmt.Fprintln(stdout, line)
	return 0
}
