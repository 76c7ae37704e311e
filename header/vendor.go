package header

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// bound cuts a field longer than maxFieldBytes at its last separator
// before the limit, so that no member is read cut in half.
func (p *parser) bound(name, v string, sep byte) string {
	if len(v) <= maxFieldBytes {
		return v
	}
	p.warnf("%s: longer than %d bytes; the rest is ignored", name, maxFieldBytes)
	if cut := strings.LastIndexByte(v[:maxFieldBytes], sep); cut >= 0 {
		return v[:cut]
	}
	return ""
}

// usedOf reads "used/limit", as Shopify and Salesforce write a limit.
func usedOf(v string) (used, limit float64, ok bool) {
	slash := strings.IndexByte(v, '/')
	if slash < 0 {
		return 0, 0, false
	}
	used, ok1 := number(trimOWS(v[:slash]))
	limit, ok2 := number(trimOWS(v[slash+1:]))
	return used, limit, ok1 && ok2
}

// usedLimit is a limit of which used units out of quota are spent. More
// used than allowed (Salesforce allows bursts over the daily limit) leaves
// nothing remaining.
func usedLimit(lim Limit, used, quota float64) Limit {
	lim.Quota, lim.Remaining = quota, max(quota-used, 0)
	lim.Known |= HasQuota | HasRemaining
	return lim
}

// shopify reads X-Shopify-Shop-Api-Call-Limit: 32/40, the REST Admin API's
// leaky bucket: 32 of 40 requests used, in the app's bucket for the store
// (the tenant). The header does not say how fast the bucket leaks; every
// plan Shopify publishes drains a full bucket in shopifyDrain (40 leaking 2
// a second, 80 at 4, 400 at 20:
// https://shopify.dev/docs/api/admin-rest/usage/rate-limits), so that is
// taken for its window.
func (p *parser) shopify() {
	v, _ := p.get(keyShopify)
	used, quota, ok := usedOf(v)
	if !ok {
		p.warnf("X-Shopify-Shop-Api-Call-Limit: %s is not used/limit; ignored", quote(v))
		return
	}
	lim := Limit{Dialect: Shopify, Scope: ScopeTenant, Window: shopifyDrain, Known: HasWindow}
	p.add(usedLimit(lim, used, quota), "")
}

// shopifyDrain is how long a Shopify REST bucket takes to leak empty.
const shopifyDrain = 20 * time.Second

// hubSpot reads X-HubSpot-RateLimit-*: a daily limit, a limit per interval
// (-Max, -Remaining, -Interval-Milliseconds) and a per-second limit.
func (p *parser) hubSpot() {
	p.simple(Limit{Name: "daily", Window: 24 * time.Hour, Known: HasWindow, Dialect: HubSpot}, &fields{
		"X-Hubspot-Ratelimit-Daily", "X-HubSpot-RateLimit-Daily",
		"X-Hubspot-Ratelimit-Daily-Remaining", "X-HubSpot-RateLimit-Daily-Remaining",
		"", "",
	})
	interval := Limit{Name: "interval", Dialect: HubSpot}
	if ms, ok := p.count("X-Hubspot-Ratelimit-Interval-Milliseconds", "X-HubSpot-RateLimit-Interval-Milliseconds"); ok {
		interval.Window, interval.Known = seconds(ms/1000), HasWindow
	}
	p.simple(interval, &fields{
		"X-Hubspot-Ratelimit-Max", "X-HubSpot-RateLimit-Max",
		"X-Hubspot-Ratelimit-Remaining", "X-HubSpot-RateLimit-Remaining",
		"", "",
	})
	p.simple(Limit{Name: "secondly", Window: time.Second, Known: HasWindow, Dialect: HubSpot}, &fields{
		"X-Hubspot-Ratelimit-Secondly", "X-HubSpot-RateLimit-Secondly",
		"X-Hubspot-Ratelimit-Secondly-Remaining", "X-HubSpot-RateLimit-Secondly-Remaining",
		"", "",
	})
}

// zendesk reads zendesk-ratelimit-NAME: total=100; remaining=99; resets=41,
// one field per endpoint limit, in the order of their names.
func (p *parser) zendesk() {
	keys := p.zendeskKeys[:p.nzendesk]
	slices.Sort(keys) // the header map's order is random
	for _, key := range keys {
		v, _ := p.get(key)
		v = p.bound(key, v, ';')
		lim := Limit{Name: strings.ToLower(key[len(prefixZendesk):]), Dialect: Zendesk}
		for item := range strings.SplitSeq(v, ";") {
			k, val, found := strings.Cut(trimOWS(item), "=")
			if !found {
				p.warnf("%s: %s is not key=value; ignored", key, quote(item))
				continue
			}
			n, ok := number(val)
			if !ok {
				p.warnf("%s: %s=%s is not a number; ignored", key, k, quote(val))
				continue
			}
			switch k {
			case "total":
				lim.Quota, lim.Known = n, lim.Known|HasQuota
			case "remaining":
				lim.Remaining, lim.Known = n, lim.Known|HasRemaining
			case "resets":
				lim.Reset, lim.Known = p.now.Add(seconds(n)), lim.Known|HasReset
			}
		}
		if lim.Known != 0 {
			p.add(lim, key)
		}
	}
}

// salesforce reads Sforce-Limit-Info: api-usage=25/5000;
// per-app-api-usage=17/250(appName=sample-connected-app). api-usage is the
// organisation's daily count of API calls.
func (p *parser) salesforce() {
	v, _ := p.get(keySalesforce)
	v = p.bound("Sforce-Limit-Info", v, ';')
	for item := range strings.SplitSeq(v, ";") {
		item = trimOWS(item)
		if item == "" {
			continue
		}
		name, val, found := strings.Cut(item, "=")
		if !found {
			p.warnf("Sforce-Limit-Info: %s is not name=used/limit; ignored", quote(item))
			continue
		}
		lim := Limit{Name: name, Dialect: Salesforce}
		if open := strings.IndexByte(val, '('); open >= 0 && strings.HasSuffix(val, ")") {
			if app, ok := strings.CutPrefix(val[open+1:len(val)-1], "appName="); ok && app != "" {
				lim.Scope = "app:" + app
			}
			val = val[:open]
		}
		used, quota, ok := usedOf(val)
		if !ok {
			p.warnf("Sforce-Limit-Info: %s is not name=used/limit; ignored", quote(item))
			continue
		}
		if name == "api-usage" {
			lim.Window, lim.Known = 24*time.Hour, HasWindow
		}
		p.add(usedLimit(lim, used, quota), "")
	}
}

// stripe reads Stripe-Rate-Limited-Reason (global-rate, global-concurrency,
// endpoint-rate, endpoint-concurrency, resource-specific), sent with a 429.
func (p *parser) stripe() {
	if v, ok := p.get(keyStripeReason); ok && v != "" {
		p.o.Reason = v
	}
}

// kongPeriods are the windows of Kong's rate-limiting plugins, by the
// suffix their fields end in (X-RateLimit-Limit-Minute: 100), and the
// names heed gives those limits. A month and a year are taken at their
// shortest.
var kongPeriods = [...]struct {
	suffix, name string
	window       time.Duration
}{
	{"Second", "second", time.Second},
	{"Minute", "minute", time.Minute},
	{"Hour", "hour", time.Hour},
	{"Day", "day", 24 * time.Hour},
	{"Month", "month", 28 * 24 * time.Hour},
	{"Year", "year", 365 * 24 * time.Hour},
}

// kongPeriod returns the period a Kong field's suffix ends in (after
// X-RateLimit-Limit- or -Remaining-: "Minute", or "Videos-Minute" for a
// response-ratelimiting limit called videos), and the name before it.
func kongPeriod(suffix string) (name string, i int, ok bool) {
	for i := range kongPeriods {
		per := kongPeriods[i].suffix
		switch {
		case suffix == per:
			return "", i, true
		case len(suffix) > len(per)+1 && strings.HasSuffix(suffix, per) && suffix[len(suffix)-len(per)-1] == '-':
			return suffix[:len(suffix)-len(per)-1], i, true
		}
	}
	return "", 0, false
}

// kongKey reports whether a field's suffix names a Kong period.
func kongKey(suffix string) bool {
	_, _, ok := kongPeriod(suffix)
	return ok
}

// kong reads Kong's rate-limiting and response-ratelimiting plugins'
// fields: X-RateLimit-Limit-Minute: 100 with X-RateLimit-Remaining-Minute:
// 99, one limit per period the plugin counts (second to year), named by
// the period ("minute"), or by the plugin's limit and the period
// ("videos-minute"). They state no reset (rate-limiting-advanced adds the
// draft's RateLimit-Reset for the nearest limit, and a Retry-After on its
// 429).
func (p *parser) kong() {
	keys := p.kongKeys[:p.nkong]
	slices.Sort(keys) // the header map's order is random
	for _, key := range keys {
		suffix := key[len(prefixKongLimit):]
		name, i, _ := kongPeriod(suffix)
		per := &kongPeriods[i]
		lim := Limit{Name: per.name, Window: per.window, Known: HasWindow, Dialect: XRateLimit}
		if name != "" {
			lim.Name = strings.ToLower(name) + "-" + per.name
			if strings.EqualFold(name, "tokens") {
				// Cerebras's x-ratelimit-limit-tokens-minute
				// (https://inference-docs.cerebras.ai/support/rate-limits).
				lim.Unit = Tokens
			}
		}
		// Kong states no reset; Cerebras, speaking its fields, does:
		// x-ratelimit-reset-requests-day, seconds to the turn.
		reset := ""
		var buf [64]byte
		if k := append(append(buf[:0], "X-Ratelimit-Reset-"...), suffix...); p.h[string(k)] != nil {
			reset = string(k) // no allocation unless the field is there
		}
		rk := ""
		for _, k := range p.kongRemKeys[:p.nkongRem] {
			if k[len(prefixKongRemaining):] == suffix {
				rk = k
			}
		}
		p.simple(lim, &fields{key, key, rk, rk, reset, reset})
	}
}

// namedKey reports whether the suffix of an X-RateLimit-Limit-<suffix>
// field names a limit of the server's own (@nestjs/throttler's named
// throttlers: X-RateLimit-Limit-short): not a Kong period, not OpenAI's
// requests or tokens, nothing with a character a name would not have.
func namedKey(suffix string) bool {
	if suffix == "" || len(suffix) > 32 || kongKey(suffix) {
		return false
	}
	switch base, _ := strings.CutSuffix(suffix, "_usage_based"); base {
	case "Requests", "Tokens":
		return false
	}
	for i := 0; i < len(suffix); i++ {
		switch c := suffix[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// suffixed reads the fields of limits a server names in their suffix, as
// @nestjs/throttler does for every throttler but its "default":
// X-RateLimit-Limit-short: 3, X-RateLimit-Remaining-short: 2 and
// X-RateLimit-Reset-short: 1 (the seconds to its reset, rounded up), one
// limit named "short" (its refusal's Retry-After-short is read in finish).
func (p *parser) suffixed() {
	keys := p.namedKeys[:p.nnamed]
	slices.Sort(keys) // the header map's order is random
	for _, key := range keys {
		suffix := key[len(prefixKongLimit):]
		rem, reset := "X-Ratelimit-Remaining-"+suffix, "X-Ratelimit-Reset-"+suffix
		lim := Limit{Name: strings.ToLower(suffix), Dialect: XRateLimit}
		switch lim.Name {
		case "tokens-prompt", "tokens-generated":
			// Fireworks's adaptive limits: input and output tokens a
			// minute (https://docs.fireworks.ai/serverless/rate-limits).
			lim.Unit, lim.Window, lim.Known = InputTokens, time.Minute, HasWindow
			if lim.Name == "tokens-generated" {
				lim.Unit = OutputTokens
			}
		}
		p.simple(lim, &fields{key, key, rem, rem, reset, reset})
	}
}

// fastly reads the Fastly API's Fastly-RateLimit-Remaining and
// Fastly-RateLimit-Reset (epoch seconds): its limit on writes, documented
// as per hour (https://docs.fastly.com/api/, "Rate limiting"), whose quota
// the fields leave out.
func (p *parser) fastly() {
	p.simple(Limit{Window: time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
		"", "",
		"Fastly-Ratelimit-Remaining", "Fastly-RateLimit-Remaining",
		"Fastly-Ratelimit-Reset", "Fastly-RateLimit-Reset",
	})
}

// riot reads the Riot Games API's limits
// (https://developer.riotgames.com/docs/portal#web-apis_rate-limiting):
// X-App-Rate-Limit: 20:1,100:120 is 20 requests a second and 100 in two
// minutes for the API key in its region, every endpoint counted (the
// tenant's); X-Method-Rate-Limit, the same for the endpoint alone; each
// with a -Count field (1:1,1:120) of what each window has counted, this
// request included. A 429's X-Rate-Limit-Type says which refused:
// "application", "method", or "service" (an underlying service's, whose
// scope the headers do not say). No field says when a window turns.
func (p *parser) riot() {
	p.riotPairs(keyRiotApp, "app", true)
	p.riotPairs(keyRiotMethod, "method", false)
	if v, ok := p.get(keyRiotType); ok && v != "" && p.o.Reason == "" {
		p.o.Reason = v
	}
}

// riotPairs reads one of Riot's limit fields, limit:seconds pairs, and its
// -Count field's count:seconds pairs. Each window is a limit named by its
// kind and length ("app-120s"); an app limit is one counter of the tenant
// (its Scope is its name), a method limit the endpoint's own.
func (p *parser) riotPairs(key, kind string, tenant bool) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	v = p.bound(key, v, ',')
	counts, _ := p.get(key + "-Count")
	counts = p.bound(key+"-Count", counts, ',')
	for pair := range strings.SplitSeq(v, ",") {
		quota, secs, ok := riotPair(pair)
		if !ok {
			p.warnf("%s: %s is not limit:seconds; ignored", key, quote(pair))
			continue
		}
		name := kind + "-" + strconv.FormatInt(secs, 10) + "s"
		lim := Limit{Name: name, Unit: Requests, Dialect: Riot, Quota: quota, Window: time.Duration(secs) * time.Second, Known: HasQuota | HasWindow}
		if tenant {
			lim.Scope = name
		}
		for c := range strings.SplitSeq(counts, ",") {
			if n, w, ok := riotPair(c); ok && w == secs {
				lim.Remaining, lim.Known = max(quota-n, 0), lim.Known|HasRemaining
				break
			}
		}
		p.add(lim, "")
	}
}

// riotPair reads "n:seconds", n a count and seconds a window of a second
// to a day in whole seconds.
func riotPair(s string) (n float64, secs int64, ok bool) {
	a, b, found := strings.Cut(trimOWS(s), ":")
	if !found {
		return 0, 0, false
	}
	n, ok = number(trimOWS(a))
	if !ok {
		return 0, 0, false
	}
	secs, err := strconv.ParseInt(trimOWS(b), 10, 64)
	if err != nil || secs < 1 || secs > 86400 {
		return 0, 0, false
	}
	return n, secs, true
}

// strava reads Strava's limits: X-RateLimit-Limit and X-RateLimit-Usage
// are each two counts, the quarter-hour's and the day's, and
// X-ReadRateLimit-Limit and -Usage the same of the limit of every endpoint
// but uploads ("non-upload"). What is used is said, not what is left.
// Each is the application's, counted by every endpoint: one counter of the
// tenant. The quarter-hour turns at 0, 15, 30 and 45 minutes past the
// hour, the day at midnight UTC; neither is stated, so the turns are taken
// on the server's clock (its Date field, else this one's), as instants
// (https://developers.strava.com/docs/rate-limits/).
func (p *parser) strava() {
	at := p.now
	if d, ok := p.get("Date"); ok {
		if t, ok := parseDate(d); ok {
			at = t
		}
	}
	quarter := at.Truncate(15 * time.Minute).Add(15 * time.Minute)
	y, mo, d := at.UTC().Date()
	midnight := time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
	for _, g := range [...]struct{ limit, limitName, usage, usageName, prefix string }{
		{"X-Ratelimit-Limit", "X-RateLimit-Limit", "X-Ratelimit-Usage", "X-RateLimit-Usage", ""},
		{"X-Readratelimit-Limit", "X-ReadRateLimit-Limit", "X-Readratelimit-Usage", "X-ReadRateLimit-Usage", "read-"},
	} {
		quota, nq := p.countPair(g.limit, g.limitName)
		used, nu := p.countPair(g.usage, g.usageName)
		for i, w := range [...]struct {
			name   string
			window time.Duration
			reset  time.Time
		}{{"15min", 15 * time.Minute, quarter}, {"daily", 24 * time.Hour, midnight}} {
			if i >= nq {
				break
			}
			lim := Limit{Name: g.prefix + w.name, Scope: g.prefix + w.name, Dialect: XRateLimit,
				Quota: quota[i], Window: w.window, Reset: w.reset, Known: HasQuota | HasWindow | HasReset}
			if i < nu {
				lim.Remaining, lim.Known = max(0, quota[i]-used[i]), lim.Known|HasRemaining
			}
			p.add(lim, g.limitName)
		}
	}
}

// countPair reads a field of up to two comma-separated counts, and says
// how many it read: none where the field is absent or malformed.
func (p *parser) countPair(key, name string) (n [2]float64, got int) {
	v, ok := p.get(key)
	if !ok {
		return n, 0
	}
	for rest := v; got < len(n); got++ {
		var item string
		item, rest, ok = strings.Cut(rest, ",")
		c, isNum := number(trimOWS(item))
		if !isNum || c < 0 {
			p.warnf("%s: %s is not a pair of counts; ignored", name, quote(v))
			return n, 0
		}
		n[got] = c
		if !ok {
			return n, got + 1
		}
	}
	p.warnf("%s: %s is not a pair of counts; ignored", name, quote(v))
	return n, 0
}

// xero reads Xero's limits, which state only what is left: 60 calls a
// minute and 5000 a day per connected organisation (X-MinLimit-Remaining,
// X-DayLimit-Remaining) and 10,000 a minute for the app across them
// (X-AppMinLimit-Remaining); a 429 names the one spent in
// X-Rate-Limit-Problem and says when to come back in Retry-After
// (https://developer.xero.com/documentation/guides/oauth2/limits/,
// https://developer.xero.com/faq/limits). Each is a counter of the tenant
// every endpoint joins: the app's is read from every organisation's
// answers.
func (p *parser) xero() {
	for _, x := range [...]struct {
		key, name, limit string
		quota            float64
		window           time.Duration
	}{
		{"X-Minlimit-Remaining", "X-MinLimit-Remaining", "minute", 60, time.Minute},
		{"X-Daylimit-Remaining", "X-DayLimit-Remaining", "day", 5000, 24 * time.Hour},
		{"X-Appminlimit-Remaining", "X-AppMinLimit-Remaining", "app-minute", 10000, time.Minute},
	} {
		// The quotas are the documentation's, "the same for all apps";
		// a remaining count above one shows it larger.
		lim := Limit{Name: x.limit, Scope: x.limit, Quota: x.quota, Window: x.window, Known: HasQuota | HasWindow, Dialect: XRateLimit}
		if i := p.simple(lim, &fields{"", "", x.key, x.name, "", ""}); i >= 0 {
			if l := &p.o.Limits[i]; l.Has(HasRemaining) && l.Remaining > l.Quota {
				l.Known &^= HasQuota
				l.Quota = 0
			}
		}
	}
	if v, ok := p.get("X-Rate-Limit-Problem"); ok && v != "" {
		p.o.Reason = v
	}
}

// highLevel reads HighLevel's (GoHighLevel's) limits, HubSpot's legacy
// fields without the vendor's name: 100 requests each
// X-RateLimit-Interval-Milliseconds (10 s) in X-RateLimit-Max and
// X-RateLimit-Remaining, and a day's in X-RateLimit-Limit-Daily and
// X-RateLimit-Daily-Remaining, each counted per app and location
// (https://marketplace.gohighlevel.com/docs/other/rate-limits).
func (p *parser) highLevel() {
	p.simple(Limit{Name: "daily", Window: 24 * time.Hour, Known: HasWindow, Dialect: XRateLimit}, &fields{
		"X-Ratelimit-Limit-Daily", "X-RateLimit-Limit-Daily",
		"X-Ratelimit-Daily-Remaining", "X-RateLimit-Daily-Remaining",
		"", "",
	})
	burst := Limit{Name: "burst", Dialect: XRateLimit}
	if ms, ok := p.count("X-Ratelimit-Interval-Milliseconds", "X-RateLimit-Interval-Milliseconds"); ok && ms > 0 {
		burst.Window, burst.Known = seconds(ms/1000), HasWindow
	}
	p.simple(burst, &fields{
		"X-Ratelimit-Max", "X-RateLimit-Max",
		"X-Ratelimit-Remaining", "X-RateLimit-Remaining",
		"", "",
	})
}

// kuCoin reads KuCoin's gw-ratelimit-limit, -remaining and -reset: a
// resource pool's quota over 30 seconds, what is left of it, and the
// milliseconds until it is whole again
// (https://www.kucoin.com/docs/basic-info/request-rate-limit/rest-api).
func (p *parser) kuCoin() {
	lim := Limit{Name: "pool", Window: 30 * time.Second, Known: HasWindow, Dialect: XRateLimit}
	p.msDelay(&lim, "Gw-Ratelimit-Reset", "gw-ratelimit-reset")
	if i := p.simple(lim, &fields{
		"Gw-Ratelimit-Limit", "gw-ratelimit-limit",
		"Gw-Ratelimit-Remaining", "gw-ratelimit-remaining",
		"", "",
	}); i >= 0 {
		p.resetFrom[i] = "gw-ratelimit-reset"
	}
}

// msDelay sets lim's reset from the field key, a delay in milliseconds
// (KuCoin's gw-ratelimit-reset, BigCommerce's X-Rate-Limit-Time-Reset-Ms);
// anything else is warned of, by name, and ignored.
func (p *parser) msDelay(lim *Limit, key, name string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	if n, isNum := number(v); isNum && n >= 0 && n < epochMillisMin {
		lim.Reset, lim.Known = p.now.Add(seconds(n/1000)), lim.Known|HasReset|ResetIsDelay
		return
	}
	p.warnf("%s: %s is not a delay in milliseconds; ignored", name, quote(v))
}

// bigCommerce reads BigCommerce's X-Rate-Limit-Requests-Quota and
// -Requests-Left in a window of X-Rate-Limit-Time-Window-Ms, which turns
// in X-Rate-Limit-Time-Reset-Ms; on a 429, that reset is the wait
// (https://developer.bigcommerce.com/docs/start/best-practices/api-rate-limits).
func (p *parser) bigCommerce() {
	lim := Limit{Name: "store", Dialect: XRateLimit}
	if n, ok := p.count("X-Rate-Limit-Time-Window-Ms", "X-Rate-Limit-Time-Window-Ms"); ok && n > 0 {
		lim.Window, lim.Known = seconds(n/1000), HasWindow
	}
	p.msDelay(&lim, "X-Rate-Limit-Time-Reset-Ms", "X-Rate-Limit-Time-Reset-Ms")
	i := p.simple(lim, &fields{
		"X-Rate-Limit-Requests-Quota", "X-Rate-Limit-Requests-Quota",
		"X-Rate-Limit-Requests-Left", "X-Rate-Limit-Requests-Left",
		"", "",
	})
	if i < 0 && lim.Has(HasReset) {
		i = p.add(lim, "")
	}
	if i >= 0 {
		p.resetFrom[i] = "X-Rate-Limit-Time-Reset-Ms"
	}
}

// amazon reads Amazon's Selling Partner API x-amzn-RateLimit-Limit: the
// operation's rate in requests a second, a token bucket's refill (its burst
// is documented per operation, not sent)
// (https://developer-docs.amazon.com/sp-api/docs/usage-plans-and-rate-limits).
// As a limit: one request per interval of the rate, or the rate's requests
// a second where that is one or more.
func (p *parser) amazon() {
	r, ok := p.count("X-Amzn-Ratelimit-Limit", "x-amzn-RateLimit-Limit")
	if !ok || !(r > 0) {
		return
	}
	lim := Limit{Quota: r, Window: time.Second, Known: HasQuota | HasWindow, Dialect: XRateLimit}
	if r < 1 {
		lim.Quota, lim.Window = 1, seconds(1/r)
	}
	p.add(lim, "")
}

// bybit reads Bybit's X-Bapi-Limit (an endpoint's requests a second),
// X-Bapi-Limit-Status (what is left) and X-Bapi-Limit-Reset-Timestamp (epoch
// milliseconds of the turn) (https://bybit-exchange.github.io/docs/v5/rate-limit).
func (p *parser) bybit() {
	lim := Limit{Window: time.Second, Known: HasWindow, Dialect: XRateLimit}
	if v, ok := p.get("X-Bapi-Limit-Reset-Timestamp"); ok {
		if t, ok := p.millisReset(v, "X-Bapi-Limit-Reset-Timestamp"); ok {
			lim.Reset, lim.Known = t, lim.Known|HasReset
		}
	}
	if i := p.simple(lim, &fields{
		"X-Bapi-Limit", "X-Bapi-Limit",
		"X-Bapi-Limit-Status", "X-Bapi-Limit-Status",
		"", "",
	}); i >= 0 {
		p.resetFrom[i] = "X-Bapi-Limit-Reset-Timestamp"
	}
}

// metaUsage reads Meta's Graph API usage fields, shares of a limit spent
// over a rolling hour, in percent: X-App-Usage (the app's) as
// {"call_count": 28, "total_time": 25, "total_cputime": 25}, the most of
// them the share spent; and X-Business-Use-Case-Usage, per business and
// use case, whose estimated_time_to_regain_access (minutes) is when a
// spent one comes back
// (https://developers.facebook.com/docs/graph-api/overview/rate-limiting/).
// Each is a limit of the tenant with a share spent and no counts; a spent
// business use case is one with nothing left and its reset.
// X-Ad-Account-Usage only marks the answer as Meta's (metaBody); its
// share is not read.
func (p *parser) metaUsage() {
	if v, ok := p.get(keyAppUsage); ok {
		var u struct {
			CallCount    float64 `json:"call_count"`
			TotalTime    float64 `json:"total_time"`
			TotalCPUTime float64 `json:"total_cputime"`
		}
		if json.Unmarshal([]byte(v), &u) == nil {
			p.add(Limit{Name: "app", Scope: "app", Window: time.Hour, Known: HasWindow | HasUtilization, Dialect: XRateLimit,
				Utilization: max(u.CallCount, u.TotalTime, u.TotalCPUTime) / 100}, "")
		} else {
			p.warnf("X-App-Usage: %s is not the usage object; ignored", quote(v))
		}
	}
	if v, ok := p.get(keyBUCUsage); ok {
		var u map[string][]struct {
			Type         string  `json:"type"`
			CallCount    float64 `json:"call_count"`
			TotalTime    float64 `json:"total_time"`
			TotalCPUTime float64 `json:"total_cputime"`
			Regain       float64 `json:"estimated_time_to_regain_access"`
		}
		if json.Unmarshal([]byte(v), &u) != nil {
			p.warnf("X-Business-Use-Case-Usage: %s is not the usage object; ignored", quote(v))
			return
		}
		ids := make([]string, 0, len(u))
		for id := range u {
			ids = append(ids, id)
		}
		slices.Sort(ids) // the map's order is random
		for _, id := range ids {
			for _, c := range u[id] {
				if c.Type == "" || len(c.Type) > 64 {
					continue
				}
				lim := Limit{Name: "buc-" + c.Type, Scope: "buc-" + c.Type, Window: time.Hour, Known: HasWindow | HasUtilization,
					Dialect: XRateLimit, Utilization: max(c.CallCount, c.TotalTime, c.TotalCPUTime) / 100}
				if c.Regain > 0 {
					lim.Remaining, lim.Reset, lim.Known = 0, p.now.Add(seconds(c.Regain*60)), lim.Known|HasRemaining|HasReset|ResetIsDelay
				}
				p.add(lim, "X-Business-Use-Case-Usage")
			}
		}
	}
}

// periodFields reads limits whose period comes before the field's name:
// SurveyMonkey's X-Ratelimit-App-Global-Minute-Limit, -Remaining and
// -Reset (seconds to the turn), and the same for the day, the app's
// (https://developer.surveymonkey.com/api/v3/#headers); Connecteam's
// X-RateLimit-Minute-Limit. A name before the period is the server's, a
// counter of the tenant.
func (p *parser) periodFields() {
	keys := p.periodKeys[:p.nperiod]
	slices.Sort(keys) // the header map's order is random
	for _, key := range keys {
		base := key[:len(key)-len("-Limit")]
		name, i, _ := kongPeriod(base[len("X-Ratelimit-"):])
		per := &kongPeriods[i]
		lim := Limit{Name: per.name, Window: per.window, Known: HasWindow, Dialect: XRateLimit}
		if name != "" {
			lim.Name = strings.ToLower(name) + "-" + per.name
			lim.Scope = lim.Name
		}
		rem, reset := base+"-Remaining", base+"-Reset"
		p.simple(lim, &fields{key, key, rem, rem, reset, reset})
	}
}

// opsgenie reads Opsgenie's X-RateLimit-State (OK, WARNING or THROTTLED),
// X-RateLimit-Reason (the domain that refused: ACCOUNT, INTEGRATION, ...)
// and X-RateLimit-Period-In-Sec (60 or 1, the period of the bucket that
// refused) (https://docs.opsgenie.com/docs/api-rate-limiting): a throttled
// answer is a spent count of that period, turning within it.
func (p *parser) opsgenie() {
	state, _ := p.get("X-Ratelimit-State")
	if v, ok := p.get("X-Ratelimit-Reason"); ok && v != "" && len(v) <= 64 && p.o.Reason == "" {
		p.o.Reason = v
	}
	if !strings.EqualFold(state, "THROTTLED") {
		return
	}
	sec, ok := p.count("X-Ratelimit-Period-In-Sec", "X-RateLimit-Period-In-Sec")
	if !ok || !(sec > 0) {
		return
	}
	w := seconds(sec)
	p.add(Limit{Name: "period", Window: w, Remaining: 0, Reset: p.now.Add(w),
		Known: HasWindow | HasRemaining | HasReset | ResetIsDelay, Dialect: XRateLimit}, "X-RateLimit-Period-In-Sec")
}
