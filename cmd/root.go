// Package cmd is the command line of bifrost-migrate: one file per
// subcommand. Each binds its flags into an Options struct and calls a
// package that does the work; errors become exit codes in one place (Main).
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bifrost/bifrost-migrate/azure"
)

// Factory is what every command needs from the outside world. Main fills it
// from the process; tests fill it with buffers, a fixed clock and their own
// environment.
type Factory struct {
	In     io.Reader
	Out    io.Writer // data: summaries, reports, plans
	ErrOut io.Writer // status, progress, errors
	// ErrIsTerminal reports whether ErrOut is a terminal (progress bars).
	ErrIsTerminal func() bool
	Now           func() time.Time
	Getenv        func(string) string
	// Transport, when not nil, carries every HTTP request (tests: recording
	// or fault-injecting transports).
	Transport http.RoundTripper

	Global GlobalOptions
}

// GlobalOptions are the flags every command shares (SPEC §1).
type GlobalOptions struct {
	TablesConnection string
	BlobConnection   string
	CosmosConnection string
	CosmosEndpoint   string
	Database         string
	Output           string
	Quiet            bool
	Verbose          bool
}

// JSON reports whether --output json was chosen.
func (g GlobalOptions) JSON() bool { return g.Output == "json" }

// Storage returns the Table Storage account: --tables-connection,
// BIFROST_TABLES_CONNECTION, AzureWebJobsStorage, or the local Azurite.
func (f *Factory) Storage() (azure.StorageAccount, error) {
	s := firstNonEmpty(f.Global.TablesConnection, f.Getenv("BIFROST_TABLES_CONNECTION"), f.Getenv("AzureWebJobsStorage"), azure.DevStorageConnection)
	a, err := azure.ParseStorageConnection(s)
	if err != nil {
		return a, UsageError(fmt.Errorf("tables connection: %w", err))
	}
	return a, nil
}

// BlobStorage returns the Blob Storage account: --blob-connection,
// BIFROST_BLOB_CONNECTION, or the tables account.
func (f *Factory) BlobStorage() (azure.StorageAccount, error) {
	s := firstNonEmpty(f.Global.BlobConnection, f.Getenv("BIFROST_BLOB_CONNECTION"))
	if s == "" {
		return f.Storage()
	}
	a, err := azure.ParseStorageConnection(s)
	if err != nil {
		return a, UsageError(fmt.Errorf("blob connection: %w", err))
	}
	return a, nil
}

// Cosmos returns the Cosmos DB account: --cosmos-connection or
// CosmosDBConnection (with a key); else --cosmos-endpoint or
// BIFROST_COSMOS_ENDPOINT (Entra ID); else the local emulator.
func (f *Factory) Cosmos() (azure.CosmosAccount, error) {
	conn := firstNonEmpty(f.Global.CosmosConnection, f.Getenv("CosmosDBConnection"))
	endpoint := firstNonEmpty(f.Global.CosmosEndpoint, f.Getenv("BIFROST_COSMOS_ENDPOINT"))
	if f.Global.CosmosConnection != "" && f.Global.CosmosEndpoint != "" {
		return azure.CosmosAccount{}, UsageError(errors.New("--cosmos-connection and --cosmos-endpoint exclude each other"))
	}
	var (
		a   azure.CosmosAccount
		err error
	)
	switch {
	case f.Global.CosmosEndpoint != "":
		a, err = azure.CosmosEndpoint(f.Global.CosmosEndpoint)
	case conn != "":
		a, err = azure.ParseCosmosConnection(conn)
	case endpoint != "":
		a, err = azure.CosmosEndpoint(endpoint)
	default:
		a, err = azure.ParseCosmosConnection(azure.EmulatorCosmosConnection)
	}
	if err != nil {
		return a, UsageError(fmt.Errorf("cosmos connection: %w", err))
	}
	return a, nil
}

// secrets returns every secret the settings carry, so that error output
// can be scrubbed of them as a last line of defence.
func (f *Factory) secrets() []string {
	var out []string
	for _, s := range []string{
		f.Global.TablesConnection, f.Getenv("BIFROST_TABLES_CONNECTION"), f.Getenv("AzureWebJobsStorage"),
		f.Global.BlobConnection, f.Getenv("BIFROST_BLOB_CONNECTION"),
		f.Global.CosmosConnection, f.Getenv("CosmosDBConnection"),
	} {
		if s == "" {
			continue
		}
		out = append(out, s)
		for _, part := range strings.Split(s, ";") {
			k, v, ok := strings.Cut(part, "=")
			if !ok || len(v) < 8 {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "accountkey", "sharedaccesssignature":
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

// Redact replaces every secret of the settings found in s with "***".
func (f *Factory) Redact(s string) string {
	for _, secret := range f.secrets() {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// joinAnd joins "a", "a and b", "a, b and c" (for sentences that name
// several accounts or options).
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	rootExits, _ := exitStatuses("bifrost-migrate")
	root := &cobra.Command{
		Use:   "bifrost-migrate",
		Short: "Move Bifrost's data from Azure Table Storage to Azure Cosmos DB",
		Long: `bifrost-migrate moves the Bifrost platform's data from Azure Table Storage
(tables Config, Entities, Relationships) into Azure Cosmos DB (containers
entities and executions, partition key /scope), keeping large execution
results in Blob Storage (container execution-data).

With no connection settings it targets the local emulators: Azurite
(devstoreaccount1) and the Cosmos DB emulator at https://localhost:8081.
` + exitStatusHelp(rootExits),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			switch f.Global.Output {
			case "text", "json":
			default:
				return UsageError(fmt.Errorf("--output must be text or json, not %q", f.Global.Output))
			}
			if f.Global.Quiet && f.Global.Verbose {
				return UsageError(errors.New("--quiet and --verbose exclude each other"))
			}
			if f.Global.Verbose {
				f.Transport = &verboseTransport{next: f.Transport, w: f.ErrOut, now: f.Now}
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.TablesConnection, "tables-connection", "", "Storage connection string for the tables [$BIFROST_TABLES_CONNECTION, $AzureWebJobsStorage]")
	pf.StringVar(&f.Global.BlobConnection, "blob-connection", "", "Storage connection string for blobs [$BIFROST_BLOB_CONNECTION] (default: the tables connection)")
	pf.StringVar(&f.Global.CosmosConnection, "cosmos-connection", "", "Cosmos DB connection string AccountEndpoint=...;AccountKey=...; [$CosmosDBConnection]")
	pf.StringVar(&f.Global.CosmosEndpoint, "cosmos-endpoint", "", "Cosmos DB endpoint, authenticated with Microsoft Entra ID [$BIFROST_COSMOS_ENDPOINT]")
	pf.StringVar(&f.Global.Database, "database", "bifrost", "Cosmos DB database")
	pf.StringVar(&f.Global.Output, "output", "text", "output format: text or json")
	pf.BoolVar(&f.Global.Quiet, "quiet", false, "no progress output")
	pf.BoolVar(&f.Global.Verbose, "verbose", false, "print every HTTP request (method, host, path, status; never query strings, headers or bodies) on stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return UsageError(err) })
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	root.SetIn(f.In)

	root.AddCommand(
		NewCmdInit(f, nil),
		NewCmdRun(f, nil),
		NewCmdVerify(f, nil),
		NewCmdReplay(f, nil),
		NewCmdFixtures(f),
	)
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		addExitCodes(c)
	}
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// addExitCodes appends to the help of c, and of its subcommands, the
// exit codes it can return (exitStatuses). A command missing from
// exitStatuses gets the root's full table, which is true if not precise;
// a test checks that none is missing.
func addExitCodes(c *cobra.Command) {
	if !strings.Contains(c.Long, "Exit status:") {
		long := c.Long
		if long == "" {
			long = c.Short
		}
		ss, ok := exitStatuses(c.CommandPath())
		if !ok {
			ss, _ = exitStatuses(c.Root().CommandPath())
		}
		c.Long = long + "\n" + exitStatusHelp(ss)
	}
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return UsageError(err) })
	for _, sub := range c.Commands() {
		addExitCodes(sub)
	}
}

// Main runs bifrost-migrate with the process's arguments and environment
// and returns the exit status. SIGINT and SIGTERM cancel the root context;
// commands save their state and return, and Main returns 130.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := &Factory{
		In:            os.Stdin,
		Out:           os.Stdout,
		ErrOut:        os.Stderr,
		ErrIsTerminal: func() bool { return term.IsTerminal(int(os.Stderr.Fd())) },
		Now:           time.Now,
		Getenv:        os.Getenv,
	}
	return Execute(ctx, f, os.Args[1:])
}

// Execute runs the command line args with f and returns the exit status,
// printing any error (scrubbed of secrets) to f.ErrOut.
func Execute(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := exitCode(err, ctx.Err() != nil)
	if err == nil {
		return code
	}
	if code == ExitFatal && isCobraUsage(err) {
		code = ExitUsage
	}
	msg := f.Redact(err.Error())
	if code == ExitInterrupted {
		msg = "interrupted: " + msg
	}
	fmt.Fprintf(f.ErrOut, "bifrost-migrate: %s\n", msg)
	if code == ExitUsage {
		fmt.Fprintln(f.ErrOut, "Run 'bifrost-migrate --help' for usage.")
	}
	return code
}

// isCobraUsage recognises cobra's own argument errors, which are plain
// errors (unknown command, wrong number of arguments).
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.Contains(msg, "arg(s)") || strings.HasPrefix(msg, "required flag")
}

// notBuilt is what a command that does not exist yet returns: it says so
// and fails, it does not pretend.
func notBuilt(name string) error {
	return fmt.Errorf("%s is not implemented yet in this version of bifrost-migrate", name)
}
