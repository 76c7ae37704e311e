// Command heed calls rate-limited HTTP APIs politely, and shows how.
//
// Usage:
//
//	heed explain [-json] [-at RFC3339] < response.txt
//	heed sim -profile jira -listen 127.0.0.1:8080
//	heed demo
//	heed proxy -upstream https://acme.atlassian.net -profile jira
//	heed version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "heed:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks an error in how heed was invoked; heed exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `usage: heed <command> [flags]

commands:
  demo      run heed against naive clients on a simulated API and compare
  explain   read an HTTP response head on stdin and show its rate limits
  proxy     forward requests to one upstream API through heed, for any language
  sim       serve a simulated rate-limited API
  version   print heed's version and how it was built
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "demo":
		return runDemo(ctx, rest, stdout, stderr)
	case "explain":
		return runExplain(ctx, rest, stdin, stdout, stderr)
	case "proxy":
		return runProxy(ctx, rest, stdout, stderr)
	case "sim":
		return runSim(ctx, rest, stdout, stderr)
	case "version":
		return runVersion(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", cmd)
	}
}

// parseFlags parses a subcommand's flags. It reports done when -h printed
// the usage and there is nothing more to do; a bad flag or a stray
// argument is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) (done bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return false, usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return false, nil
}

// serve runs srv on ln until ctx ends, then shuts it down, giving requests
// in flight grace to finish before closing what is left.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if err != nil {
		srv.Close()
	}
	<-served
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
