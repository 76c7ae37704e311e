package heed

import (
	"net/http"
	"time"

	"github.com/heedhttp/heed/header"
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
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusForbidden:
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
	scope := obs.ReasonScope
	if resp.Request != nil && resp.Request.URL != nil {
		scope = resp.Request.Method + " " + resp.Request.URL.Host + resp.Request.URL.Path
	}
	return &LimitedError{Scope: scope, RetryAfter: wait, Reason: obs.Reason, StatusCode: resp.StatusCode}
}
