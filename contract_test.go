package heed_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// A body that cannot be rewound is not retried, and is sent once.
func TestUnrewindableBodyIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		body := &countingBody{Reader: strings.NewReader("data")}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1", body)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 429 || s.Count() != 1 {
			t.Fatalf("RoundTrip = %v after %d sends, want the 429 after one", err, s.Count())
		}
		resp.Body.Close()
		if body.closes.Load() != 1 {
			t.Errorf("body closed %d times, want once", body.closes.Load())
		}
	})
}

// The caller's request is never written to.
func TestRequestIsNotModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1?x=1", strings.NewReader("data"))
		req.Header.Set("Authorization", "Bearer t")
		before := req.Header.Clone()
		body, getBody := req.Body, req.GetBody
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(req.Header) != len(before) || req.Header.Get("Authorization") != "Bearer t" || req.Body != body || req.URL.String() != jira+"/rest/api/3/issue/X-1?x=1" || getBody == nil {
			t.Errorf("request was modified: %v %v", req.Header, req.URL)
		}
	})
}

// A GetBody that fails on a retry ends the request with ErrNotRewindable;
// nothing is sent a second time.
func TestFailingGetBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedtest.Script{Responses: []heedtest.Response{burst429(), ok()}}
		tr := &heed.Transport{Base: s}
		req, _ := http.NewRequest(http.MethodPut, jira+"/rest/api/3/issue/X-1", strings.NewReader("data"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, heed.ErrNotRewindable) || s.Count() != 1 {
			t.Errorf("RoundTrip = %v, %v after %d sends; want ErrNotRewindable after one", resp, err, s.Count())
		}
	})
}
