package sim_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heedhttp/heed/sim"
)

// A Jira Cloud at 1% of its rates: a burst of one request per endpoint and
// method. The second request meets the empty bucket.
func Example() {
	s := sim.New(sim.Config{Provider: sim.Jira, Scale: 0.01})
	client := &http.Client{Transport: s.RoundTripper()}
	for range 2 {
		req, _ := http.NewRequest("GET", "https://acme.atlassian.net/rest/api/3/issue/ABC-1", nil)
		req.Header.Set("X-Sim-Client", "example")
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%d Retry-After=%q RateLimit-Reason=%q\n",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit-Reason"))
	}
	truth := s.Truth()
	c, _ := truth.Client("example")
	fmt.Println("accepted", c.Accepted, "rejected", c.Rejected, c.Reasons)
	// Output:
	// 200 Retry-After="" RateLimit-Reason=""
	// 429 Retry-After="1" RateLimit-Reason="jira-burst-based"
	// accepted 1 rejected 1 map[jira-burst-based:1]
}

// Limits compose: here a quota of two writes per minute per tenant, spoken
// in the IETF draft's headers.
func ExampleLimit() {
	s := sim.New(sim.Config{Provider: sim.IETF, Limits: []sim.Limit{
		{Name: "writes", Kind: sim.FixedWindow, Methods: []string{"POST", "PUT"}, Quota: 2, Window: time.Minute},
	}})
	rt := s.RoundTripper()
	for range 3 {
		req, _ := http.NewRequest("POST", "https://api.example/t/acme/items", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Output:
	// 200 "writes";r=1;t=60
	// 200 "writes";r=0;t=60
	// 429 "writes";r=0;t=60
}
