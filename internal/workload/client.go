package workload

import (
	"io"
	"math/rand/v2"
	"net/http"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
)

// Client is one way of calling a rate-limited API, compared with others.
type Client struct {
	// Name labels the client's requests (the X-Sim-Client header) and its
	// row in results.
	Name string
	// New returns the client's round tripper, sending through base. It is
	// called once per run, so that no state is shared between runs.
	New func(base http.RoundTripper) http.RoundTripper
}

// Clients returns the four clients heed demo compares, for a server
// imitating p: [None], [NaiveRetry] (3 retries), [Seed] and [Heed] with the
// profile that fits p.
func Clients(p sim.Provider) []Client {
	return []Client{None(), NaiveRetry(3), Seed(), Heed(HeedProfile(p))}
}

// HeedProfile returns heed's profile for a server imitating p: Jira's for
// jira, the generic one (nil) for the others.
func HeedProfile(p sim.Provider) *profile.Profile {
	switch p {
	case sim.Jira, "":
		return profile.Jira()
	case sim.GitHub:
		return profile.GitHub()
	case sim.OpenAI:
		return profile.OpenAI()
	}
	return nil
}

// None sends each request once and returns whatever comes back.
func None() Client {
	return Client{Name: "none", New: func(base http.RoundTripper) http.RoundTripper { return base }}
}

// NaiveRetry retries a 429, a 503 or a transport error at once, up to
// retries times, without waiting and whatever the method.
func NaiveRetry(retries int) Client {
	return Client{Name: "naive-retry", New: func(base http.RoundTripper) http.RoundTripper {
		return &naiveRetry{base: base, retries: retries}
	}}
}

type naiveRetry struct {
	base    http.RoundTripper
	retries int
}

func (n *naiveRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		out := req
		if attempt > 0 {
			out = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				out.Body = body
			}
		}
		resp, err := n.base.RoundTrip(out)
		if err != nil {
			if attempt >= n.retries || req.Context().Err() != nil {
				return nil, err
			}
			continue
		}
		if attempt >= n.retries ||
			(resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) ||
			(req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return resp, err
		}
		discard(resp)
	}
}

// Heed is heed.Transport with profile p (nil means the generic profile),
// seeded jitter, and every other field at its default.
func Heed(p *profile.Profile) Client {
	return Client{Name: "heed", New: func(base http.RoundTripper) http.RoundTripper {
		return &heed.Transport{Base: base, Profile: p, Rand: rand.New(rand.NewPCG(1, 2))}
	}}
}

// Seed is the client of Jira's rate-limiting guide: see [SeedTransport].
func Seed() Client {
	return Client{Name: "guide", New: func(base http.RoundTripper) http.RoundTripper {
		return NewSeedTransport(base)
	}}
}

// Labeled returns a RoundTripper that sets the X-Sim-Client header to name
// on every request it sends through base, so that the simulator counts the
// client's requests apart.
func Labeled(base http.RoundTripper, name string) http.RoundTripper {
	return &labeled{base: base, name: name}
}

// labeled sets the X-Sim-Client header on every request it sends, so that
// the simulator counts the client's requests apart.
type labeled struct {
	base http.RoundTripper
	name string
}

func (l *labeled) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Set("X-Sim-Client", l.name)
	return l.base.RoundTrip(out)
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
