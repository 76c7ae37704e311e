package profile

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/heedhttp/heed/header"
)

// Shopify returns the profile of the Shopify Admin API, REST and GraphQL,
// after Shopify's pages:
//
//   - REST Admin API rate limits
//     (https://shopify.dev/docs/api/admin-rest/usage/rate-limits): a leaky
//     bucket per app and store, "40 API requests within 60 seconds" of
//     bucket and a "Standard limit: 2 requests/second" leak (4 for Advanced,
//     20 for Plus); X-Shopify-Shop-Api-Call-Limit: 32/40 on every response;
//     a 429 with Retry-After.
//   - Shopify API rate limits (https://shopify.dev/docs/api/usage/rate-limits):
//     the GraphQL Admin API's "Calculated query cost", "100 points/second"
//     on a standard plan; each response's extensions.cost gives the
//     requestedQueryCost, the actualQueryCost and the throttleStatus
//     (maximumAvailable, currentlyAvailable, restoreRate); a query is
//     admitted when its requested cost is available, and refunded down to
//     its actual cost; a throttled query is not executed and answers
//     errors[].extensions.code THROTTLED.
//
// So the tenant is the shop (the request's host) and the app's token
// (X-Shopify-Access-Token), hashed; a throttle with no reason blocks the
// tenant, whose one bucket every REST endpoint drains. Endpoints are not
// paced until Shopify speaks, which it does on every response: a fresh
// bucket of 40 is spent at once. A GraphQL request's cost in points is
// estimated from its query before it is sent ([EstimateShopifyQueryCost])
// and reconciled with extensions.cost.actualQueryCost. A throttled request
// was not executed, so it is retried whatever its method (GraphQL
// mutations are POSTs); server and connection errors of requests safe to
// repeat are retried, as Shopify's own API library does.
func Shopify() *Profile {
	return &Profile{
		Name:                  "shopify",
		Account:               HeaderAccount("X-Shopify-Access-Token"),
		Endpoint:              ShopifyEndpoint,
		UnknownScope:          header.ScopeTenant,
		Cost:                  shopifyCost,
		Usage:                 shopifyUsage,
		Bodies:                shopifyBodies,
		ThrottledNotProcessed: true,
		RetryServerErrors:     true,
	}
}

// ShopifyEndpoint names an Admin API request's endpoint: the method, and
// the path with the API version ("2024-10") replaced by "{version}" and
// numeric ids, with or without a ".json" suffix, by "{id}":
// "GET /admin/api/{version}/products/{id}.json".
func ShopifyEndpoint(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path) + 8)
	b.WriteString(method)
	b.WriteByte(' ')
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		id, json := strings.CutSuffix(seg, ".json")
		switch {
		case i == 3 && segs[1] == "admin" && segs[2] == "api" && id != "graphql":
			b.WriteString("{version}")
		case allDigits(id):
			b.WriteString("{id}")
		default:
			b.WriteString(id)
		}
		if json {
			b.WriteString(".json")
		}
	}
	return b.String()
}

// isShopifyGraphQL reports whether a path is the GraphQL Admin API's.
func isShopifyGraphQL(path string) bool { return strings.HasSuffix(path, "/graphql.json") }

func shopifyCost(req *http.Request) float64 {
	if !isShopifyGraphQL(req.URL.Path) {
		return 0
	}
	b := peekBody(req, maxReadBody)
	if b == nil {
		return 0
	}
	var v struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(b, &v) != nil || v.Query == "" {
		return 0
	}
	return EstimateShopifyQueryCost(v.Query)
}

// EstimateShopifyQueryCost estimates a GraphQL Admin API query's requested
// cost the way Shopify documents it is calculated: a mutation costs 10,
// an object 1, and a connection 2 plus the number of objects it asks for
// (its first: or last: argument), multiplied by the sizes of the
// connections it is nested in. Fields are not parsed; every first:/last:
// argument counts as one connection, nested in those opened before it and
// not yet closed. It returns at least 1.
func EstimateShopifyQueryCost(query string) float64 {
	cost := 1.0
	if strings.HasPrefix(strings.TrimSpace(query), "mutation") {
		cost = 10
	}
	// mult holds, for each open connection, the product of its size and
	// those of the connections around it.
	mult := []float64{1}
	depth := 0
	var opened []int // brace depth at which each open connection began
	for i := 0; i < len(query); i++ {
		switch c := query[i]; c {
		case '{':
			depth++
		case '}':
			depth--
			for len(opened) > 0 && opened[len(opened)-1] > depth {
				opened = opened[:len(opened)-1]
				mult = mult[:len(mult)-1]
			}
		case 'f', 'l':
			n, ok := connectionSize(query, i)
			if !ok {
				continue
			}
			m := mult[len(mult)-1]
			cost += m * (2 + n)
			if cost > 1e6 || math.IsInf(cost, 0) {
				return 1e6
			}
			mult = append(mult, m*n)
			opened = append(opened, depth+1)
		}
	}
	return cost
}

// connectionSize reads "first: N" or "last: N" at query[i], not inside a
// longer name.
func connectionSize(query string, i int) (float64, bool) {
	if i > 0 && (unicode.IsLetter(rune(query[i-1])) || query[i-1] == '_') {
		return 0, false
	}
	rest := query[i:]
	switch {
	case strings.HasPrefix(rest, "first"):
		rest = rest[len("first"):]
	case strings.HasPrefix(rest, "last"):
		rest = rest[len("last"):]
	default:
		return 0, false
	}
	rest = strings.TrimLeft(rest, " \t\r\n")
	if !strings.HasPrefix(rest, ":") {
		return 0, false
	}
	rest = strings.TrimLeft(rest[1:], " \t\r\n")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil || n < 0 {
		return 0, false
	}
	return float64(min(n, 250)), true // Shopify caps a page at 250
}

// shopifyBodies reports a GraphQL Admin API response: its body's
// extensions.cost.throttleStatus says how many points are available and
// how fast they are restored, and a refusal is a 200 whose errors say
// THROTTLED (https://shopify.dev/docs/api/usage/rate-limits).
func shopifyBodies(resp *http.Response) bool {
	return resp.Request != nil && isShopifyGraphQL(resp.Request.URL.Path)
}

func shopifyUsage(resp *http.Response) (float64, bool) {
	if resp.Request == nil || !isShopifyGraphQL(resp.Request.URL.Path) || resp.StatusCode != http.StatusOK {
		return 0, false
	}
	b := peekResponse(resp, maxReadBody)
	if b == nil {
		return 0, false
	}
	var out struct {
		Extensions struct {
			Cost *struct {
				Requested *float64 `json:"requestedQueryCost"`
				Actual    *float64 `json:"actualQueryCost"`
			} `json:"cost"`
		} `json:"extensions"`
	}
	if json.Unmarshal(b, &out) != nil || out.Extensions.Cost == nil {
		return 0, false
	}
	c := out.Extensions.Cost
	switch {
	case c.Actual != nil:
		return *c.Actual, true
	case c.Requested != nil: // throttled: nothing ran, and nothing is spent
		return 0, true
	}
	return 0, false
}
