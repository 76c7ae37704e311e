package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
)

// Defaults of a [Handler].
const (
	// DefaultWaitThreshold is the Transport's MaxWait when the Handler
	// makes its own Transport: the longest single wait the proxy holds a
	// request for.
	DefaultWaitThreshold = 5 * time.Second
	// DefaultMaxWait is the longest the proxy holds a request in all,
	// across waits and retries, before it is answered.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxBufferedBody is the largest request body buffered so that
	// it can be retried.
	DefaultMaxBufferedBody = 1 << 20
	// DefaultMaxBuffered bounds the bytes of request bodies and cached
	// response copies held at once, for the whole Handler.
	DefaultMaxBuffered = 32 << 20
)

// Handler forwards requests to Upstream through Transport. Its fields must
// not change once it serves.
type Handler struct {
	// Upstream is the API's base URL: requests to the proxy's /a/b go to
	// Upstream's /a/b (after Upstream's own path, if it has one).
	Upstream *url.URL
	// Transport sends the requests, and its MaxWait is the wait threshold:
	// waits up to it are waited, longer blocks answered at once, and a
	// throttle's Retry-After up to it retried. The Handler takes it over on
	// first use: it wraps Base and the On* hooks (calling those already
	// set), so a Transport serves one Handler. Nil means a Transport with
	// MaxWait DefaultWaitThreshold.
	Transport *heed.Transport
	// Cache, when set, keeps recent GET responses to answer with while the
	// upstream has paused a scope. Nil means no cache.
	Cache *Cache
	// MaxWait bounds how long a request is held in all before it is sent
	// or answered. Zero means DefaultMaxWait.
	MaxWait time.Duration
	// Tenant returns the account a request's allowance belongs to (see
	// [TenantFromHeader], [TenantFromPathPrefix], [TenantFromCredential]),
	// or "" for the profile's. It is passed to [heed.WithTenant], which
	// hashes it. Nil means the profile's tenancy.
	Tenant func(*http.Request) string
	// MaxBufferedBody is the largest request body buffered for retries.
	// Zero means DefaultMaxBufferedBody; negative means none.
	MaxBufferedBody int64
	// MaxBuffered bounds the bytes of request bodies and response copies
	// held at once. Zero means DefaultMaxBuffered.
	MaxBuffered int64
	// Ready reports whether what the proxy depends on besides the upstream
	// is reachable (a Redis store), for /_heed/readyz and the status page.
	// Nil means nothing else.
	Ready func(context.Context) error
	// Dial connects to the upstream to check that it is reachable, for
	// /_heed/readyz and the status page; the connection is closed at once.
	// Nil means a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// StoreName names the store on the status page, such as "redis
	// 10.0.0.5:6379". Empty means "memory".
	StoreName string
	// Logger receives, at Info, a line for each answer the proxy makes
	// itself, and at Warn one for each upstream error (a 502). Nil means
	// silent.
	Logger *slog.Logger

	once    sync.Once
	rp      *httputil.ReverseProxy
	tr      *heed.Transport
	mem     budget
	track   tracker
	reg     *prometheus.Registry
	answers *prometheus.CounterVec
	ready   readiness
}

// Response headers the proxy sets on answers it makes itself.
const (
	HeaderSource = "X-Heed-Source" // "cache" or "heed"
	HeaderScope  = "X-Heed-Scope"  // the paused scope's key: tenants appear only hashed
)

// reqState travels in a request's context from ServeHTTP through the
// Transport's hooks to the upstream send and back.
type reqState struct {
	client       context.Context // the client's, without the hold deadline
	in           *http.Request
	tenant       string // raw: only ever passed to heed.WithTenant
	key          key
	credentialed bool
	waiting      atomic.Bool
	send         context.Context // set by the first send
	cancelSend   func()
}

type stateKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

func (h *Handler) maxWait() time.Duration { return orDefault(h.MaxWait, DefaultMaxWait) }

func (h *Handler) maxBufferedBody() int64 {
	if h.MaxBufferedBody < 0 {
		return 0
	}
	return orDefault(h.MaxBufferedBody, DefaultMaxBufferedBody)
}

func (h *Handler) init() {
	h.once.Do(func() {
		h.tr = h.Transport
		if h.tr == nil {
			h.tr = &heed.Transport{MaxWait: DefaultWaitThreshold}
		}
		h.mem.limit = orDefault(h.MaxBuffered, DefaultMaxBuffered)
		h.hook()
		h.reg = h.registry()
		h.rp = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(h.Upstream)
				pr.SetXForwarded()
			},
			Transport:      roundTripper{h},
			ModifyResponse: h.modify,
			ErrorHandler:   h.fail,
		}
	})
}

// hook wraps the Transport's Base and hooks to feed the status page and
// to send with the client's context rather than the hold deadline.
func (h *Handler) hook() {
	t := h.tr
	t.Base = sender{base: t.Base, h: h}
	onWait, onLimited, onBlock := t.OnWait, t.OnLimited, t.OnBlock
	t.OnWait = func(e heed.WaitEvent) {
		if onWait != nil {
			onWait(e)
		}
		if st := stateOf(e.Request.Context()); st != nil && st.waiting.CompareAndSwap(false, true) {
			h.track.waiting.Add(1)
		}
		h.track.waited(e)
	}
	t.OnLimited = func(e heed.LimitedEvent) {
		if onLimited != nil {
			onLimited(e)
		}
		h.track.limited(e)
	}
	t.OnBlock = func(e heed.BlockEvent) {
		if onBlock != nil {
			onBlock(e)
		}
		h.track.block(e)
	}
}

func (h *Handler) doneWaiting(st *reqState) {
	if st != nil && st.waiting.CompareAndSwap(true, false) {
		h.track.waiting.Add(-1)
	}
}

// roundTripper is the Transport as the ReverseProxy sees it.
type roundTripper struct{ h *Handler }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	defer rt.h.doneWaiting(stateOf(req.Context()))
	return rt.h.tr.RoundTrip(req)
}

// sender is the Transport's Base: it sends with the client's context, so
// that the hold deadline bounds heed's waiting but not the upstream's
// answer.
type sender struct {
	base http.RoundTripper
	h    *Handler
}

func (s sender) RoundTrip(req *http.Request) (*http.Response, error) {
	base := s.base
	if base == nil {
		base = http.DefaultTransport
	}
	st := stateOf(req.Context())
	if st == nil {
		return base.RoundTrip(req)
	}
	s.h.doneWaiting(st)
	if st.send == nil {
		// Without the deadline, but with the values (an httptrace the
		// ReverseProxy set), and ended when the client goes away.
		ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
		stop := context.AfterFunc(st.client, cancel)
		st.send, st.cancelSend = ctx, func() { stop(); cancel() }
	}
	return base.RoundTrip(req.WithContext(st.send))
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.init()
	if r.URL.Path == "/_heed" || strings.HasPrefix(r.URL.Path, "/_heed/") {
		h.serveOwn(w, r)
		return
	}
	h.track.requests.Add(1)
	h.track.inFlight.Add(1)
	defer h.track.inFlight.Add(-1)

	held, err := h.buffer(r)
	defer h.mem.release(held)
	if err != nil {
		h.answer(w, r, http.StatusBadRequest, "bad_request", problem{Title: "Request body could not be read", Detail: "heed proxy: reading the request body failed"})
		return
	}
	st := &reqState{client: r.Context(), in: r}
	defer func() {
		if st.cancelSend != nil {
			st.cancelSend()
		}
	}()
	ctx := context.WithValue(r.Context(), stateKey{}, st)
	if h.Tenant != nil {
		if st.tenant = h.Tenant(r); st.tenant != "" {
			ctx = heed.WithTenant(ctx, st.tenant)
		}
	}
	if h.Cache != nil && r.Method == http.MethodGet {
		st.key, st.credentialed = cacheKeyOf(r, st.tenant)
	}
	ctx, cancel := context.WithTimeout(ctx, h.maxWait())
	defer cancel()
	h.rp.ServeHTTP(w, r.WithContext(ctx))
}

// modify records the limits an upstream response advertises, and keeps a
// copy of it as it streams when it may be cached.
func (h *Handler) modify(resp *http.Response) error {
	req := resp.Request
	if req == nil {
		return nil
	}
	st := stateOf(req.Context())
	h.track.observe(h.tr.EndpointScope(req), resp.StatusCode, resp.Header, time.Now())
	if h.Cache == nil || st == nil || req.Method != http.MethodGet || resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	if resp.ContentLength > int64(orDefault(h.Cache.MaxBody, DefaultMaxBody)) {
		return nil
	}
	if _, ok := h.Cache.storable(st.in, st.credentialed, resp.StatusCode, resp.Header); !ok {
		return nil
	}
	tb := &teeBody{rc: resp.Body, h: h, st: st, status: resp.StatusCode, header: resp.Header.Clone()}
	resp.Body = tb
	return nil
}

// problem is an RFC 9457 problem details body.
type problem struct {
	Type       string  `json:"type"`
	Title      string  `json:"title"`
	Status     int     `json:"status"`
	Detail     string  `json:"detail,omitempty"`
	Scope      string  `json:"scope,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	RetryAfter float64 `json:"retry_after,omitempty"`
}

// problemBase is where each problem type is described.
const problemBase = "https://github.com/heedhttp/heed/blob/main/README.md#proxy-"

// fail answers a request the Transport did not complete.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	var le *heed.LimitedError
	var oe *breaker.OpenError
	switch {
	case st != nil && st.client.Err() != nil:
		// The client went away; nobody reads the answer.
		w.WriteHeader(http.StatusBadGateway)
	case errors.As(err, &le):
		status := h.track.blockStatus(le.Scope)
		secs := retrySeconds(le.RetryAfter)
		if r.Method == http.MethodGet && h.Cache != nil && st != nil {
			if e, ok := h.Cache.get(r, st.key, time.Now()); ok {
				h.serveCopy(w, r, e, le, secs)
				return
			}
		}
		kind := "blocked"
		title := "Upstream rate limit in effect"
		detail := fmt.Sprintf("the upstream paused this request's scope for %ds; heed proxy answers at once rather than hold the request", secs)
		switch le.Reason {
		case "paced":
			kind, title = "paced", "Request would wait too long for its turn"
			detail = fmt.Sprintf("pacing to the upstream's limits would hold this request for %ds, longer than the proxy waits", secs)
		case "spaced":
			kind, title = "spaced", "Write to this resource would wait too long"
			detail = fmt.Sprintf("writes to one resource are spaced; this one would wait %ds", secs)
		}
		if le.Err != nil {
			detail += "; the request has been held for as long as the proxy holds one"
		}
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.Header().Set(HeaderScope, le.Scope)
		h.answer(w, r, status, kind, problem{Title: title, Detail: detail, Scope: le.Scope, Reason: h.blockReason(le), RetryAfter: float64(secs)})
	case errors.As(err, &oe):
		secs := retrySeconds(oe.RetryAfter)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		h.answer(w, r, http.StatusServiceUnavailable, "circuit_open", problem{Title: "Upstream failing: circuit open", Detail: "recent upstream errors opened this tenant's circuit breaker", RetryAfter: float64(secs)})
	case errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		h.answer(w, r, http.StatusServiceUnavailable, "busy", problem{Title: "Request held too long", Detail: fmt.Sprintf("the request waited %s, as long as the proxy holds one, for a concurrency slot", h.maxWait()), RetryAfter: 1})
	default:
		h.answered("upstream_error")
		if h.Logger != nil {
			h.Logger.LogAttrs(r.Context(), slog.LevelWarn, "heed proxy: upstream error", slog.Int("status", http.StatusBadGateway),
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
		}
		h.write(w, http.StatusBadGateway, "upstream_error", problem{Title: "Upstream error", Detail: "heed proxy could not get an answer from the upstream"})
	}
}

// blockReason is the upstream's reason for the block le met, if the
// proxy saw it.
func (h *Handler) blockReason(le *heed.LimitedError) string {
	h.track.mu.Lock()
	defer h.track.mu.Unlock()
	if s, ok := h.track.scopes[le.Scope]; ok && s.BlockReason != "" {
		return s.BlockReason
	}
	return le.Reason
}

// quotable keeps what may stand in an HTTP quoted-string: the reason
// comes from the upstream.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func retrySeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// serveCopy answers r with a cached copy while its scope is paused.
func (h *Handler) serveCopy(w http.ResponseWriter, r *http.Request, e *entry, le *heed.LimitedError, secs int) {
	hdr := w.Header()
	for k, v := range e.header {
		hdr[k] = v
	}
	age := int(time.Since(e.stored).Seconds())
	hdr.Set(HeaderSource, "cache")
	hdr.Set(HeaderScope, le.Scope)
	hdr.Set("Age", strconv.Itoa(age))
	hdr.Set("Warning", fmt.Sprintf(`110 heed-proxy "Response is Stale: upstream paused for %ds (%s)"`, secs, quotable(h.blockReason(le))))
	h.answered("cache")
	if h.Logger != nil {
		h.Logger.LogAttrs(r.Context(), slog.LevelInfo, "heed proxy: answered from cache while paused", slog.Int("status", e.status),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("scope", le.Scope), slog.Int("age", age))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

// answer writes and logs an answer the proxy makes itself.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, status int, kind string, p problem) {
	h.answered(kind)
	if h.Logger != nil {
		h.Logger.LogAttrs(r.Context(), slog.LevelInfo, "heed proxy: answered", slog.Int("status", status), slog.String("kind", kind),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("scope", p.Scope), slog.Float64("retry_after", p.RetryAfter))
	}
	h.write(w, status, kind, p)
}

func (h *Handler) write(w http.ResponseWriter, status int, kind string, p problem) {
	p.Type, p.Status = problemBase+strings.ReplaceAll(kind, "_", "-"), status
	hdr := w.Header()
	hdr.Set("Content-Type", "application/problem+json")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set(HeaderSource, "heed")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}
