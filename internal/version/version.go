// Package version says which build of bifrost-migrate is running: the
// module version, the VCS revision it was built from and that revision's
// time, whether the tree had changes that were not committed, and the Go
// toolchain and platform. It is a leaf: cmd prints it (`version`,
// `--version`, the --log-file header, reports, JSON summaries) and
// migrate writes it into state.json.
//
// The values come from runtime/debug.ReadBuildInfo. A release build
// (scripts/release.sh) sets them with the linker instead, since a build
// from a git worktree or a source archive carries no VCS information:
//
//	go build -ldflags "-X github.com/bifrost/bifrost-migrate/internal/version.version=v1.2.0
//	  -X github.com/bifrost/bifrost-migrate/internal/version.revision=<commit>
//	  -X github.com/bifrost/bifrost-migrate/internal/version.revisionTime=<RFC 3339>
//	  -X github.com/bifrost/bifrost-migrate/internal/version.modified=false"
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by the linker (-ldflags "-X …") in release builds; empty otherwise.
var (
	version      string
	revision     string
	revisionTime string
	modified     string // "true" or "false"
)

// Info describes one build.
type Info struct {
	// Version is the module version: v1.2.0 for a release or a
	// `go install …@v1.2.0`, a pseudo-version or "(devel)" for a build
	// from a checkout.
	Version string
	// Revision is the VCS commit the build was made from; empty when the
	// build carries none.
	Revision string
	// RevisionTime is the commit's time (RFC 3339); empty when unknown.
	RevisionTime string
	// Modified says the tree had uncommitted changes at build time.
	Modified bool
	// Go is the toolchain that built the binary ("go1.26.8").
	Go   string
	OS   string
	Arch string
}

var (
	once sync.Once
	info Info
)

// Get returns the running binary's build information. It is safe for
// concurrent use.
func Get() Info {
	once.Do(func() { info = read(debug.ReadBuildInfo) })
	return info
}

// String is Get().Version: the short form that logs, reports and
// state.json carry.
func String() string { return Get().Version }

// read builds the Info from what readBuildInfo returns, the linker's
// values taking precedence.
func read(readBuildInfo func() (*debug.BuildInfo, bool)) Info {
	i := Info{Version: "(devel)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := readBuildInfo(); ok {
		if bi.Main.Version != "" {
			i.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			i.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.RevisionTime = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		i.Version = version
	}
	if revision != "" {
		i.Revision = revision
		// The linker's revision comes with its own time and state, even
		// when they are empty: never mixed with the build's.
		i.RevisionTime, i.Modified = revisionTime, modified == "true"
	}
	return i
}

// Text is the `version` command's output: the version, then the
// revision with its time and state, then the toolchain and platform.
func (i Info) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bifrost-migrate %s\n", i.Version)
	switch {
	case i.Revision == "":
		b.WriteString("revision: unknown (built without VCS information)\n")
	default:
		fmt.Fprintf(&b, "revision: %s", i.Revision)
		var notes []string
		if i.RevisionTime != "" {
			notes = append(notes, i.RevisionTime)
		}
		if i.Modified {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "go: %s %s/%s\n", i.Go, i.OS, i.Arch)
	return b.String()
}

// Line is the build on one line, for the --log-file header:
// "v1.2.0 (revision 0123abc…, 2026-11-20T14:00:00Z; go1.26.8 linux/amd64)".
func (i Info) Line() string {
	rev := "revision unknown"
	if i.Revision != "" {
		rev = "revision " + i.Revision
		if i.RevisionTime != "" {
			rev += ", " + i.RevisionTime
		}
		if i.Modified {
			rev += ", modified"
		}
	}
	return fmt.Sprintf("%s (%s; %s %s/%s)", i.Version, rev, i.Go, i.OS, i.Arch)
}
