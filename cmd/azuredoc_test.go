package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docCommandLines returns the bifrost-migrate command lines of the
// markdown text md, each as its arguments (after "bifrost-migrate"),
// with where it was found: every line of a fenced code block that starts
// with `bifrost-migrate ` (a line ending in `\` continued by the next;
// the words up to an unquoted `#`, `|`, `&&`, `;`, `&` or `>`), and every
// `args: [...]` of a YAML block, the container's arguments to the image's
// entry point bifrost-migrate.
func docCommandLines(t *testing.T, md string) (lines [][]string, where []string) {
	t.Helper()
	argsRE := regexp.MustCompile(`^\s*(?:-\s+)?args:\s*(\[.*\])\s*$`)
	inBlock := false
	var pending string
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock, pending = !inBlock, ""
			continue
		}
		if !inBlock {
			continue
		}
		if m := argsRE.FindStringSubmatch(line); m != nil {
			var args []string
			if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
				t.Errorf("line %d: args %s is not a list of strings: %v", i+1, m[1], err)
				continue
			}
			lines, where = append(lines, args), append(where, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(line)))
			continue
		}
		if pending != "" {
			line = pending + " " + strings.TrimSpace(line)
			pending = ""
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		text := strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		if !strings.HasPrefix(text, "bifrost-migrate ") && text != "bifrost-migrate" {
			continue
		}
		words, err := shellWords(text)
		if err != nil {
			t.Errorf("line %d: %v: %s", i+1, err, text)
			continue
		}
		lines, where = append(lines, words[1:]), append(where, fmt.Sprintf("line %d: %s", i+1, text))
	}
	return lines, where
}

// shellWords splits a command line into words as a shell would for the
// simple lines of the docs: quotes ('…', "…") group, and the line ends at
// an unquoted #, |, &, ; or > that starts a word.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool
		quote rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inW = r, true
		case r == ' ' || r == '\t':
			if inW {
				words, inW = append(words, cur.String()), false
				cur.Reset()
			}
		case !inW && strings.ContainsRune("#|&;>", r):
			return words, nil
		default:
			cur.WriteRune(r)
			inW = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c", quote)
	}
	if inW {
		words = append(words, cur.String())
	}
	return words, nil
}

// checkCommandLine parses args as bifrost-migrate would: it finds the
// command, parses its flags (unknown flags and missing values are
// errors), refuses arguments the command does not take, and validates
// the flags' values as the command does before it runs (PreRunE). It
// runs nothing.
func checkCommandLine(args []string) error {
	f, _, _ := newTestFactory(nil)
	root := NewRootCmd(f)
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if c == root {
		return fmt.Errorf("no command")
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return err
	}
	if c.PreRunE != nil {
		return c.PreRunE(c, c.Flags().Args())
	}
	return nil
}

// Every bifrost-migrate command line of docs/azure.md, the jobs' args
// included, is one the tool accepts.
func TestAzureDocCommandLines(t *testing.T) {
	md, err := os.ReadFile("../docs/azure.md")
	if err != nil {
		t.Fatal(err)
	}
	lines, where := docCommandLines(t, string(md))
	var args int
	for i, l := range lines {
		if strings.Contains(where[i], "args:") {
			args++
		}
		if err := checkCommandLine(l); err != nil {
			t.Errorf("docs/azure.md %s\n  bifrost-migrate %s: %v", where[i], strings.Join(l, " "), err)
		}
	}
	if len(lines)-args < 2 || args < 6 {
		t.Errorf("found %d command lines and %d args lists in docs/azure.md, want at least 2 and 6:\n%s", len(lines)-args, args, strings.Join(where, "\n"))
	}
}

// The checker itself refuses what the tool refuses.
func TestDocCommandLineChecker(t *testing.T) {
	md := "text bifrost-migrate --bogus is prose\n```sh\n" +
		"bifrost-migrate run --dry-run --max-ru 2000   # a comment\n" +
		"bifrost-migrate --output json verify \\\n  --report 'a b.json' | jq .\n" +
		"bifrost-migrate run --bogus\n" +
		"bifrost-migrate runn\n" +
		"bifrost-migrate verify extra\n" +
		"bifrost-migrate replay --since\n" +
		"bifrost-migrate run --execution-ttl forever\n" +
		"```\n```yaml\n" +
		`        args: ["replay", "--since", "2026-11-20T14:00:00Z", "--follow"]` + "\n" +
		`  - args: ["reverse", "--follow", "--dry-run", "--since", "2026-11-20T14:00:00Z"]` + "\n```\n"
	lines, where := docCommandLines(t, md)
	want := []bool{true, true, false, false, false, false, false, true, false}
	if len(lines) != len(want) {
		t.Fatalf("found %d lines, want %d:\n%s", len(lines), len(want), strings.Join(where, "\n"))
	}
	if got := strings.Join(lines[1], " "); got != "--output json verify --report a b.json" {
		t.Errorf("continued line: %q", got)
	}
	for i, l := range lines {
		if err := checkCommandLine(l); (err == nil) != want[i] {
			t.Errorf("%s: accepted %v (%v), want %v", where[i], err == nil, err, want[i])
		}
	}
}
