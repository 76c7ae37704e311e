package sim_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heedhttp/heed/sim"
)

// result is a response read in full.
type result struct {
	status int
	header http.Header
	body   string
}

// client sends requests to a Server in process.
type client struct {
	t  *testing.T
	rt http.RoundTripper
}

func newClient(t *testing.T, s *sim.Server) *client {
	t.Helper()
	return &client{t: t, rt: s.RoundTripper()}
}

// do sends method url with body (none if "") and header pairs.
func (c *client) do(method, url, body string, header ...string) result {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		c.t.Error(err)
		return result{}
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		// Errorf, not Fatalf: do may run on a goroutine of the test.
		c.t.Errorf("RoundTrip(%s %s) error %v", method, url, err)
		return result{}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Error(err)
		return result{}
	}
	return result{resp.StatusCode, resp.Header, string(b)}
}

// repeat sends the same request n times and returns the statuses counted.
func (c *client) repeat(n int, method, url, body string, header ...string) map[int]int {
	c.t.Helper()
	got := map[int]int{}
	for range n {
		got[c.do(method, url, body, header...).status]++
	}
	return got
}
