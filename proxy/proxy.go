// Package proxy is heed as a sidecar: an [http.Handler] that forwards every
// request to one upstream API through a [heed.Transport], so that programs
// in any language, pointed at it, are paced, scoped and retried the same
// way. Several proxies share their state through a Redis store.
//
// While a scope the request belongs to is paused by the upstream (a 429's
// wait, an exhausted quota), the proxy does not queue the client for
// minutes: it answers at once, from its [Cache] for a GET it has a recent
// response for, and otherwise with a synthetic 429 carrying Retry-After
// (seed 004). Pacing waits, which are short, are still waited. Requests
// that are not safe to repeat are never retried on a client's behalf.
package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/breaker"
)

// Handler forwards requests to Upstream through Transport. Its fields must
// not change once it serves.
type Handler struct {
	// Upstream is the API's base URL: requests to the proxy's /a/b go to
	// Upstream's /a/b (after Upstream's own path, if it has one).
	Upstream *url.URL
	// Transport sends the requests. Nil means a zero heed.Transport.
	Transport *heed.Transport
	// Cache, when set, keeps recent GET responses to answer with while the
	// upstream has paused the client. Nil means no cache.
	Cache *Cache
	// Logger receives a line for each request answered locally and each
	// upstream error. Nil means silent.
	Logger *slog.Logger

	once sync.Once
	rp   *httputil.ReverseProxy
	tr   *heed.Transport
}

// Response headers the proxy sets on answers it makes itself.
const (
	HeaderSource = "X-Heed-Source" // "cache" or "heed"
	HeaderScope  = "X-Heed-Scope"  // the paused scope
)

func (h *Handler) init() {
	h.once.Do(func() {
		h.tr = h.Transport
		if h.tr == nil {
			h.tr = &heed.Transport{}
		}
		h.rp = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(h.Upstream)
				pr.SetXForwarded()
			},
			Transport:      h.tr,
			ModifyResponse: h.store,
			ErrorHandler:   h.fail,
			ErrorLog:       nil,
		}
	})
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.init()
	// A block fails at once instead of holding the client for its length.
	r = r.WithContext(heed.WithFailFast(r.Context()))
	if err := rewindable(r); err != nil {
		http.Error(w, "heed proxy: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.rp.ServeHTTP(w, r)
}

// maxRewindBody is the largest request body the proxy keeps so that heed
// may send it again; larger bodies are streamed and never retried.
const maxRewindBody = 1 << 20

// rewindable reads a small request body into memory and gives r a GetBody,
// so that the Transport may retry the request when it is safe to repeat.
func rewindable(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength < 0 || r.ContentLength > maxRewindBody {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRewindBody+1))
	_ = r.Body.Close()
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// store keeps a copy of a successful GET's response in the cache.
func (h *Handler) store(resp *http.Response) error {
	req := resp.Request
	if h.Cache == nil || req == nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return nil
	}
	limit := orDefault(h.Cache.MaxBody, DefaultMaxBody)
	if resp.ContentLength > int64(limit) {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	if err != nil || len(body) > limit {
		return nil // too big, or broken: pass it on uncached
	}
	h.Cache.put(req, resp.StatusCode, resp.Header, body, time.Now())
	return nil
}

// fail answers a request the Transport did not complete: from the cache or
// with a synthetic 429 when the scope is paused, 503 when the breaker is
// open, 502 otherwise.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var le *heed.LimitedError
	var oe *breaker.OpenError
	switch {
	case errors.As(err, &le):
		if r.Method == http.MethodGet && h.Cache != nil {
			if e, ok := h.Cache.get(r, time.Now()); ok {
				h.log(r, "answered from cache while paused", slog.String("scope", le.Scope))
				hdr := w.Header()
				for k, v := range e.header {
					hdr[k] = v
				}
				hdr.Set(HeaderSource, "cache")
				hdr.Set("Age", strconv.Itoa(int(time.Since(e.stored).Seconds())))
				w.WriteHeader(e.status)
				_, _ = w.Write(e.body)
				return
			}
		}
		h.log(r, "refused while paused", slog.String("scope", le.Scope), slog.Duration("retry_after", le.RetryAfter))
		synthetic(w, http.StatusTooManyRequests, le.Scope, le.RetryAfter, "rate_limited")
	case errors.As(err, &oe):
		h.log(r, "refused: circuit open", slog.String("tenant", oe.Name))
		synthetic(w, http.StatusServiceUnavailable, oe.Name, oe.RetryAfter, "circuit_open")
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		w.WriteHeader(http.StatusBadGateway)
	default:
		h.log(r, "upstream error", slog.Any("err", err))
		w.Header().Set(HeaderSource, "heed")
		http.Error(w, "heed proxy: upstream error", http.StatusBadGateway)
	}
}

func synthetic(w http.ResponseWriter, status int, scope string, after time.Duration, code string) {
	secs := max(1, int(math.Ceil(after.Seconds())))
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Retry-After", strconv.Itoa(secs))
	hdr.Set(HeaderSource, "heed")
	hdr.Set(HeaderScope, scope)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error             string `json:"error"`
		Source            string `json:"source"`
		Scope             string `json:"scope"`
		RetryAfterSeconds int    `json:"retry_after_seconds"`
	}{code, "heed-proxy", scope, secs})
}

func (h *Handler) log(r *http.Request, msg string, attrs ...slog.Attr) {
	if h.Logger == nil {
		return
	}
	attrs = append(attrs, slog.String("method", r.Method), slog.String("path", r.URL.Path))
	h.Logger.LogAttrs(r.Context(), slog.LevelInfo, "heed proxy: "+msg, attrs...)
}
