package sim

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

// RoundTripper returns an [http.RoundTripper] that serves each request by
// calling s in process, with no socket: inside a testing/synctest bubble,
// a client using it runs on virtual time. It honours the RoundTripper
// contract: it does not modify the request, closes its body, and returns
// every response, 429s included, with a nil error. It returns the request's
// context error when the context ends before the response is ready, and an
// error wrapping syscall.ECONNRESET for an injected Reset fault.
func (s *Server) RoundTripper() http.RoundTripper { return roundTripper{s} }

type roundTripper struct{ s *Server }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in := req.Clone(ctx)
	in.Body = http.NoBody
	if req.Body != nil {
		in.Body = io.NopCloser(req.Body)
	}
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "192.0.2.1:1234"
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	rec := &recorder{header: http.Header{}}
	rt.s.ServeHTTP(rec, in)
	if rec.reset {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	body := rec.body.Bytes()
	if rec.sent.Get("Content-Length") == "" && req.Method != "HEAD" {
		rec.sent.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.sent,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter the in-process RoundTripper serves into.
type recorder struct {
	header http.Header
	sent   http.Header // header as of WriteHeader
	status int
	body   bytes.Buffer
	reset  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status != 0 {
		return
	}
	r.status = code
	r.sent = r.header.Clone()
	for k, v := range r.sent {
		if v == nil { // a nil value suppresses a header, as with net/http
			delete(r.sent, k)
		}
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.body.Write(b)
}

// abort drops the connection a response would have gone on.
func abort(w http.ResponseWriter) {
	if rec, ok := w.(*recorder); ok {
		rec.reset = true
		return
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0) // close with RST
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
