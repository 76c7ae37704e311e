package bench

import (
	"net/http"
	"sync"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/heedhttp/heed/internal/workload"
	"github.com/heedhttp/heed/profile"
)

// Peers are the libraries heed's users would otherwise pick, each as a
// workload.Client over the simulator's round tripper.

// retryableHTTP is go-retryablehttp with its defaults (4 retries, waits of
// 1s to 30s honouring Retry-After), as a RoundTripper.
func retryableHTTP() workload.Client {
	return workload.Client{Name: "retryablehttp", New: func(base http.RoundTripper) http.RoundTripper {
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient = &http.Client{Transport: base}
		return &retryablehttp.RoundTripper{Client: rc}
	}}
}

// failsafe is failsafe-go's HTTP retry policy with its defaults (2 retries
// of 429s, 5xx and errors, waiting Retry-After when given).
func failsafe() workload.Client {
	return workload.Client{Name: "failsafe", New: func(base http.RoundTripper) http.RoundTripper {
		return failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())
	}}
}

// xrate paces each endpoint with an x/time/rate Limiter at half of the
// default rates (profile.DefaultRate), with no retry.
func xrate() workload.Client {
	return workload.Client{Name: "x/time/rate", New: func(base http.RoundTripper) http.RoundTripper {
		return &ratePacer{base: base, limiters: map[string]*rate.Limiter{}}
	}}
}

type ratePacer struct {
	base     http.RoundTripper
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

func (p *ratePacer) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.URL.Host + " " + profile.EndpointKey(req.Method, req.URL.Path)
	p.mu.Lock()
	l := p.limiters[key]
	if l == nil {
		r := profile.DefaultRate(req.Method)
		l = rate.NewLimiter(rate.Limit(r), 1)
		p.limiters[key] = l
	}
	p.mu.Unlock()
	if err := l.Wait(req.Context()); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return p.base.RoundTrip(req)
}
