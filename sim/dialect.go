package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// lowFraction is how little of a quota must remain for the jira profile to
// send r in RateLimit and Beta-RateLimit: Jira omits it when a client is
// well within the limit.
const lowFraction = 0.2

// respond writes o's status, headers and body the way the profile's
// provider does, and sets the waits it mandates; s.mu is held.
func (s *Server) respond(o *outcome) {
	if s.dialects {
		s.perLimit(o)
		return
	}
	switch s.imitates {
	case Jira, IETF:
		s.structured(o)
	case GitHub:
		s.github(o)
	case OpenAI:
		s.openai(o)
	case Silent:
		if o.rej != nil {
			o.status, o.bare = http.StatusTooManyRequests, true
			return
		}
	default:
		s.provider(o) // providers.go
	}
	if o.rej == nil && o.body == nil {
		o.body = okBody(o.req)
	}
}

func okBody(q *Request) []byte {
	b, _ := json.Marshal(struct {
		Tenant   string `json:"tenant"`
		Endpoint string `json:"endpoint"`
	}{q.Tenant, q.Endpoint})
	return b
}

// structured writes the IETF draft-10 structured fields, the Jira way (r
// only when low, quotas in points in Beta-RateLimit, RateLimit-Reason and
// X-RateLimit-Reset on a 429) or the draft's way (r always).
func (s *Server) structured(o *outcome) {
	jira := s.imitates == Jira
	var pol, cur, betaPol, betaCur []string
	for i := range o.views {
		v := &o.views[i]
		ru := v.rule
		if ru.Kind == Concurrency {
			continue
		}
		t := max(1, wholeSeconds(ru.reset(v.st, s.start, o.now)))
		p := fmt.Sprintf("%q;q=%d;w=%d", ru.Name, int64(ru.capacity), wholeSeconds(ru.window))
		c := strconv.Quote(ru.Name)
		if r := v.remaining(); !jira || r <= lowFraction*ru.capacity {
			c += ";r=" + strconv.FormatFloat(r, 'f', 0, 64)
			if r < 1 && ru.windowed() {
				// Until the window really turns: t is rounded up, an
				// upper bound of that, not a wait of its own.
				v.mandate = ru.reset(v.st, s.start, o.now)
			}
		}
		c += ";t=" + strconv.FormatInt(t, 10)
		if jira && ru.Unit == Points {
			betaPol, betaCur = append(betaPol, p), append(betaCur, c)
		} else {
			pol, cur = append(pol, p), append(cur, c)
		}
	}
	setList(o.header, "RateLimit-Policy", pol)
	setList(o.header, "RateLimit", cur)
	setList(o.header, "Beta-RateLimit-Policy", betaPol)
	setList(o.header, "Beta-RateLimit", betaCur)
	if o.rej == nil {
		return
	}
	ra := o.rej.rule.retryAfter(o.wait)
	o.rej.mandate = max(o.rej.mandate, ra)
	o.status = http.StatusTooManyRequests
	o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(ra), 10))
	if !jira {
		o.body = []byte(`{"error":"rate limit exceeded"}`)
		return
	}
	o.header.Set("X-RateLimit-Reset", ceilSecond(o.now.Add(ra)).UTC().Format("2006-01-02T15:04:05Z"))
	o.header.Set("RateLimit-Reason", o.rej.rule.reason)
	o.body = []byte(`{"errorMessages":["Rate limit exceeded."],"errors":{}}`)
}

func setList(h http.Header, name string, items []string) {
	if len(items) > 0 {
		h.Set(name, strings.Join(items, ", "))
	}
}

// ceilSecond rounds t up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if u := t.Truncate(time.Second); u.Before(t) {
		return u.Add(time.Second)
	}
	return t
}

// github writes x-ratelimit-* for the request's resource category, a 403
// when it is exhausted, and a 403 with a message or a 429 with retry-after
// (chosen at random) for the secondary limit.
func (s *Server) github(o *outcome) {
	var v *view
	for i := range o.views {
		if o.views[i].rule.Kind != Concurrency && (v == nil || o.rej == &o.views[i]) {
			v = &o.views[i]
		}
	}
	if v != nil {
		ru := v.rule
		r := v.remaining()
		reset := ceilSecond(o.now.Add(ru.reset(v.st, s.start, o.now)))
		o.header.Set("X-Ratelimit-Limit", strconv.FormatInt(int64(ru.capacity), 10))
		o.header.Set("X-Ratelimit-Remaining", strconv.FormatFloat(r, 'f', 0, 64))
		o.header.Set("X-Ratelimit-Reset", strconv.FormatInt(ceilSecond(reset.Add(s.cfg.ClockOffset)).Unix(), 10))
		o.header.Set("X-Ratelimit-Used", strconv.FormatFloat(ru.capacity-r, 'f', 0, 64))
		o.header.Set("X-Ratelimit-Resource", ru.Name)
		if r < 1 && ru.windowed() {
			v.mandate = reset.Sub(o.now)
		}
	}
	switch {
	case o.rej == nil:
		return
	case o.rej.rule.Kind == Concurrency:
		// GitHub: without retry-after, wait at least a minute.
		o.rej.mandate = o.rej.rule.retryAfter(0)
		if s.rng.IntN(2) == 0 {
			o.status = http.StatusForbidden
		} else {
			o.status = http.StatusTooManyRequests
			o.header.Set("Retry-After", strconv.FormatInt(wholeSeconds(o.rej.mandate), 10))
		}
		o.body = []byte(`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`)
	default:
		o.status = http.StatusForbidden
		o.rej.mandate = max(o.rej.mandate, ceilSecond(o.now.Add(o.wait)).Sub(o.now))
		o.body = []byte(`{"message":"API rate limit exceeded.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`)
	}
}

// openai writes x-ratelimit-{limit,remaining,reset}-{requests,tokens}, and
// on a 429 the wait in the error message, as OpenAI does.
func (s *Server) openai(o *outcome) {
	for i := range o.views {
		v := &o.views[i]
		ru := v.rule
		if ru.Kind == Concurrency {
			continue
		}
		suffix := "-Requests"
		if ru.Unit == Tokens {
			suffix = "-Tokens"
		}
		reset := ceilMilli(ru.reset(v.st, s.start, o.now))
		r := v.remaining()
		o.header.Set("X-Ratelimit-Limit"+suffix, strconv.FormatInt(int64(ru.capacity), 10))
		o.header.Set("X-Ratelimit-Remaining"+suffix, strconv.FormatFloat(r, 'f', 0, 64))
		o.header.Set("X-Ratelimit-Reset"+suffix, reset.String())
		if r < 1 && ru.windowed() {
			v.mandate = reset
		}
	}
	if o.rej == nil {
		o.req.parse()
		o.body, _ = json.Marshal(map[string]any{
			"object": "chat.completion",
			"model":  o.req.model,
			"usage":  map[string]float64{"total_tokens": o.req.tokens},
		})
		return
	}
	ru := o.rej.rule
	wait := max(time.Millisecond, ceilMilli(o.wait))
	if ru.RetryAfter > 0 {
		wait = ru.RetryAfter
	}
	o.rej.mandate = max(o.rej.mandate, wait)
	o.status = http.StatusTooManyRequests
	per := "requests per min (RPM)"
	if ru.Unit == Tokens {
		per = "tokens per min (TPM)"
	}
	o.req.parse()
	msg := fmt.Sprintf("Rate limit reached for %s in organization %s on %s: Limit %d, Used %d, Requested %d. Please try again in %s.",
		o.req.model, o.req.Tenant, per, int64(ru.capacity), int64(ru.capacity-o.rej.remaining()), int64(o.rej.cost), wait)
	o.body, _ = json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": string(ru.Unit), "param": nil, "code": "rate_limit_exceeded",
	}})
}

func ceilMilli(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// malform replaces every rate-limit header in h with garbage.
func malform(h http.Header) {
	if h.Get("Retry-After") == "" {
		h.Set("Retry-After", "soon")
	}
	for k := range h {
		l := strings.ToLower(k)
		switch {
		case l == "retry-after":
			h.Set(k, "soon")
		case !strings.Contains(l, "ratelimit"):
		case strings.Contains(l, "reset"):
			h.Set(k, "tomorrow")
		case strings.HasSuffix(l, "ratelimit") || strings.HasSuffix(l, "policy"):
			h.Set(k, `"unterminated;q=;w=-1,,`)
		default:
			h.Set(k, "lots")
		}
	}
}
