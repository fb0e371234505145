package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestRead(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/bifrost/bifrost-migrate", Version: "v0.0.0-20261126192605-100539ea53be"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "100539ea53be58934fd0963020ba5f062b903f27"},
			{Key: "vcs.time", Value: "2026-11-26T19:26:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	plain := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	for _, c := range []struct {
		name                            string
		bi                              *debug.BuildInfo
		ldVersion, ldRev, ldTime, ldMod string
		want                            Info
	}{
		{name: "no build info", want: Info{Version: "(devel)", Go: runtime.Version()}},
		{name: "a checkout without VCS information", bi: plain, want: Info{Version: "(devel)", Go: "go1.26.8"}},
		{name: "VCS information", bi: vcs, want: Info{Version: "v0.0.0-20261126192605-100539ea53be",
			Revision: "100539ea53be58934fd0963020ba5f062b903f27", RevisionTime: "2026-11-26T19:26:05Z", Modified: true, Go: "go1.26.8"}},
		{name: "the linker's version only", bi: vcs, ldVersion: "v1.2.0", want: Info{Version: "v1.2.0",
			Revision: "100539ea53be58934fd0963020ba5f062b903f27", RevisionTime: "2026-11-26T19:26:05Z", Modified: true, Go: "go1.26.8"}},
		{name: "the linker's revision replaces the build's, time and state included", bi: vcs, ldVersion: "v1.2.0", ldRev: "abc", ldMod: "false",
			want: Info{Version: "v1.2.0", Revision: "abc", Go: "go1.26.8"}},
		{name: "release build", bi: plain, ldVersion: "v1.2.0", ldRev: "abc", ldTime: "2026-11-26T19:26:05Z", ldMod: "false",
			want: Info{Version: "v1.2.0", Revision: "abc", RevisionTime: "2026-11-26T19:26:05Z", Go: "go1.26.8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			version, revision, revisionTime, modified = c.ldVersion, c.ldRev, c.ldTime, c.ldMod
			t.Cleanup(func() { version, revision, revisionTime, modified = "", "", "", "" })
			got := read(func() (*debug.BuildInfo, bool) { return c.bi, c.bi != nil })
			c.want.OS, c.want.Arch = runtime.GOOS, runtime.GOARCH
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		i          Info
		text, line string
	}{
		{Info{Version: "v1.2.0", Revision: "abc", RevisionTime: "2026-11-26T19:26:05Z", Go: "go1.26.8", OS: "linux", Arch: "amd64"},
			"bifrost-migrate v1.2.0\nrevision: abc (2026-11-26T19:26:05Z)\ngo: go1.26.8 linux/amd64\n",
			"v1.2.0 (revision abc, 2026-11-26T19:26:05Z; go1.26.8 linux/amd64)"},
		{Info{Version: "(devel)", Revision: "abc", Modified: true, Go: "go1.26.8", OS: "darwin", Arch: "arm64"},
			"bifrost-migrate (devel)\nrevision: abc (modified)\ngo: go1.26.8 darwin/arm64\n",
			"(devel) (revision abc, modified; go1.26.8 darwin/arm64)"},
		{Info{Version: "(devel)", Go: "go1.26.8", OS: "windows", Arch: "amd64"},
			"bifrost-migrate (devel)\nrevision: unknown (built without VCS information)\ngo: go1.26.8 windows/amd64\n",
			"(devel) (revision unknown; go1.26.8 windows/amd64)"},
	} {
		if got := c.i.Text(); got != c.text {
			t.Errorf("Text:\n%s\nwant:\n%s", got, c.text)
		}
		if got := c.i.Line(); got != c.line {
			t.Errorf("Line: %s\nwant: %s", got, c.line)
		}
	}
}
