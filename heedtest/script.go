// Package heedtest helps test code that sends requests through heed: a
// scripted [http.RoundTripper] that answers with the responses you give it
// and records when each request was sent.
//
// Use it as a heed.Transport's Base inside a testing/synctest bubble, and
// the recorded times are exact.
package heedtest

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Response is one scripted answer.
type Response struct {
	// Status is the status code; zero means 200.
	Status int
	// Header holds the response's header fields, as "Name: value" pairs
	// are held by http.Header.
	Header http.Header
	// Body is the response body.
	Body string
	// Err, when set, is returned instead of a response, as a transport
	// error such as a reset connection would be.
	Err error
}

// Sent records one request that reached the script.
type Sent struct {
	At     time.Time
	Method string
	URL    string
	Header http.Header
	Body   string
}

// ErrExhausted is returned when a Script has no response left to give.
var ErrExhausted = errors.New("heedtest: script has no more responses")

// Script is an [http.RoundTripper] that answers from a script. It reads and
// closes each request's body, as a real transport does. A Script is safe
// for concurrent use.
type Script struct {
	// Responses are given in order, one per request. With Repeat set, the
	// last is given again once they are used up; otherwise ErrExhausted is.
	Responses []Response
	// Repeat gives the last response again once Responses are used up.
	Repeat bool
	// Func, when set, answers instead of Responses: it gets the request and
	// its index among all requests sent to the Script.
	Func func(req *http.Request, n int) Response

	mu   sync.Mutex
	sent []Sent
}

// RoundTrip implements [http.RoundTripper].
func (s *Script) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	s.mu.Lock()
	n := len(s.sent)
	s.sent = append(s.sent, Sent{At: time.Now(), Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone(), Body: string(body)})
	var r Response
	switch {
	case s.Func != nil:
		s.mu.Unlock()
		r = s.Func(req, n)
		s.mu.Lock()
	case n < len(s.Responses):
		r = s.Responses[n]
	case s.Repeat && len(s.Responses) > 0:
		r = s.Responses[len(s.Responses)-1]
	default:
		r.Err = ErrExhausted
	}
	s.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	return r.http(req), nil
}

func (r Response) http(req *http.Request) *http.Response {
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		Status:        http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(r.Body)),
		ContentLength: int64(len(r.Body)),
		Request:       req,
	}
}

// Sent returns a copy of the requests the script has received, in order.
func (s *Script) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Count returns how many requests the script has received.
func (s *Script) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// Headers builds an http.Header from name, value pairs, for scripts:
// Headers("Retry-After", "1", "RateLimit-Reason", "jira-burst-based").
func Headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
