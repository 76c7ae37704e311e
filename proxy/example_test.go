package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/proxy"
)

// A Handler in front of an upstream that blocks for two minutes: the
// request that meets the 429 gets it at once, and the next GET is answered
// from the copy fetched with the same credentials.
func ExampleHandler() {
	n := 0
	upstream := &heedtest.Script{Func: func(req *http.Request, _ int) heedtest.Response {
		if n++; n > 1 {
			return heedtest.Response{Status: 429, Header: heedtest.Headers("Retry-After", "120")}
		}
		return heedtest.Response{Status: 200, Body: "issue 1001"}
	}}
	u, _ := url.Parse("https://api.example.com")
	h := &proxy.Handler{
		Upstream:  u,
		Transport: &heed.Transport{Base: upstream, MaxWait: 5 * time.Second}, // MaxWait: the wait threshold
		Cache:     &proxy.Cache{MaxAge: time.Minute},
		Tenant:    proxy.TenantFromHeader("X-Tenant"),
	}
	for _, path := range []string{"/v1/items/1001", "/v1/items/1002", "/v1/items/1001", "/v1/items/1003"} {
		req := httptest.NewRequest(http.MethodGet, "http://proxy"+path, nil)
		req.Header.Set("Authorization", "Bearer alice")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s %d source=%q retry-after=%v\n", path, rec.Code, rec.Header().Get(proxy.HeaderSource), rec.Header().Get("Retry-After") != "")
	}
	// Output:
	// /v1/items/1001 200 source="" retry-after=false
	// /v1/items/1002 429 source="" retry-after=true
	// /v1/items/1001 200 source="cache" retry-after=false
	// /v1/items/1003 429 source="heed" retry-after=true
}
