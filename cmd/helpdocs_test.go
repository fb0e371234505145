package cmd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpLearnMorePagesExist: every page a command's help sends the
// reader to ("Learn more: docs/operations.md …") is in the repository.
func TestHelpLearnMorePagesExist(t *testing.T) {
	page := regexp.MustCompile(`[\w./-]+\.md`)
	pages := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		f, out, errOut := newTestFactory(nil)
		path := append(strings.Fields(c.CommandPath())[1:], "--help")
		if code := Execute(context.Background(), f, path); code != ExitOK {
			t.Fatalf("%s --help: exit %d: %s", c.CommandPath(), code, errOut)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			more, ok := strings.CutPrefix(line, "Learn more: ")
			if !ok {
				continue
			}
			for _, p := range page.FindAllString(more, -1) {
				pages++
				if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
					t.Errorf("%s --help: Learn more names %s, which is not in the repository", c.CommandPath(), p)
				}
			}
		}
	}
	f, _, _ := newTestFactory(nil)
	walk(NewRootCmd(f))
	if pages < 8 {
		t.Errorf("the help texts name %d pages, want every command's", pages)
	}
}
