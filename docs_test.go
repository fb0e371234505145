package main

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks: every link of every Markdown file in the repository
// (README.md, docs/, init/README.md, …) points at a file of the
// repository that exists, and a link with a #fragment at a heading of
// that file, as GitHub makes anchors. A link that leaves the repository
// (an http URL, ../ above the root) fails too: the README and docs/ send
// no reader elsewhere.
func TestDocLinks(t *testing.T) {
	files := markdownFiles(t, ".")
	if len(files) < 3 {
		t.Fatalf("found %d Markdown files, want README.md and docs/: %v", len(files), files)
	}
	links := 0
	for _, f := range files {
		problems, n := checkLinks(f)
		links += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if links < 20 {
		t.Errorf("found %d links in %d files, want the README's and docs' links", links, len(files))
	}
}

// TestDocLinksFindBrokenOnes: the check itself, on a file written here.
func TestDocLinksFindBrokenOnes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.md", "# B: the `_page`\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n")
	write("a.md", strings.Join([]string{
		"# A",
		"[ok](b.md) [ok](b.md#b-the-_page) [ok](b.md#twice-1) [ok](#a)",
		"[wrapped",
		"text](b.md#twice) `[in code](nowhere.md)`",
		"[missing](c.md)",
		"[no such anchor](b.md#twice-2)",
		"[code is no heading](b.md#not-a-heading)",
		"[out](https://example.com/x)",
		"[above the root](../x.md)",
		"```",
		"[in a code block](nowhere.md)",
		"```",
	}, "\n"))
	t.Chdir(dir)
	got, n := checkLinks("a.md")
	want := []string{
		`a.md:5: link "c.md": no such file`,
		`a.md:6: link "b.md#twice-2": b.md has no heading with the anchor #twice-2`,
		`a.md:7: link "b.md#not-a-heading": b.md has no heading with the anchor #not-a-heading`,
		`a.md:8: link "https://example.com/x": points outside the repository`,
		`a.md:9: link "../x.md": points outside the repository`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || n != 10 {
		t.Errorf("checkLinks found %d links and:\n%s\nwant 10 and:\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGitHubAnchor: headings of this repository's pages and the anchors
// GitHub gives them.
func TestGitHubAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Provenance: `_migration` and its hash", "provenance-_migration-and-its-hash"},
		{"Try it — two commands", "try-it--two-commands"},
		{"3. Roll back to the tables: `reverse`", "3-roll-back-to-the-tables-reverse"},
		{"Retention (ttl)", "retention-ttl"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"Größe & Ümlaut", "größe--ümlaut"},
	} {
		if got := githubAnchor(tc.heading); got != tc.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// markdownFiles lists the .md files under root, hidden folders and
// dist/ left out.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "dist" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	// mdLink is an inline link or image: [text](target "title"); the
	// text may wrap over lines.
	mdLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// atxHeading is a heading line: up to 3 spaces, 1 to 6 #, text.
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
)

// prose returns the file's text with fenced code blocks blanked and
// inline code removed, line numbers kept.
func prose(text string) string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines[i] = ""
		}
	}
	return withoutCodeSpans(strings.Join(lines, "\n"))
}

// withoutCodeSpans returns text with its inline code removed (each span
// replaced by its line breaks): a run of n backticks to the next run of
// exactly n within the paragraph. A run without its match is text.
func withoutCodeSpans(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '`' {
			b.WriteByte(text[i])
			i++
			continue
		}
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(text); {
			if strings.HasPrefix(text[j:], "\n\n") {
				break
			}
			if text[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(text) && text[j+m] == '`' {
				m++
			}
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			b.WriteString(text[i : i+n])
			i += n
			continue
		}
		b.WriteString(strings.Repeat("\n", strings.Count(text[i:end], "\n")))
		i = end
	}
	return b.String()
}

// checkLinks returns a line per broken link of the Markdown file name
// (a path relative to the repository's root, the working directory) and
// how many links it checked.
func checkLinks(name string) (problems []string, links int) {
	b, err := os.ReadFile(name)
	if err != nil {
		return []string{err.Error()}, 0
	}
	text := prose(string(b))
	for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
		links++
		target := text[m[2]:m[3]]
		line := 1 + strings.Count(text[:m[0]], "\n")
		if why := checkTarget(name, target); why != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", filepath.ToSlash(name), line, target, why))
		}
	}
	return problems, links
}

// checkTarget says what is wrong with the link target of the file from,
// or "" when it points at an existing file and heading.
func checkTarget(from, target string) string {
	if strings.Contains(target, ":") {
		return "points outside the repository"
	}
	path, frag, _ := strings.Cut(target, "#")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	file := from
	if path != "" {
		file = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
	}
	if rel := filepath.ToSlash(filepath.Clean(file)); rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(file) {
		return "points outside the repository"
	}
	if _, err := os.Stat(file); err != nil {
		return "no such file"
	}
	if frag == "" {
		return ""
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.HasSuffix(file, ".md") {
		return fmt.Sprintf("#%s in a file that is not Markdown", frag)
	}
	if !anchors(string(b))[frag] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", filepath.ToSlash(filepath.Clean(file)), frag)
	}
	return ""
}

// anchors returns the anchors GitHub makes for the headings of a
// Markdown text (not those in code blocks): a repeated one gets -1, -2, ….
func anchors(text string) map[string]bool {
	lines := strings.Split(text, "\n")
	fence := ""
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// githubAnchor is the anchor GitHub gives a heading: its text (links
// as their text, code without backticks), lower-case, letters, digits,
// '-' and '_' kept, each space a '-', everything else dropped.
func githubAnchor(heading string) string {
	heading = mdLink.ReplaceAllStringFunc(heading, func(s string) string {
		return s[1:strings.Index(s, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
