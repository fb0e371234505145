package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	provision "github.com/bifrost/bifrost-migrate/init"
	"github.com/bifrost/bifrost-migrate/internal/ui"
)

// InitOptions are the flags and dependencies of `bifrost-migrate init`.
type InitOptions struct {
	IO
	Database string
	DryRun   bool
	// ContainersFile replaces the embedded definitions when not empty.
	ContainersFile string

	// Connect connects to the Cosmos DB account and, withBlobs (the
	// layout has blob containers), to Blob Storage, each checked to
	// answer; it is called only after the definitions are valid.
	Connect func(ctx context.Context, withBlobs bool) (initServices, error)
	// out is the command's output, once initRun made it: the start-up
	// checks say there what they wait for.
	out *ui.Output
}

// initServices are what InitOptions.Connect returns: the provisioners and
// where they work, without secrets.
type initServices struct {
	cosmos provision.Cosmos
	blobs  provision.Blobs
	where  string
}

// initFlags are the flags of init: --dry-run and --containers.
type initFlags struct{ o *InitOptions }

func (i initFlags) bind(fl *pflag.FlagSet) {
	fl.BoolVar(&i.o.DryRun, "dry-run", false, "print the plan and write nothing")
	fl.StringVar(&i.o.ContainersFile, "containers", "", "JSON `FILE` of container definitions replacing the built-in ones")
}

// validate leaves the file to loadLayout, which reads it once.
func (i initFlags) validate() error { return nil }

// NewCmdInit builds `bifrost-migrate init`. runF replaces the command's
// work in tests; nil means initRun.
func NewCmdInit(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	opts.Connect = func(ctx context.Context, withBlobs bool) (initServices, error) {
		return connectInit(ctx, f, opts.Database, withBlobs, opts.out)
	}
	c := newCommand(initDoc, func(c *cobra.Command) error {
		opts.IO, opts.Database = f.IO(), f.Global.Database
		return runWith(c, opts, runF, initRun)
	})
	addFlags(c, initFlags{opts})
	return c
}

// connectInit connects to the accounts of f that init provisions: Cosmos
// DB (database), then, when withBlobs, Blob Storage; the first that fails
// its check ends it. The checks say on out what they wait for.
func connectInit(ctx context.Context, f *Factory, database string, withBlobs bool, out *ui.Output) (initServices, error) {
	c, err := connect(ctx, f, needs{uses: cosmosRead, database: database, provisions: true, out: out})
	if err != nil {
		return initServices{}, err
	}
	s := initServices{cosmos: azure.NewProvisionCosmos(c.client), where: describeCosmos(c.cosmos, database)}
	if !withBlobs {
		return s, nil
	}
	b, err := connect(ctx, f, needs{uses: blobsRead, blobContainer: fixtures.BlobContainer, provisions: true, out: out})
	if err != nil {
		return initServices{}, err
	}
	s.blobs = azure.NewProvisionBlobs(b.blobs, b.azopts)
	s.where += fmt.Sprintf(", blobs %s (account %s, %s)", b.blobs.BlobEndpoint, b.blobs.Name, b.blobs.Auth())
	return s, nil
}

// initDoc is the help of `bifrost-migrate init`.
var initDoc = cmdDoc{
	use:   "init [--dry-run] [--containers FILE]",
	short: "Create or converge the database, its containers and the blob container",
	long: `Provision from declarative definitions (Bifrost's, embedded; or your own
layout with --containers FILE): create what is missing, replace a differing
indexing policy or default TTL and print the difference. A differing
partition key cannot change in place (exit 1). Definitions are validated
before any request; a second init changes nothing.`,
	example: `  bifrost-migrate init --dry-run
  bifrost-migrate init
  bifrost-migrate init --containers my-layout.json --database bifrost-test`,
}

// initRun validates the definitions, plans against the accounts and, unless
// a dry run, applies the plan; then prints the result.
func initRun(ctx context.Context, opts *InitOptions) error {
	o := opts.output("init")
	opts.out = o
	layout, err := loadLayout(ctx, opts.ContainersFile)
	if err != nil {
		return err
	}
	svc, err := opts.Connect(ctx, len(layout.BlobContainers) > 0)
	if err != nil {
		return err
	}
	p := provision.Provisioner{Cosmos: svc.cosmos, Blobs: svc.blobs, Database: opts.Database}
	o.Status("%s", svc.where)

	plan, err := p.Plan(ctx, layout)
	if err != nil {
		return err
	}
	if !opts.DryRun && plan.Changes() > 0 {
		if err := p.Apply(ctx, plan); err != nil {
			return err
		}
	}
	if opts.DryRun {
		o.Status("dry run, nothing was written")
	}
	if o.JSON() {
		return writeInitJSON(o.Lines(), plan, opts.DryRun)
	}
	return writeInitText(opts.Out, plan, opts.DryRun)
}

// loadLayout reads and validates the definitions: the file
// (readContainers), or the embedded defaults. A file that cannot be read
// is a usage error (the flag names it); one larger than
// maxContainersFile, or definitions that do not parse or validate, are an
// InputError: both exit 2, nothing was sent, the input must be fixed. A
// cancelled ctx (SIGINT) ends a read that waits (a FIFO nobody writes to).
func loadLayout(ctx context.Context, file string) (provision.Layout, error) {
	data := provision.DefaultLayoutJSON()
	name := "built-in definitions"
	if file != "" {
		var err error
		if data, err = readContainers(ctx, file); err != nil {
			return provision.Layout{}, err
		}
		name = file
	}
	layout, err := provision.Parse(data)
	if err != nil {
		return layout, InputError(fmt.Errorf("%s: %w", name, err))
	}
	if err := layout.Validate(); err != nil {
		return layout, InputError(fmt.Errorf("%s: %w", name, err))
	}
	return layout, nil
}

// maxContainersFile is the most init reads of --containers FILE: a
// layout is a few kilobytes, and a wrong file (a device such as
// /dev/zero, a log) must not fill the memory before it is refused.
const maxContainersFile = 4 << 20

// errTooLarge is readAtMost's error for a file larger than its limit.
var errTooLarge = errors.New("larger than the limit")

// readContainers reads --containers file, at most maxContainersFile bytes.
// Opening and reading happen in a goroutine so that a cancelled ctx
// returns at once even while they wait: open(2) of a FIFO blocks until a
// writer comes, and a read until it writes, and neither can be
// interrupted. The goroutine is then left blocked until the process ends,
// which it does right after (init is one read and a few requests); what
// it holds is bounded by the limit.
func readContainers(ctx context.Context, file string) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := readAtMost(file, maxContainersFile)
		done <- result{data, err}
	}()
	select {
	case <-ctx.Done():
		return nil, interrupted(fmt.Sprintf("--containers %s was not read to its end; nothing was sent, run init again", file), ctx.Err())
	case r := <-done:
		switch {
		case errors.Is(r.err, errTooLarge):
			return nil, InputError(fmt.Errorf("--containers %s: larger than %d MiB; give the JSON file of container definitions (a few kilobytes)", file, maxContainersFile>>20))
		case r.err != nil:
			return nil, UsageError(fmt.Errorf("--containers %s: %v", file, unwrapPath(r.err)))
		}
		return r.data, nil
	}
}

// readAtMost returns the content of file, or errTooLarge when it holds
// more than limit bytes (it reads limit+1 of them to know).
func readAtMost(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(data)) > limit:
		return nil, errTooLarge
	}
	return data, nil
}

func ttlColumn(c *provision.Container) string {
	switch {
	case c == nil:
		return "-"
	case c.DefaultTTL == nil:
		return "off"
	default:
		return fmt.Sprint(*c.DefaultTTL)
	}
}

func pkColumn(c *provision.Container) string {
	if c == nil {
		return "-"
	}
	return strings.Join(c.PartitionKey.Paths, ",")
}

func writeInitText(w io.Writer, plan *provision.Plan, dryRun bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tNAME\tPARTITION KEY\tTTL\tACTION")
	for _, s := range plan.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Kind, s.Name, pkColumn(s.Container), ttlColumn(s.Container), s.Action)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range plan.Steps {
		for _, d := range s.Differences {
			fmt.Fprintf(w, "%s: %s\n", s.Name, d)
		}
	}
	var err error
	switch n := plan.Changes(); {
	case n == 0:
		_, err = fmt.Fprintln(w, "no changes")
	case dryRun:
		_, err = fmt.Fprintf(w, "dry run: %d change(s) planned, nothing written\n", n)
	default:
		_, err = fmt.Fprintf(w, "%d change(s) applied\n", n)
	}
	return err
}

// initResource is one resource in `init --output json`.
type initResource struct {
	Kind         string          `json:"kind"`
	Name         string          `json:"name"`
	PartitionKey string          `json:"partitionKey,omitempty"`
	DefaultTTL   json.RawMessage `json:"defaultTtl,omitempty"` // containers only: seconds, or null when off
	Action       string          `json:"action"`
	Differences  []string        `json:"differences,omitempty"`
}

// writeInitJSON prints the plan (or what was applied) as one summary line.
func writeInitJSON(lines *ui.JSONLines, plan *provision.Plan, dryRun bool) error {
	out := struct {
		Database  string         `json:"database"`
		DryRun    bool           `json:"dryRun"`
		Changes   int            `json:"changes"`
		Resources []initResource `json:"resources"`
	}{Database: plan.Database, DryRun: dryRun, Changes: plan.Changes()}
	for _, s := range plan.Steps {
		r := initResource{Kind: string(s.Kind), Name: s.Name, Action: string(s.Action), Differences: s.Differences}
		if s.Container != nil {
			r.PartitionKey = pkColumn(s.Container)
			r.DefaultTTL = json.RawMessage("null")
			if s.Container.DefaultTTL != nil {
				r.DefaultTTL = json.RawMessage(fmt.Sprint(*s.Container.DefaultTTL))
			}
		}
		out.Resources = append(out.Resources, r)
	}
	return lines.Emit(ui.LineSummary, out)
}
