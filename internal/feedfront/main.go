// Command feedfront serves a Cosmos DB change feed in front of the local
// Cosmos DB stand-in (the npm package @vercel/cosmosdb-server), which has
// none, so that `reverse` and `reverse --follow` run on the local stack as
// against Azure Cosmos DB. It is the fault proxy's change-feed simulation
// (internal/faultproxy, Config.ChangeFeed) on a port of its own, with no
// fault: every other request is forwarded to the stand-in unchanged, and
// the account's announced locations point at the front, so that a client
// given the front's address keeps talking through it.
//
//	go run ./internal/feedfront --target http://127.0.0.1:8081/ [--addr 127.0.0.1:8082] [--ranges N]
//
// The target is plain http://, as the emulators script starts the
// stand-in (the Cosmos DB Linux emulator and Azure Cosmos DB serve a real
// change feed and need no front).
//
// Once it listens it prints one line on stdout, "feedfront: serving URL
// (change feed of TARGET, N feed range(s))", and serves until SIGINT or
// SIGTERM (exit 0). Exit 2 on a bad flag, 1 when it cannot listen.
//
// The simulation reads the stand-in's docs whenever a change feed is asked
// for (so docs written straight to the stand-in come too) and keeps its
// modification log in memory: a restarted front starts a new log, whose
// continuations do not follow the old one's (a client holding an old
// continuation misses changes: restart it from its start time).
// internal/faultproxy/changefeed.go says what it does not model. The
// emulators script (scripts/emulators.sh) starts it after the stand-in and
// exports BIFROST_COSMOS_FEED_CONNECTION for it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are feedfront's flags.
type options struct {
	target string
	addr   string
	ranges int
}

// errPrinted is parse's error when the flag package already printed the
// error and the usage on stderr.
var errPrinted = errors.New("usage printed")

// parse reads the flags; its error, but errPrinted, is the line to print.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("feedfront", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.target, "target", "", "the Cosmos DB stand-in's base URL, http://HOST:PORT/ (required)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "the address to listen on, host:port (port 0: a free one)")
	fs.IntVar(&o.ranges, "ranges", 1, "the number of feed ranges every container announces (1 to 64)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errPrinted
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.target == "" {
		return o, errors.New("--target is required: the Cosmos DB stand-in's base URL, e.g. http://127.0.0.1:8081/")
	}
	// The stand-in is started without TLS; the Linux emulator and Azure
	// Cosmos DB serve a change feed of their own and need no front.
	if u, err := url.Parse(o.target); err != nil || u.Scheme != "http" || u.Host == "" {
		return o, fmt.Errorf("--target %q is not an http:// URL (the stand-in, started with --no-ssl)", o.target)
	}
	if o.ranges < 1 || o.ranges > 64 {
		return o, fmt.Errorf("--ranges %d is not in 1..64", o.ranges)
	}
	return o, nil
}

// run serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errPrinted) {
			fmt.Fprintf(stderr, "feedfront: %v\n", err)
		}
		return 2
	}
	p, err := faultproxy.Start(faultproxy.Config{
		Target:     o.target,
		Addr:       o.addr,
		ChangeFeed: &faultproxy.ChangeFeed{Ranges: o.ranges},
	})
	if err != nil {
		fmt.Fprintf(stderr, "feedfront: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "feedfront: serving %s (change feed of %s, %d feed range(s))\n", p.URL(), o.target, o.ranges)
	<-ctx.Done()
	if err := p.Close(); err != nil {
		fmt.Fprintf(stderr, "feedfront: %v\n", err)
		return 1
	}
	return 0
}
