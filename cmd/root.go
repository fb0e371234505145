// Package cmd is the command line of bifrost-migrate: one file per
// subcommand. Each binds its flags into an Options struct and calls a
// package that does the work; errors become exit codes and sentences in
// one place (errors.go: exitCode and errorMessage, by the error's type).
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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bifrost/bifrost-migrate/azure"
	provision "github.com/bifrost/bifrost-migrate/init"
	"github.com/bifrost/bifrost-migrate/internal/memlimit"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/verify"
)

// Factory is what every command needs from the outside world. Main fills it
// from the process; tests fill it with buffers, a fixed clock and their own
// environment.
type Factory struct {
	In     io.Reader
	Out    io.Writer // data: summaries, reports, plans
	ErrOut io.Writer // status, progress, errors
	// ErrIsTerminal reports whether ErrOut is a terminal (the progress
	// bar); ErrWidth, when not nil, its columns now.
	ErrIsTerminal func() bool
	ErrWidth      func() int
	// Now is the command's clock: the time it computes with (ttls, the
	// start of a run, the UpdatedAt of a status row).
	Now func() time.Time
	// ServiceNow, when not nil, replaces time.Now as the time the services
	// stamp their changes with (a row's Timestamp, a doc's _ts): a --since
	// later than it reads nothing. Tests fix Now in the past while the
	// emulators stamp the real time, so the two are apart.
	ServiceNow func() time.Time
	Getenv     func(string) string
	// Transport, when not nil, carries every HTTP request (tests: recording
	// or fault-injecting transports).
	Transport http.RoundTripper
	// Credential, when not nil, replaces DefaultAzureCredential for the
	// accounts reached with Entra ID (tests: a token stand-in).
	Credential azcore.TokenCredential
	// ReportFormats are the formats verify's --report offers; nil means
	// verify.Formats() (tests add one).
	ReportFormats []verify.Format

	Global GlobalOptions

	// log is --log-file, open while a command runs; nil without it.
	log *ui.LogFile
	// metrics, when not nil, count and time every request of the
	// command's clients (--metrics-addr).
	metrics *ui.Metrics
	// args is the command line Execute runs, for the log; command is the
	// path of the command it found ("bifrost-migrate run"), whose help a
	// usage error points at.
	args    []string
	command string
}

// GlobalOptions are the flags every command shares (SPEC §1).
type GlobalOptions struct {
	TablesConnection string
	TablesEndpoint   string
	BlobConnection   string
	BlobEndpoint     string
	CosmosConnection string
	CosmosEndpoint   string
	Database         string
	Output           string
	Quiet            bool
	Verbose          bool
	// RetryTimeout bounds how long one request to any service is retried
	// (--retry-timeout, SPEC §11).
	RetryTimeout time.Duration
	// LogFile receives a timestamped log of the command (--log-file).
	LogFile string
}

// serviceNow is the time the services stamp changes with now
// (Factory.ServiceNow).
func (f *Factory) serviceNow() time.Time {
	if f.ServiceNow != nil {
		return f.ServiceNow()
	}
	return time.Now()
}

// reportFormats are the formats verify's --report offers: ReportFormats,
// else verify.Formats().
func (f *Factory) reportFormats() []verify.Format {
	if f.ReportFormats != nil {
		return f.ReportFormats
	}
	return verify.Formats()
}

// JSON reports whether --output json was chosen.
func (g GlobalOptions) JSON() bool { return g.Output == "json" }

// storageSource is a storage service's setting as it was given: a
// connection string or an endpoint (Entra ID), and the flag or
// environment variable that gave it, which its errors name.
type storageSource struct {
	conn, endpoint, from string
}

// storageSetting picks a storage service's setting: a connection string
// or an endpoint (Entra ID). The flags come first (both is a usage
// error), then the environment's connection string, then its endpoint.
// It returns the zero storageSource when nothing is set.
func (f *Factory) storageSetting(conn, endpoint, connFlag, endpointFlag, connEnv, endpointEnv string) (storageSource, error) {
	switch {
	case conn != "" && endpoint != "":
		return storageSource{}, UsageError(fmt.Errorf("%s and %s exclude each other", connFlag, endpointFlag))
	case conn != "":
		return storageSource{conn: conn, from: connFlag}, nil
	case endpoint != "":
		return storageSource{endpoint: endpoint, from: endpointFlag}, nil
	case f.Getenv(connEnv) != "":
		return storageSource{conn: f.Getenv(connEnv), from: connEnv}, nil
	case f.Getenv(endpointEnv) != "":
		return storageSource{endpoint: f.Getenv(endpointEnv), from: endpointEnv}, nil
	}
	return storageSource{}, nil
}

// account parses the setting as the account of the tables (tables) or
// of the blobs; a usage error names s.from. A connection string that
// gives the other service's endpoint only (a SAS for one service) leaves
// this one's empty: that is an error for the blobs' own setting, which
// says what to add to it; the tables' account is checked by its callers
// (Storage, BlobStorage), since blobs may use it.
func (s storageSource) account(tables bool) (azure.StorageAccount, error) {
	var (
		a   azure.StorageAccount
		err error
	)
	switch {
	case s.endpoint != "" && tables:
		a, err = azure.StorageEndpoints(s.endpoint, "")
	case s.endpoint != "":
		a, err = azure.StorageEndpoints("", s.endpoint)
	default:
		a, err = azure.ParseStorageConnection(s.conn)
	}
	if err != nil {
		return a, UsageError(fmt.Errorf("%s: %w", s.from, err))
	}
	if !tables && a.BlobEndpoint == "" {
		return a, UsageError(fmt.Errorf("%s has no BlobEndpoint, nor an AccountName to derive it from: add BlobEndpoint=https://<account>.blob.core.windows.net to it", s.from))
	}
	return a, nil
}

// tablesSource is the Table Storage setting: --tables-connection, or
// --tables-endpoint (Entra ID), or BIFROST_TABLES_CONNECTION,
// BIFROST_TABLES_ENDPOINT, AzureWebJobsStorage, or the local Azurite.
func (f *Factory) tablesSource() (storageSource, error) {
	s, err := f.storageSetting(f.Global.TablesConnection, f.Global.TablesEndpoint,
		"--tables-connection", "--tables-endpoint", "BIFROST_TABLES_CONNECTION", "BIFROST_TABLES_ENDPOINT")
	switch {
	case err != nil || s.from != "":
		return s, err
	case f.Getenv("AzureWebJobsStorage") != "":
		return storageSource{conn: f.Getenv("AzureWebJobsStorage"), from: "AzureWebJobsStorage"}, nil
	}
	return storageSource{conn: azure.DevStorageConnection, from: "the emulator's settings"}, nil
}

// Storage returns the Table Storage account (tablesSource). A connection
// string without a TableEndpoint (a SAS for the blobs only) is a usage
// error that says what to add to it.
func (f *Factory) Storage() (azure.StorageAccount, error) {
	s, err := f.tablesSource()
	if err != nil {
		return azure.StorageAccount{}, err
	}
	a, err := s.account(true)
	if err == nil && a.TableEndpoint == "" {
		err = UsageError(fmt.Errorf("%s has no TableEndpoint, nor an AccountName to derive it from: add TableEndpoint=https://<account>.table.core.windows.net to it", s.from))
	}
	return a, err
}

// BlobStorage returns the Blob Storage account: --blob-connection, or
// --blob-endpoint (Entra ID), or BIFROST_BLOB_CONNECTION,
// BIFROST_BLOB_ENDPOINT, or the tables account. A tables account without
// a blob endpoint (an endpoint that does not say it, a SAS for the tables
// only) is a usage error that names the settings that give one.
func (f *Factory) BlobStorage() (azure.StorageAccount, error) {
	s, err := f.storageSetting(f.Global.BlobConnection, f.Global.BlobEndpoint,
		"--blob-connection", "--blob-endpoint", "BIFROST_BLOB_CONNECTION", "BIFROST_BLOB_ENDPOINT")
	if err != nil {
		return azure.StorageAccount{}, err
	}
	if s.from != "" {
		return s.account(false)
	}
	if s, err = f.tablesSource(); err != nil {
		return azure.StorageAccount{}, err
	}
	a, err := s.account(true)
	switch {
	case err != nil || a.BlobEndpoint != "":
		return a, err
	case s.endpoint != "":
		return a, UsageError(fmt.Errorf("the blob endpoint of the tables account %s cannot be derived: give --blob-endpoint or --blob-connection", a.TableEndpoint))
	}
	return a, UsageError(fmt.Errorf("%s has no BlobEndpoint, and blobs use the tables connection unless given their own: "+
		"give the blob account with --blob-connection or BIFROST_BLOB_CONNECTION (or --blob-endpoint), or add BlobEndpoint=https://<account>.blob.core.windows.net to %s", s.from, s.from))
}

// Cosmos returns the Cosmos DB account: --cosmos-connection or
// CosmosDBConnection (with a key); else --cosmos-endpoint or
// BIFROST_COSMOS_ENDPOINT (Entra ID); else the local emulator. A usage
// error names the setting at fault.
func (f *Factory) Cosmos() (azure.CosmosAccount, error) {
	if f.Global.CosmosConnection != "" && f.Global.CosmosEndpoint != "" {
		return azure.CosmosAccount{}, UsageError(errors.New("--cosmos-connection and --cosmos-endpoint exclude each other"))
	}
	var (
		a    azure.CosmosAccount
		err  error
		from string
	)
	switch {
	case f.Global.CosmosEndpoint != "":
		from = "--cosmos-endpoint"
		a, err = azure.CosmosEndpoint(f.Global.CosmosEndpoint)
	case f.Global.CosmosConnection != "":
		from = "--cosmos-connection"
		a, err = azure.ParseCosmosConnection(f.Global.CosmosConnection)
	case f.Getenv("CosmosDBConnection") != "":
		from = "CosmosDBConnection"
		a, err = azure.ParseCosmosConnection(f.Getenv("CosmosDBConnection"))
	case f.Getenv("BIFROST_COSMOS_ENDPOINT") != "":
		from = "BIFROST_COSMOS_ENDPOINT"
		a, err = azure.CosmosEndpoint(f.Getenv("BIFROST_COSMOS_ENDPOINT"))
	default:
		a, err = azure.ParseCosmosConnection(azure.EmulatorCosmosConnection)
	}
	if err != nil {
		return a, UsageError(fmt.Errorf("%s: %w", from, err))
	}
	return a, nil
}

// azureOptions are the options of every Azure client a command builds:
// the transport (tests, --verbose) and the retry rule (--retry-timeout).
func (f *Factory) azureOptions() azure.Options {
	o := azure.Options{Transport: f.Transport, Retry: azure.RetryOptions{Timeout: f.Global.RetryTimeout}, Credential: f.Credential}
	if f.metrics != nil {
		o.Transport = f.metrics.Transport(f.Transport)
	}
	if f.log != nil {
		o.Retry.OnRetry = f.log.Retried
	}
	return o
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
func joinAnd(parts []string) string { return joinWith(parts, "and") }

// joinOr joins "a", "a or b", "a, b or c" (for the values a flag takes).
func joinOr(parts []string) string { return joinWith(parts, "or") }

// joinWith joins parts with commas and conj before the last.
func joinWith(parts []string, conj string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " " + conj + " " + parts[len(parts)-1]
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	// Commands in the order of a migration (init, run, verify, replay,
	// reverse), not by name.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "bifrost-migrate",
		Short: "Move Bifrost's data from Azure Table Storage to Azure Cosmos DB, prove it, and back",
		Long: `Provision Cosmos DB (init), migrate the tables Config, Entities and
Relationships into the containers entities and executions (run), prove it
field by field (verify), and after a rollback bring either side up to date
(replay: tables to Cosmos DB; reverse: Cosmos DB to tables), within a
request-unit budget. With no connection settings it works on the local
emulators (Azurite and the Cosmos DB emulator).`,
		Example: `  bifrost-migrate init
  bifrost-migrate run --dry-run
  bifrost-migrate run --max-ru 4000
  bifrost-migrate verify --report verify.html
  bifrost-migrate reverse --since 2026-11-20T14:00:00Z --follow`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable, as fixtures is, so that cobra checks its Args with
		// ours (rootArgs): `bifrost-migrate bogus` is a usage error.
		Args:                       rootArgs,
		SuggestionsMinimumDistance: 2, // cobra's default, which SuggestionsFor does not apply
		RunE:                       func(c *cobra.Command, _ []string) error { return c.Help() },
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			switch f.Global.Output {
			case "text", "json":
			default:
				return badValue("--output", f.Global.Output, "text or json")
			}
			if !provision.ValidID(f.Global.Database) {
				return badValue("--database", f.Global.Database, "a database id of "+provision.IDRule)
			}
			if f.Global.RetryTimeout <= 0 {
				return badValue("--retry-timeout", f.Global.RetryTimeout, "a positive duration such as 30s or 2m")
			}
			if f.Global.Quiet && f.Global.Verbose {
				return UsageError(errors.New("--quiet and --verbose exclude each other"))
			}
			if f.Global.Verbose {
				f.Transport = &ui.VerboseTransport{Next: f.Transport, W: f.ErrOut, Now: f.Now}
			}
			if f.Global.LogFile != "" {
				l, err := ui.OpenLogFile(f.Global.LogFile, f.Now, f.Redact)
				if err != nil {
					return UsageError(fmt.Errorf("--log-file %s: %v", f.Global.LogFile, unwrapPath(err)))
				}
				f.log = l
				l.Printf("start: bifrost-migrate %s", strings.Join(redactArgs(f.args), " "))
				l.Printf("toolVersion: %s", version.Get().Line())
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	// One line each in the help (help.go's groups say the rest):
	// docs/configuration.md has the whole story.
	pf.StringVar(&f.Global.TablesConnection, "tables-connection", "", "Table Storage [$BIFROST_TABLES_CONNECTION, $AzureWebJobsStorage]")
	pf.StringVar(&f.Global.TablesEndpoint, "tables-endpoint", "", "Table Storage [$BIFROST_TABLES_ENDPOINT]")
	pf.StringVar(&f.Global.BlobConnection, "blob-connection", "", "Blob Storage [$BIFROST_BLOB_CONNECTION] (default: the tables')")
	pf.StringVar(&f.Global.BlobEndpoint, "blob-endpoint", "", "Blob Storage [$BIFROST_BLOB_ENDPOINT] (default: the tables')")
	pf.StringVar(&f.Global.CosmosConnection, "cosmos-connection", "", "Cosmos DB [$CosmosDBConnection]")
	pf.StringVar(&f.Global.CosmosEndpoint, "cosmos-endpoint", "", "Cosmos DB [$BIFROST_COSMOS_ENDPOINT]")
	pf.StringVar(&f.Global.Database, "database", "bifrost", "the Cosmos DB database")
	pf.StringVar(&f.Global.Output, "output", "text", "text, or json (a JSON object per line on stdout)")
	pf.BoolVar(&f.Global.Quiet, "quiet", false, "no progress or status lines (warnings, results, errors remain)")
	pf.DurationVar(&f.Global.RetryTimeout, "retry-timeout", azure.DefaultRetryTimeout, "how long to retry a throttled or failing request")
	pf.StringVar(&f.Global.LogFile, "log-file", "", "append a timestamped log of the command to `FILE`")
	pf.BoolVar(&f.Global.Verbose, "verbose", false, "print every request's method, host, path and status on stderr")
	root.SetFlagErrorFunc(flagError)
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	root.SetIn(f.In)

	root.AddCommand(
		NewCmdInit(f, nil),
		NewCmdRun(f, nil),
		NewCmdVerify(f, nil),
		NewCmdReplay(f, nil),
		NewCmdReverse(f, nil),
		NewCmdStatus(f, nil),
		NewCmdFixtures(f),
		NewCmdVersion(f, nil),
		NewCmdMan(f, nil),
	)
	// --version prints what `version` prints (cobra adds the flag, and -v).
	root.Version = version.Get().Text()
	root.SetVersionTemplate("{{.Version}}")
	// cobra's `completion bash|zsh|fish|powershell`, added now rather
	// than when the command line runs, so that its help lists its exit
	// codes like every other command's.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		// Runnable, as fixtures is, so that cobra checks its Args:
		// `completion tcsh` is a usage error, not its help and exit 0.
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		c.Short = "Print the shell completion script: bash, zsh, fish or powershell"
		c.Long = `Print the script that completes bifrost-migrate's commands, flags and
values (--output, --execution-ttl, --relationships, --tables, --since) in
your shell. bash needs the bash-completion package and zsh compinit;
each shell's help says where to put the script.`
		c.Example = `  # bash, this session
  source <(bifrost-migrate completion bash)
  # zsh, every session
  bifrost-migrate completion zsh > "${fpath[1]}/_bifrost-migrate"`
		for _, sh := range c.Commands() {
			sh.Example = "  bifrost-migrate completion " + sh.Name() + " --help"
		}
	}
	setUsageErrors(root)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	addCompletions(root, f)
	return root
}

// setUsageErrors makes cobra's errors about the command line usage
// errors (exit 2), once, where cobra makes them: flagError is the flag
// error function of c and of its subcommands (cobra does not inherit
// it), and each one's check of its arguments is wrapped (usageArgs).
func setUsageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(flagError)
	if c.Args != nil {
		c.Args = usageArgs(c.Args)
	}
	for _, sub := range c.Commands() {
		setUsageErrors(sub)
	}
}

// Main runs bifrost-migrate with the process's arguments and environment
// and returns the exit status. SIGINT, SIGTERM and SIGHUP (a terminal or
// an ssh session that goes away) cancel the root context; commands save
// their state and return, and Main returns 130.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	f := &Factory{
		In:            os.Stdin,
		Out:           os.Stdout,
		ErrOut:        os.Stderr,
		ErrIsTerminal: func() bool { return term.IsTerminal(int(os.Stderr.Fd())) },
		ErrWidth: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
		Now:    time.Now,
		Getenv: os.Getenv,
	}
	// The garbage collector's rule (docs/performance.md, "At any size"):
	// it runs when the heap has grown by the live heap or by 64 MiB,
	// whichever is more; GOMEMLIMIT or GOGC from the user wins.
	memlimit.Start(os.Getenv)
	stopProfile, err := memlimit.StartCPUProfile(os.Getenv("BIFROST_CPU_PROFILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bifrost-migrate:", err)
		return ExitFatal
	}
	code := Execute(ctx, f, os.Args[1:])
	if err := stopProfile(); err != nil {
		fmt.Fprintln(os.Stderr, "bifrost-migrate:", err)
	}
	// For the benchmarks: the collector's share of the work, as the
	// runtime counts it.
	if err := memlimit.WriteCPUClasses(os.Getenv("BIFROST_CPU_CLASSES")); err != nil {
		fmt.Fprintln(os.Stderr, "bifrost-migrate:", err)
	}
	return code
}

// Execute runs the command line args with f and returns the exit status,
// printing any error to f.ErrOut (see errorText) and, with --output json,
// also as the last line on f.Out: {"type":"error","exit":N,"message":…},
// usage errors found before the command ran included.
func Execute(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	f.args = args
	c, err := root.ExecuteContextC(ctx)
	if c != nil {
		f.command = c.CommandPath()
	}
	if f.log != nil {
		if err != nil {
			f.log.Printf("end: %v", err)
		} else {
			f.log.Printf("end: success")
		}
		if cerr := f.log.Close(); err == nil {
			err = cerr
		}
		f.log = nil
	}
	code := exitCode(err, ctx.Err() != nil)
	if err == nil {
		return code
	}
	printError(f, err, code, f.Global.JSON() || outputArg(args) == "json")
	return code
}

// printError prints err, which ends the command with exit status code:
// errorText on f.ErrOut and, when asJSON, the error line with the same
// sentence on f.Out. Failing to write the error line is said on
// f.ErrOut.
func printError(f *Factory, err error, code int, asJSON bool) {
	fmt.Fprint(f.ErrOut, errorText(f, err, code))
	if !asJSON {
		return
	}
	msg, _ := errorMessage(f, err, code)
	if jerr := ui.NewJSONLines(f.Out).Emit(ui.LineError, ui.ErrorLine{Exit: code, Message: msg}); jerr != nil {
		fmt.Fprintf(f.ErrOut, "bifrost-migrate: %s\n", f.Redact(jerr.Error()))
	}
}

// redactArgs returns the command line with the values of the connection
// flags replaced by "***": they may hold keys.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	hide := false
	for i, a := range args {
		switch {
		case hide:
			out[i], hide = "***", false
		case a == "--tables-connection" || a == "--blob-connection" || a == "--cosmos-connection":
			out[i], hide = a, true
		case strings.HasPrefix(a, "--tables-connection=") || strings.HasPrefix(a, "--blob-connection=") || strings.HasPrefix(a, "--cosmos-connection="):
			name, _, _ := strings.Cut(a, "=")
			out[i] = name + "=***"
		default:
			out[i] = a
		}
	}
	return out
}
