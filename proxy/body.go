package proxy

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// budget is a count of bytes that may be held at once, taken without
// waiting: a caller that cannot have its bytes does without buffering.
type budget struct {
	mu          sync.Mutex
	used, limit int64
}

func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// buffer reads a request body of known length within the bounds into
// memory and gives r a GetBody, so that the Transport may retry the
// request when it is safe to repeat. Other bodies are left to stream, and
// a request without GetBody is never retried. It returns the bytes to give
// back to the budget once the request is done.
func (h *Handler) buffer(r *http.Request) (held int64, err error) {
	n := r.ContentLength
	if r.Body == nil || r.Body == http.NoBody || n <= 0 || n > h.maxBufferedBody() || !h.mem.tryAcquire(n) {
		return 0, nil
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		h.mem.release(n)
		return 0, err
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return n, nil
}

// teeBody passes a response body to the client and keeps a copy, within
// the cache's bound on one body and the Handler's bound on bytes in
// flight, to store once the body has been read to its end.
type teeBody struct {
	rc     io.ReadCloser
	h      *Handler
	st     *reqState
	status int
	header http.Header
	buf    []byte
	failed bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && !b.failed {
		if len(b.buf)+n > orDefault(b.h.Cache.MaxBody, DefaultMaxBody) || !b.h.mem.tryAcquire(int64(n)) {
			b.drop()
		} else {
			b.buf = append(b.buf, p[:n]...)
		}
	}
	if err == io.EOF && !b.failed {
		body := b.buf
		b.drop() // the cache accounts for what it keeps
		b.h.Cache.put(b.st.in, b.st.key, b.st.credentialed, b.status, b.header, body, time.Now())
	}
	return n, err
}

func (b *teeBody) drop() {
	b.h.mem.release(int64(len(b.buf)))
	b.buf, b.failed = nil, true
}

func (b *teeBody) Close() error {
	if !b.failed {
		b.drop()
	}
	return b.rc.Close()
}

// LimitListener returns a Listener that accepts at most n connections at
// once from l: further clients wait in the kernel's backlog until one
// closes. (golang.org/x/net/netutil has the same, as a dependency.)
func LimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
