package heed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
)

// A Transport goes wherever an http.Client does: wrap any SDK's client.
func ExampleTransport() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"jira-burst-based";q=100;w=1`)
		fmt.Fprint(w, `{"key":"PROJ-1"}`)
	}))
	defer api.Close()

	client := &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}
	resp, err := client.Get(api.URL + "/rest/api/3/issue/PROJ-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode, heed.CheckResponse(resp))
	// Output: 200 <nil>
}

// CheckResponse turns a rate-limited response into an error that callers
// can tell apart from any other.
func ExampleCheckResponse() {
	s := &heedtest.Script{Responses: []heedtest.Response{{
		Status: 429,
		Header: heedtest.Headers("Retry-After", "1847", "RateLimit-Reason", "jira-quota-tenant-based"),
	}}}
	client := &http.Client{Transport: &heed.Transport{Base: s, Profile: profile.Jira()}}
	resp, err := client.Get("https://acme.atlassian.net/rest/api/3/search")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	err = heed.CheckResponse(resp)
	var le *heed.LimitedError
	if errors.As(err, &le) {
		fmt.Println(errors.Is(err, heed.ErrLimited), le.StatusCode, le.Reason, le.RetryAfter)
	}
	// Output: true 429 jira-quota-tenant-based 30m47s
}

// A Job stops at the first rate limit and reports once when to try again.
func ExampleJob() {
	keys := []string{"PROJ-1", "PROJ-2", "PROJ-3"}
	err := heed.Job{Concurrency: 8}.Run(context.Background(), len(keys), func(ctx context.Context, i int) error {
		if keys[i] == "PROJ-2" {
			return &heed.LimitedError{Scope: "tenant", RetryAfter: 10 * time.Minute, StatusCode: 429}
		}
		return nil
	})
	var le *heed.LimitedError
	fmt.Println(errors.As(err, &le), le.RetryAfter)
	// Output: true 10m0s
}

// Share one store between Transports to make them one client: here one per
// tenant, so that a global-quota 429 seen by one pauses both.
func ExampleTransport_sharedStore() {
	shared := memstore.New()
	limited := &heedtest.Script{Responses: []heedtest.Response{{
		Status: 429,
		Header: heedtest.Headers("Retry-After", "600", "RateLimit-Reason", "jira-quota-global-based"),
	}}}
	acme := &http.Client{Transport: &heed.Transport{Base: limited, Store: shared, Profile: profile.Jira()}}
	globex := &http.Client{Transport: &heed.Transport{Base: &heedtest.Script{}, Store: shared, Profile: profile.Jira(), FailFast: true}}

	resp, _ := acme.Get("https://acme.atlassian.net/rest/api/3/search")
	resp.Body.Close()
	_, err := globex.Get("https://globex.atlassian.net/rest/api/3/search")
	fmt.Println(resp.StatusCode, errors.Is(err, heed.ErrLimited))
	// Output: 429 true
}

// WithTenant counts a request against one account of an origin: two API
// tokens of one host share no allowance, and neither token appears in the
// scope heed reports, only a short keyed hash of it.
func ExampleWithTenant() {
	limited := &heedtest.Script{Responses: []heedtest.Response{{Status: 429, Header: heedtest.Headers("Retry-After", "60")}, {Status: 200}}}
	t := &heed.Transport{Base: limited, Profile: profile.GitHub(), MaxRetries: -1, FailFast: true}
	get := func(token string) error {
		req, _ := http.NewRequestWithContext(heed.WithTenant(context.Background(), token), "GET", "https://api.github.com/user", nil)
		resp, err := t.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	_ = get("token-a") // a 429: token a is blocked for a minute
	fmt.Println(get("token-b"))
	var le *heed.LimitedError
	fmt.Println(errors.As(get("token-a"), &le), strings.HasPrefix(le.Scope, "https://api.github.com#"), strings.Contains(le.Scope, "token"))
	// Output:
	// <nil>
	// true true false
}

// In shadow mode heed decides everything and enforces nothing: the hooks
// say what it would have done.
func ExampleTransport_shadow() {
	limited := &heedtest.Script{Responses: []heedtest.Response{
		{Status: 429, Header: heedtest.Headers("Retry-After", "30", "RateLimit-Reason", "jira-quota-tenant-based")},
		{Status: 200},
	}}
	t := &heed.Transport{Base: limited, Profile: profile.Jira(), Shadow: true, Rand: rand.New(rand.NewPCG(1, 2)),
		OnWait: func(e heed.WaitEvent) {
			fmt.Println("would wait", e.Wait.Round(time.Second), "for the", e.Reason, "tenant")
		},
		OnRetry: func(e heed.RetryEvent) { fmt.Println("would retry after", e.Delay.Round(time.Second)) },
	}
	client := &http.Client{Transport: t}
	for range 2 {
		resp, err := client.Get("https://acme.atlassian.net/rest/api/3/search")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// would retry after 30s
	// 429
	// would wait 30s for the blocked tenant
	// 200
}
