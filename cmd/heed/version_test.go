package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "95fce2c43b924104ce239d972bf597b419ff250b"},
		{Key: "vcs.time", Value: "2026-12-01T07:50:09Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	modified := append(vcs[:4:4], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{
			name: "tagged module with vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/heedhttp/heed", Version: "v0.1.0"}, Settings: vcs},
			want: "heed v0.1.0\nrevision 95fce2c43b92 2026-12-01T07:50:09Z\ngo1.26.0 linux/amd64\n",
		},
		{
			name: "devel build from a modified checkout",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/heedhttp/heed", Version: "(devel)"}, Settings: modified},
			want: "heed (devel)\nrevision 95fce2c43b92 2026-12-01T07:50:09Z (modified)\ngo1.26.0 linux/amd64\n",
		},
		{
			name: "pseudo-version without vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.0.0-20261201075009-95fce2c43b92"}},
			want: "heed v0.0.0-20261201075009-95fce2c43b92\ngo1.26.1 linux/amd64\n",
		},
		{
			name: "empty main version",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0"},
			want: "heed (devel)\ngo1.26.0 linux/amd64\n",
		},
		{
			name: "no build info",
			want: "heed (devel)\n" + runtime.Version() + " linux/amd64\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := version(tc.bi, "linux/amd64"); got != tc.want {
				t.Errorf("version() = %q, want %q", got, tc.want)
			}
		})
	}
}

// heed version prints this binary's build: a test binary's main module is
// heed itself, at version "(devel)" or unset.
func TestRunVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"version"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("heed version: %v", err)
	}
	out := stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(out, "heed ") || len(lines) < 2 || len(lines) > 3 {
		t.Errorf("heed version = %q, want heed <version>, an optional revision line, and the Go version", out)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "go") || !strings.HasSuffix(last, " "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("heed version's last line = %q, want the Go version and %s/%s", last, runtime.GOOS, runtime.GOARCH)
	}
	if stderr.Len() != 0 {
		t.Errorf("heed version wrote %q to stderr, want nothing", stderr.String())
	}
	if err := run(context.Background(), []string{"version", "extra"}, nil, io.Discard, io.Discard); !errors.As(err, new(usageError)) {
		t.Errorf("heed version extra = %v, want a usage error", err)
	}
}
