package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
)

// TestCommandLineErrorsAreUsageErrors: cobra's errors about the command
// line (an unknown command, an argument a command does not take) are
// usage errors by type, wrapped where cobra makes them, in one sentence
// with cobra's suggestion; no message is read to find their exit code.
func TestCommandLineErrorsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rn"}, "bifrost-migrate: unknown command \"rn\" for \"bifrost-migrate\"; did you mean run?\nRun 'bifrost-migrate --help' for usage.\n"},
		{[]string{"verfy", "--sample", "0.1"}, "bifrost-migrate: unknown command \"verfy\" for \"bifrost-migrate\"; did you mean verify?\nRun 'bifrost-migrate --help' for usage.\n"},
		{[]string{"completion", "bash", "extra"}, "bifrost-migrate: unknown command \"extra\" for \"bifrost-migrate completion bash\"\nRun 'bifrost-migrate completion bash --help' for usage.\n"},
	} {
		f, out, errOut := newTestFactory(nil)
		if code := Execute(context.Background(), f, tc.args); code != ExitUsage || out.Len() != 0 || errOut.String() != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
	// Every command's check of its arguments returns a usage error.
	f, _, _ := newTestFactory(nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			var ee *ExitError
			if err := c.Args(c, []string{"surplus"}); err != nil && (!errors.As(err, &ee) || ee.Code != ExitUsage) {
				t.Errorf("%s: %v is not a usage error", c.CommandPath(), err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(f))
}

// TestNoArgumentsIsHelp: the root command without arguments prints its
// help and exits 0.
func TestNoArgumentsIsHelp(t *testing.T) {
	f, out, errOut := newTestFactory(nil)
	if code := Execute(context.Background(), f, nil); code != ExitOK || errOut.Len() != 0 || out.Len() == 0 {
		t.Errorf("exit %d, stderr %q, stdout %d bytes; want exit 0 and the help", code, errOut, out.Len())
	}
}

// TestInterruptSentenceByType: the sentence of an interrupted command
// (exit 130) comes from its error's type: the command's own message
// (interrupted), what to do for a bare cancellation however it is
// wrapped, and any other error as it is; no text is cut out of a
// message.
func TestInterruptSentenceByType(t *testing.T) {
	f, _, _ := newTestFactory(nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{interrupted("state saved in s; run again to resume", fmt.Errorf("read page: %w", context.Canceled)),
			"interrupted: state saved in s; run again to resume"},
		{fmt.Errorf("init: %w", interrupted("nothing was sent, run init again", context.Canceled)),
			"interrupted: init: nothing was sent, run init again"},
		{&azure.ResourceError{Resource: configTable, Op: "table Config",
			Err: &url.Error{Op: "Get", URL: tablesEP + "/Config()", Err: context.Canceled}},
			"interrupted: stopped before it finished; run the same command again"},
		{errors.New("state.json: no space left on device"), "interrupted: state.json: no space left on device"},
	} {
		if got := errorText(f, tc.err, ExitInterrupted); got != "bifrost-migrate: "+tc.want+"\n" {
			t.Errorf("%v:\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
}
