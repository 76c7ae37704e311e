package header

import (
	"bytes"
	"encoding/json"
	"math"
)

// body reads the signals providers put in the body. Cheap searches for
// marker bytes come first, so that the usual response, whatever its size,
// is never decoded: only a body that mentions a rate limit is.
func (p *parser) body(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(b) > maxBodyBytes {
		b = b[:maxBodyBytes]
	}
	status := p.o.Status
	if (status == 403 || status == 429) && containsFold(b, "secondary rate limit") {
		p.secondary = true // GitHub
	}
	if status == 429 && bytes.Contains(b, []byte(`"retry_after"`)) {
		p.discordBody(b)
	}
	if bytes.Contains(b, []byte("THROTTLED")) || bytes.Contains(b, []byte("RATE_LIMITED")) ||
		bytes.Contains(b, []byte("RATELIMITED")) {
		p.graphQLBody(b)
	}
	if i := bytes.LastIndex(b, []byte(`"throttleStatus"`)); i >= 0 {
		p.shopifyCost(b[i+len(`"throttleStatus"`):])
	}
}

// discordBody reads Discord's 429 body: {"message": "You are being rate
// limited.", "retry_after": 64.57, "global": false}.
func (p *parser) discordBody(b []byte) {
	var v struct {
		RetryAfter *float64 `json:"retry_after"`
		Global     bool     `json:"global"`
	}
	if json.Unmarshal(b, &v) != nil || v.RetryAfter == nil {
		return
	}
	if ra := *v.RetryAfter; ra >= 0 && !math.IsInf(ra, 0) {
		p.bodyRetry, p.hasBodyRetry = seconds(ra), true
	} else {
		p.warnf("body: retry_after %v is not a delay; ignored", ra)
	}
	if v.Global && p.o.Reason == "" {
		p.o.Reason = "global"
	}
}

// graphQLBody reports a GraphQL error that says the request was throttled:
// GitHub's {"errors":[{"type":"RATE_LIMITED"}]}, Shopify's and Linear's
// {"errors":[{"extensions":{"code":"THROTTLED"}}]} ("RATELIMITED").
func (p *parser) graphQLBody(b []byte) {
	var v struct {
		Errors []struct {
			Type       string `json:"type"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(b, &v) != nil {
		return
	}
	for _, e := range v.Errors {
		if throttleCode(e.Type) || throttleCode(e.Extensions.Code) {
			p.graphQL = true
			return
		}
	}
}

func throttleCode(c string) bool {
	return c == "THROTTLED" || c == "RATE_LIMITED" || c == "RATELIMITED"
}

// shopifyCost reads the cost bucket of Shopify's GraphQL Admin API from
// extensions.cost.throttleStatus: {"maximumAvailable": 1000.0,
// "currentlyAvailable": 988.0, "restoreRate": 50.0}. rest follows the key.
func (p *parser) shopifyCost(rest []byte) {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return
	}
	var ts struct {
		Max       *float64 `json:"maximumAvailable"`
		Available *float64 `json:"currentlyAvailable"`
	}
	if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&ts) != nil {
		return
	}
	lim := Limit{Name: "graphql-cost", Unit: Points, Dialect: Shopify}
	if ts.Max != nil && *ts.Max >= 0 {
		lim.Quota, lim.Known = *ts.Max, lim.Known|HasQuota
	}
	if ts.Available != nil && *ts.Available >= 0 {
		lim.Remaining, lim.Known = *ts.Available, lim.Known|HasRemaining
	}
	if lim.Known != 0 {
		p.add(lim, "")
	}
}

// containsFold reports whether b contains the lower-case ASCII s, ignoring
// the case of b.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		j := 0
		for ; j < len(s); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[j] {
				break
			}
		}
		if j == len(s) {
			return true
		}
	}
	return false
}
