// Package redistest starts a real redis-server for tests: on a free
// loopback port, with persistence off, stopped when the test ends. Tests can
// kill, pause and restart it to exercise failures, add ACL users
// ([Server.AddUser]), and start a three-master Redis Cluster
// ([StartCluster]).
//
// When the environment variable REDIS_URL is set, [Start] uses that server
// instead of starting one; tests then keep apart by key prefix ([Prefix]),
// and tests that must kill the server skip.
//
// redistest never flushes a server: every test writes under its own prefix.
package redistest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary is where Start looks for redis-server before searching PATH.
const Binary = "/usr/bin/redis-server"

// startTimeout bounds how long a redis-server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is a redis-server for one test.
//
// A Server is safe for concurrent use.
type Server struct {
	// Addr is the server's host:port.
	Addr string
	// URL is the server's address as a redis:// URL, for worker processes
	// and [redis.ParseURL].
	URL string

	t    testing.TB
	opts *redis.Options
	bin  string // set when Start started the server: it can be killed and restarted
	dir  string

	args []string // extra redis-server arguments

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  lockedBuffer
}

// Start returns the server named by REDIS_URL when it is set; otherwise it
// starts redis-server on a free loopback port with no persistence and kills
// it when the test ends. It fails the test when no server can be had.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

func start(t testing.TB, args []string, portOK ...func(int) bool) *Server {
	t.Helper()
	if u := os.Getenv("REDIS_URL"); u != "" && args == nil {
		opts, err := redis.ParseURL(u)
		if err != nil {
			t.Fatalf("redistest: REDIS_URL: %v", err)
		}
		return &Server{Addr: opts.Addr, URL: u, t: t, opts: opts}
	}
	bin := Binary
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Fatalf("redistest: redis-server not found (install the redis-server package, or set REDIS_URL): %v", err)
		}
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), args: args}
	t.Cleanup(s.Kill)
	var err error
	for range 5 { // a free port can be taken between probing and binding
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		if len(portOK) > 0 && !portOK[0](port) {
			err = fmt.Errorf("port %d unsuitable", port)
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.start(); err == nil {
			break
		}
		s.Kill()
	}
	if err != nil {
		t.Fatalf("redistest: start redis-server: %v\n%s", err, s.log.String())
	}
	s.URL = "redis://" + s.Addr + "/0"
	s.opts = &redis.Options{Addr: s.Addr}
	return s
}

// Options returns options for a client of the server, with
// ContextTimeoutEnabled set so that context deadlines bound each command.
// Each call returns a new value the caller may change.
func (s *Server) Options() *redis.Options {
	o := *s.opts
	o.ContextTimeoutEnabled = true
	return &o
}

// NewClient returns a client of the server, closed when the test ends.
func (s *Server) NewClient(t testing.TB) *redis.Client {
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { c.Close() })
	return c
}

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// until it has exited. Killing a stopped server does nothing. With
// REDIS_URL, Kill skips the test, since the server is not the test's.
func (s *Server) Kill() {
	if s.bin == "" {
		s.t.Skip("redistest: REDIS_URL names a shared server; this test must kill its own")
	}
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Pause freezes the server (SIGSTOP): connections stay open and commands
// hang, as with a server that is overloaded or partitioned away. Resume
// undoes it; Kill works on a paused server.
func (s *Server) Pause() { s.signal(stopSignal()) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(contSignal()) }

func (s *Server) signal(sig os.Signal) {
	s.t.Helper()
	if sig == nil {
		s.t.Skip("redistest: pausing a process needs a Unix system")
	}
	if s.bin == "" {
		s.t.Skip("redistest: REDIS_URL names a shared server; this test must pause its own")
	}
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatalf("redistest: %v: the server is not running", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %v: %v", sig, err)
	}
}

// Restart starts the server again on the same port, with its data gone
// (persistence is off), after a [Server.Kill]. It fails the test if the
// server does not come back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		s.Kill()
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart redis-server on %s: %v\n%s", s.Addr, err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond) // the port may linger a moment
	}
}

func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, append([]string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	}, s.args...)...)
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %v", cmd.ProcessState)
		default:
		}
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("redis-server did not answer on %s within %v", s.Addr, startTimeout)
}

// PID returns the process id of the running server, or 0.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// ping sends PING on a fresh connection and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Prefix returns a key prefix unique to the test (and to this call), so
// that tests sharing a server never see each other's keys.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r == '{' || r == '}' || r == ' ' {
			return '_'
		}
		return r
	}, t.Name())
	return "heedtest:" + name + ":" + hex.EncodeToString(b[:])
}

// lockedBuffer collects the server's output from two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() > 1<<16 { // keep the tail small: enough to diagnose a failed start
		b.b.Reset()
	}
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
