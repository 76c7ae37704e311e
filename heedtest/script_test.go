package heedtest_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heedhttp/heed/heedtest"
)

func TestScript(t *testing.T) {
	s := &heedtest.Script{Responses: []heedtest.Response{
		{Status: 429, Header: heedtest.Headers("Retry-After", "1")},
		{Body: "ok"},
	}}
	for i, want := range []int{429, 200} {
		req, _ := http.NewRequest(http.MethodPut, "https://x.test/a", strings.NewReader("body"))
		resp, err := s.RoundTrip(req)
		if err != nil || resp.StatusCode != want || resp.Request != req {
			t.Fatalf("send %d: %v, %v; want %d", i, resp, err, want)
		}
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodGet, "https://x.test/b", nil)
	if _, err := s.RoundTrip(req); !errors.Is(err, heedtest.ErrExhausted) {
		t.Errorf("a third send: %v, want ErrExhausted", err)
	}
	sent := s.Sent()
	if len(sent) != 3 || sent[0].Body != "body" || sent[0].Method != http.MethodPut {
		t.Errorf("Sent = %+v", sent)
	}
}

func TestScriptFuncAndRepeat(t *testing.T) {
	s := &heedtest.Script{Func: func(req *http.Request, n int) heedtest.Response {
		return heedtest.Response{Body: req.URL.Path}
	}}
	req, _ := http.NewRequest(http.MethodGet, "https://x.test/path", nil)
	resp, _ := s.RoundTrip(req)
	if b, _ := io.ReadAll(resp.Body); string(b) != "/path" {
		t.Errorf("Func body = %q", b)
	}
	r := &heedtest.Script{Responses: []heedtest.Response{{Status: 503}}, Repeat: true}
	for range 3 {
		resp, err := r.RoundTrip(req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("Repeat: %v, %v", resp, err)
		}
	}
	if r.Count() != 3 {
		t.Errorf("Count = %d, want 3", r.Count())
	}
}
