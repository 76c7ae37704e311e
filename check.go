package heed

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/profile"
)

// CheckResponse returns a [*LimitedError] when resp is a rate-limit
// rejection (a 429, a 503 with a wait, or a provider's throttle such as
// GitHub's 403 with nothing remaining), and nil otherwise, so that a 429 is
// never read as data. It reads only resp's headers; the caller still owns
// and must close the body.
func CheckResponse(resp *http.Response) error {
	if resp == nil {
		return nil
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusForbidden, http.StatusTeapot, http.StatusPaymentRequired:
	default:
		return nil
	}
	obs := header.Parse(resp.StatusCode, resp.Header, nil, time.Now())
	if !obs.Throttled {
		return nil
	}
	wait := obs.RetryAfter
	if resp.StatusCode == http.StatusTooManyRequests && wait < minThrottleWait {
		wait = minThrottleWait
	}
	return &LimitedError{Scope: responseScope(resp, obs.ReasonScope), RetryAfter: wait, Reason: obs.Reason, StatusCode: resp.StatusCode}
}

// responseScope returns the key of the scope a throttle names, as the
// generic profile classifies the response's request: global, its tenant
// (the origin), or its endpoint when the server named the endpoint, a
// resource, or nothing.
func responseScope(resp *http.Response, kind string) string {
	if kind == header.ScopeGlobal {
		return scope.Global
	}
	req := resp.Request
	if req == nil || req.URL == nil {
		return kind
	}
	tenant := scope.Tenant(req.URL.Scheme+"://"+req.URL.Host, "")
	if kind == header.ScopeTenant {
		return tenant
	}
	return scope.Endpoint(tenant, profile.EndpointKey(req.Method, req.URL.Path))
}
