package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

const versionUsage = `usage: heed version

Print heed's module version, the revision and time of the commit it was
built from when the build recorded them, and the Go version that built it.
`

// runVersion prints the version of the running binary.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, versionUsage) }
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	_, err := io.WriteString(stdout, version(bi, runtime.GOOS+"/"+runtime.GOARCH))
	return err
}

// version describes the build bi (nil when the binary carries no build
// information) for platform, in lines such as
//
//	heed v0.1.0
//	revision 95fce2c43b92 2026-12-01T07:50:09Z (modified)
//	go1.26.0 linux/amd64
//
// The module version is "(devel)" when it is unknown: built from a
// checkout, or by go run. The revision line appears only when the build
// recorded version control information.
func version(bi *debug.BuildInfo, platform string) string {
	var b strings.Builder
	v, goVersion := "", runtime.Version()
	if bi != nil {
		v = bi.Main.Version
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(&b, "heed %s\n", v)
	if bi != nil {
		var rev, at string
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			b.WriteString("revision " + rev)
			if at != "" {
				b.WriteString(" " + at)
			}
			if modified {
				b.WriteString(" (modified)")
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "%s %s\n", goVersion, platform)
	return b.String()
}
