package otelheed

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/internal/labels"
	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

// ScopeName is the instrumentation scope of the Meter an
// [Instrumentation] uses.
const ScopeName = "github.com/heedhttp/heed/otelheed"

// Instrumentation records what Transports do into OpenTelemetry metrics
// and span events. Its zero value uses the global MeterProvider. It is
// safe for concurrent use, and one Instrumentation may instrument several
// Transports: their counts add up, and a limit's gauges hold what any of
// them last saw. It must not be copied after first use.
type Instrumentation struct {
	// MeterProvider supplies the Meter. Nil means otel.GetMeterProvider().
	// Span events need no provider: they go on the span the request's
	// context carries, from whatever tracer started it.
	MeterProvider metric.MeterProvider

	once sync.Once
	err  error // from creating the instruments

	waits         metric.Float64Histogram
	shadowWaits   metric.Float64Histogram
	throttles     metric.Int64Counter
	blocks        metric.Float64Histogram
	retries       metric.Int64Counter
	shadowRetries metric.Int64Counter
	denied        metric.Int64Counter
	refusals      metric.Int64Counter
	waiting       metric.Int64ObservableGauge
	utilization   metric.Float64ObservableGauge
	remaining     metric.Float64ObservableGauge
	storeHealthy  metric.Int64ObservableGauge
	storeSwitches metric.Int64ObservableCounter

	names labels.LimitNames

	mu         sync.Mutex
	transports []*heed.Transport
	limits     map[limitKey]limitValue // at most MaxLimits+1 names by the units

	storeMu   sync.Mutex
	unhealthy bool
	switches  atomic.Int64
}

type limitKey struct{ name, unit string }

type limitValue struct {
	remaining   float64
	utilization float64
	hasQuota    bool
}

var (
	waitBuckets  = []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	blockBuckets = []float64{.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600}
)

// setup creates the instruments, once.
func (in *Instrumentation) setup() error {
	in.once.Do(func() {
		mp := in.MeterProvider
		if mp == nil {
			mp = otel.GetMeterProvider()
		}
		m := mp.Meter(ScopeName)
		var errs []error
		check := func(err error) {
			if err != nil {
				errs = append(errs, err)
			}
		}
		var err error
		in.waits, err = m.Float64Histogram("heed.wait.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(waitBuckets...),
			metric.WithDescription("Time requests waited before being sent, by reason: blocked, paced, busy, spaced."))
		check(err)
		in.shadowWaits, err = m.Float64Histogram("heed.shadow.wait.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(waitBuckets...),
			metric.WithDescription("Time requests would have waited in shadow mode, by reason and whether they would have been refused."))
		check(err)
		in.throttles, err = m.Int64Counter("heed.throttled", metric.WithUnit("{response}"),
			metric.WithDescription("Responses that were rate-limit rejections, by status and server reason."))
		check(err)
		in.blocks, err = m.Float64Histogram("heed.block.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(blockBuckets...),
			metric.WithDescription("Scopes blocked, and for how long, by reason."))
		check(err)
		in.retries, err = m.Int64Counter("heed.retries", metric.WithUnit("{retry}"),
			metric.WithDescription("Requests sent again, by what was retried: throttle, 5xx or error."))
		check(err)
		in.shadowRetries, err = m.Int64Counter("heed.shadow.retries", metric.WithUnit("{retry}"),
			metric.WithDescription("Retries shadow mode reported and did not make, by what would have been retried."))
		check(err)
		in.denied, err = m.Int64Counter("heed.retry_budget.denied", metric.WithUnit("{retry}"),
			metric.WithDescription("Retries of server or transport errors not made because the retry budget was spent."))
		check(err)
		in.refusals, err = m.Int64Counter("heed.breaker.refusals", metric.WithUnit("{request}"),
			metric.WithDescription("Requests refused by an open circuit breaker."))
		check(err)
		in.waiting, err = m.Int64ObservableGauge("heed.waiting.requests", metric.WithUnit("{request}"),
			metric.WithDescription("Requests waiting now before being sent, by the kind of scope that holds them and the reason."))
		check(err)
		in.utilization, err = m.Float64ObservableGauge("heed.limit.utilization", metric.WithUnit("1"),
			metric.WithDescription("Share of each limit used (1 - remaining/quota), as the server last advertised it."))
		check(err)
		in.remaining, err = m.Float64ObservableGauge("heed.limit.remaining",
			metric.WithDescription("Units left of each limit, as the server last advertised it."))
		check(err)
		in.storeHealthy, err = m.Int64ObservableGauge("heed.store.healthy",
			metric.WithDescription("1 while the store uses its shared backend (Redis), 0 while it has fallen back to local state."))
		check(err)
		in.storeSwitches, err = m.Int64ObservableCounter("heed.store.switches", metric.WithUnit("{switch}"),
			metric.WithDescription("Switches of the store between its shared backend and the local fallback."))
		check(err)
		_, err = m.RegisterCallback(in.observe, in.waiting, in.utilization, in.remaining, in.storeHealthy, in.storeSwitches)
		check(err)
		in.err = errors.Join(errs...)
	})
	return in.err
}

// Instrument sets t's hooks to record into in, keeping any hooks t already
// had (they are called first), and includes t's waiting requests in
// heed.waiting.requests (in keeps t for that). Call it before t is in use,
// once per Transport. It returns the error, if any, of creating the
// instruments, and leaves t unchanged then.
func (in *Instrumentation) Instrument(t *heed.Transport) error {
	if err := in.setup(); err != nil {
		return err
	}
	in.mu.Lock()
	if !slices.Contains(in.transports, t) {
		in.transports = append(in.transports, t)
	}
	in.mu.Unlock()
	onWait, onLimited, onRetry, onBlock, onBreaker, onLimits := t.OnWait, t.OnLimited, t.OnRetry, t.OnBlock, t.OnBreaker, t.OnLimits
	t.OnWait = func(e heed.WaitEvent) {
		if onWait != nil {
			onWait(e)
		}
		in.wait(e)
	}
	t.OnLimited = func(e heed.LimitedEvent) {
		if onLimited != nil {
			onLimited(e)
		}
		in.limited(e)
	}
	t.OnRetry = func(e heed.RetryEvent) {
		if onRetry != nil {
			onRetry(e)
		}
		in.retry(e)
	}
	t.OnBlock = func(e heed.BlockEvent) {
		if onBlock != nil {
			onBlock(e)
		}
		in.block(e)
	}
	t.OnBreaker = func(e heed.BreakerEvent) {
		if onBreaker != nil {
			onBreaker(e)
		}
		in.breaker(e)
	}
	t.OnLimits = func(e heed.LimitsEvent) {
		if onLimits != nil {
			onLimits(e)
		}
		in.limitsSeen(e.Limits)
	}
	return nil
}

// Attribute keys.
const (
	attrReason       = attribute.Key("heed.reason")
	attrWaitReason   = attribute.Key("heed.wait.reason")
	attrWaitDuration = attribute.Key("heed.wait.duration")
	attrRefused      = attribute.Key("heed.wait.refused")
	attrShadow       = attribute.Key("heed.shadow")
	attrStatus       = attribute.Key("http.response.status_code")
	attrRetryAfter   = attribute.Key("heed.retry_after")
	attrAttempt      = attribute.Key("heed.attempt")
	attrRetryAttempt = attribute.Key("heed.retry.attempt")
	attrRetryClass   = attribute.Key("heed.retry.class")
	attrRetryDelay   = attribute.Key("heed.retry.delay")
	attrRetryDenied  = attribute.Key("heed.retry.denied")
	attrBreakerAfter = attribute.Key("heed.breaker.retry_after")
	attrBlockFor     = attribute.Key("heed.block.duration")
	attrKind         = attribute.Key("heed.scope.kind")
	attrLimitName    = attribute.Key("heed.limit.name")
	attrLimitUnit    = attribute.Key("heed.limit.unit")
)

func (in *Instrumentation) wait(e heed.WaitEvent) {
	ctx := e.Request.Context()
	reason := attrWaitReason.String(e.Reason.String())
	if e.Shadow {
		in.shadowWaits.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(reason, attrRefused.Bool(e.Refused)))
	} else {
		in.waits.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(reason))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("heed.wait", trace.WithAttributes(reason, attrWaitDuration.Float64(e.Wait.Seconds()),
			attrShadow.Bool(e.Shadow), attrRefused.Bool(e.Refused)))
	}
}

func (in *Instrumentation) limited(e heed.LimitedEvent) {
	ctx := e.Request.Context()
	status, reason := attrStatus.Int(e.StatusCode), attrReason.String(labels.Reason(e.Reason))
	in.throttles.Add(ctx, 1, metric.WithAttributes(status, reason))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("heed.throttled", trace.WithAttributes(status, reason,
			attrRetryAfter.Float64(e.RetryAfter.Seconds()), attrAttempt.Int(e.Attempt)))
	}
}

func (in *Instrumentation) retry(e heed.RetryEvent) {
	ctx := e.Request.Context()
	class := attrRetryClass.String(labels.RetryClass(e.StatusCode, e.Throttled))
	switch {
	case e.Denied:
		in.denied.Add(ctx, 1)
	case e.Shadow:
		in.shadowRetries.Add(ctx, 1, metric.WithAttributes(class))
	default:
		in.retries.Add(ctx, 1, metric.WithAttributes(class))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("heed.retry", trace.WithAttributes(attrRetryAttempt.Int(e.Attempt), class,
			attrStatus.Int(e.StatusCode), attrRetryDelay.Float64(e.Delay.Seconds()),
			attrRetryDenied.Bool(e.Denied), attrShadow.Bool(e.Shadow)))
	}
}

func (in *Instrumentation) block(e heed.BlockEvent) {
	ctx := context.Background()
	if e.Request != nil {
		ctx = e.Request.Context()
	}
	reason := attrReason.String(labels.Reason(e.Reason))
	in.blocks.Record(ctx, e.For.Seconds(), metric.WithAttributes(reason))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("heed.block", trace.WithAttributes(reason, attrBlockFor.Float64(e.For.Seconds())))
	}
}

func (in *Instrumentation) breaker(e heed.BreakerEvent) {
	ctx := e.Request.Context()
	in.refusals.Add(ctx, 1)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("heed.breaker", trace.WithAttributes(attrBreakerAfter.Float64(e.RetryAfter.Seconds())))
	}
}

func (in *Instrumentation) limitsSeen(limits []heed.Limit) {
	for i := range limits {
		l := &limits[i]
		if l.Remaining < 0 {
			continue // nothing to say of how close it is
		}
		k := limitKey{in.names.Label(l.Name, l.Scope), labels.Unit(l.Unit)}
		v := limitValue{remaining: l.Remaining}
		if l.Quota > 0 {
			v.utilization, v.hasQuota = min(max((l.Quota-l.Remaining)/l.Quota, 0), 1), true
		}
		in.mu.Lock()
		if in.limits == nil {
			in.limits = make(map[limitKey]limitValue)
		}
		in.limits[k] = v
		in.mu.Unlock()
	}
}

// observe reports the observable instruments.
func (in *Instrumentation) observe(_ context.Context, o metric.Observer) error {
	in.mu.Lock()
	ts := slices.Clone(in.transports)
	for k, v := range in.limits {
		attrs := metric.WithAttributes(attrLimitName.String(k.name), attrLimitUnit.String(k.unit))
		o.ObserveFloat64(in.remaining, v.remaining, attrs)
		if v.hasQuota {
			o.ObserveFloat64(in.utilization, v.utilization, attrs)
		}
	}
	in.mu.Unlock()

	type series struct{ kind, reason string }
	// Every kind and reason is reported, zeros included, so that a series
	// does not vanish when nothing waits.
	n := make(map[series]int64)
	for k := scope.KindGlobal; k <= scope.KindLimit; k++ {
		for r := store.Blocked; r <= store.Spaced; r++ {
			n[series{k.String(), r.String()}] = 0
		}
	}
	for _, t := range ts {
		for _, w := range t.Waiting() {
			n[series{w.Kind, w.Reason}] += int64(w.N)
		}
	}
	for s, v := range n {
		o.ObserveInt64(in.waiting, v, metric.WithAttributes(attrKind.String(s.kind), attrWaitReason.String(s.reason)))
	}

	in.storeMu.Lock()
	healthy := int64(1)
	if in.unhealthy {
		healthy = 0
	}
	in.storeMu.Unlock()
	o.ObserveInt64(in.storeHealthy, healthy)
	o.ObserveInt64(in.storeSwitches, in.switches.Load())
	return nil
}

// StoreHealth records the store's state: healthy when it uses its shared
// backend, false when it has fallen back to local state. Wire it to
// redisstore's Config.OnHealth:
//
//	OnHealth: func(e redisstore.HealthEvent) { in.StoreHealth(e.Healthy) },
//
// A store starts healthy; each change of state counts one switch, and a
// report of the state already recorded counts none. One Instrumentation
// follows one store.
func (in *Instrumentation) StoreHealth(healthy bool) {
	in.storeMu.Lock()
	defer in.storeMu.Unlock()
	if healthy != in.unhealthy {
		return
	}
	in.unhealthy = !healthy
	in.switches.Add(1)
}
