package header

import (
	"strings"
	"time"
)

// lines returns the lines of a list-valued field, at most maxFieldLines,
// each cut to maxFieldBytes at a member boundary. Cuts are reported with
// the field's name; an empty name reads quietly, for a second reader.
func (p *parser) lines(key, name string, buf *[maxFieldLines]string) []string {
	vs := p.h[key]
	if len(vs) > maxFieldLines {
		if name != "" {
			p.warnf("%s: more than %d lines; the rest are ignored", name, maxFieldLines)
		}
		vs = vs[:maxFieldLines]
	}
	out := buf[:0]
	for _, v := range vs {
		if len(v) > maxFieldBytes {
			if name != "" {
				p.warnf("%s: longer than %d bytes; the rest is ignored", name, maxFieldBytes)
			}
			cut := strings.LastIndexByte(v[:maxFieldBytes], ',')
			if cut < 0 {
				continue
			}
			v = v[:cut]
		}
		out = append(out, v)
	}
	return out
}

// ietfStructured reads the RateLimit-Policy and RateLimit fields of drafts
// 08 and later, and Jira's and Cloudflare's use of them: lists of named
// policies. A policy's q and w merge with the r and t of the same name
// into one Limit; names never merge across different policies, so Jira's
// per-second burst limit stays apart from its hourly points quota.
func (p *parser) ietfStructured(policyKey, limitKey, policyName, limitName string, info bool) {
	first := len(p.o.Limits)
	var buf [maxFieldLines]string
	var m member
	for _, line := range p.lines(policyKey, policyName, &buf) {
		if c := firstByte(line); c >= '0' && c <= '9' {
			continue // a draft 03-07 policy list, read by ietfSeparate
		}
		l := sfList{s: line}
		for l.next(&m) {
			if !p.named(policyName, &m) {
				continue
			}
			if p.find(first, m.name, info) >= 0 {
				p.warnf("%s: policy %s appears twice; the second is ignored", policyName, quote(m.name))
				continue
			}
			lim := Limit{Name: m.name, Unit: unitFor(m.name, "", ""), Scope: scopeFor(m.name), Dialect: IETFStructured, Informational: info}
			if i := p.add(lim, limitName); i >= 0 {
				p.apply(i, &m, false)
			}
		}
	}
	var seen [MaxLimits]bool
	for _, line := range p.lines(limitKey, limitName, &buf) {
		if c := firstByte(line); c != '"' && (c < 'a' || c > 'z' || isDictionary(line)) {
			continue // draft 07's dictionary, read by ietfSeparate
		}
		l := sfList{s: line}
		for l.next(&m) {
			if !p.named(limitName, &m) {
				continue
			}
			i := p.find(first, m.name, info)
			if i < 0 {
				lim := Limit{Name: m.name, Unit: unitFor(m.name, "", ""), Scope: scopeFor(m.name), Dialect: IETFStructured, Informational: info}
				if i = p.add(lim, limitName); i < 0 {
					continue
				}
			} else if seen[i] {
				p.warnf("%s: policy %s appears twice; the second is ignored", limitName, quote(m.name))
				continue
			}
			seen[i] = true
			p.apply(i, &m, true)
		}
	}
}

// named reports whether m is a well-formed named member, warning if not.
func (p *parser) named(field string, m *member) bool {
	switch {
	case m.err != "":
		p.warnf("%s: %s; member ignored", field, m.err)
	case m.isNum || m.name == "":
		p.warnf("%s: a member has no policy name; ignored", field)
	default:
		return true
	}
	return false
}

// find returns the index of the structured limit named name at or after
// index first, or -1.
func (p *parser) find(first int, name string, info bool) int {
	for i := first; i < len(p.o.Limits); i++ {
		if l := &p.o.Limits[i]; l.Name == name && l.Informational == info && l.Dialect == IETFStructured {
			return i
		}
	}
	return -1
}

// apply sets the fields of limit i that member m conveys. In a policy
// (RateLimit-Policy), q is the quota and w the window. In a service limit
// (RateLimit), r or a is what is available, t or w the seconds until the
// reset (draft 12 renamed r to a and t to w, the effective window), and c
// the request's cost.
func (p *parser) apply(i int, m *member, service bool) {
	l := &p.o.Limits[i]
	l.Unit = unitFor(l.Name, m.qu, l.Unit)
	if m.params&pq != 0 {
		l.Quota, l.Known = m.q, l.Known|HasQuota
	}
	if m.params&pr != 0 {
		l.Remaining, l.Known = m.r, l.Known|HasRemaining
	}
	if m.params&pc != 0 {
		l.Cost, l.Known = m.c, l.Known|HasCost
	}
	switch {
	case m.params&pt != 0:
		l.Reset, l.Known = p.resetIn(m.t), l.Known|HasReset
		p.delayed[i] = !isEpochSeconds(m.t)
	case m.params&pw != 0 && service:
		l.Reset, l.Known = p.resetIn(m.w), l.Known|HasReset
		p.delayed[i] = !isEpochSeconds(m.w)
	case m.params&pw != 0:
		l.Window, l.Known = seconds(m.w), l.Known|HasWindow
	}
}

// isEpochSeconds reports whether a reset resetIn reads is in the range of
// epoch seconds, an instant.
func isEpochSeconds(v float64) bool { return v >= epochSecondsMin && v < epochSecondsMax }

// resetIn is the instant of a reset given in delay seconds, as the drafts
// define it. A value in the range of epoch seconds is read as one, as
// GitLab sends RateLimit-Reset: an epoch is never read as a delay.
func (p *parser) resetIn(v float64) time.Time {
	if isEpochSeconds(v) {
		return time.Unix(int64(v), 0).UTC()
	}
	return p.now.Add(seconds(v))
}

// partitions reads RateLimit-Partition (draft 12 on): for each named
// policy, the dimensions its quota is partitioned by, such as
// "api";user_id;method=GET. It describes limits read before; a policy not
// otherwise described is ignored.
func (p *parser) partitions(first int) {
	var buf [maxFieldLines]string
	for _, line := range p.lines(keyRateLimitPartition, "RateLimit-Partition", &buf) {
		for item := range strings.SplitSeq(line, ",") {
			item = trimOWS(item)
			name, dims, _ := strings.Cut(item, ";")
			if len(name) < 2 || name[0] != '"' || name[len(name)-1] != '"' {
				p.warnf("RateLimit-Partition: %s does not start with a policy name; ignored", quote(item))
				continue
			}
			if i := p.find(first, name[1:len(name)-1], false); i >= 0 {
				p.o.Limits[i].Partition = trimOWS(dims)
			}
		}
	}
}

// countItem reads a field that is one number with parameters, such as
// "20;w=21600": the number, the w parameter (0 when absent) and whether
// the field was such an item.
func countItem(v string) (n, w float64, ok bool) {
	var m member
	l := sfList{s: v}
	if !l.next(&m) || m.err != "" || !m.isNum {
		return 0, 0, false
	}
	n = m.num
	if m.params&pw != 0 {
		w = m.w
	}
	if l.next(&m) {
		return 0, 0, false // a list: not one count
	}
	return n, w, true
}

// unitFor is the unit of a limit: the qu parameter when given, kept as the
// server spells it ("content-bytes", "concurrent-requests"), else what
// the policy's name is known to count, else cur, else requests.
func unitFor(name, qu string, cur Unit) Unit {
	switch qu {
	case "":
	case "requests":
		return Requests
	default:
		return Unit(qu)
	}
	if cur != "" {
		return cur
	}
	switch name {
	case "global-app-quota", "tenant-app-quota": // Jira's hourly quotas
		return Points
	}
	return Requests
}

// scopeFor is the scope hint of a policy known by name.
func scopeFor(name string) string {
	switch name {
	case "global-app-quota":
		return ScopeGlobal
	case "tenant-app-quota":
		return ScopeTenant
	case "jira-burst-based":
		return ScopeEndpoint
	case "jira-per-issue-on-write":
		return ScopeKey
	}
	if strings.HasPrefix(name, "jira-per-issue-") {
		return ScopeKey // other windows of the per-issue limit
	}
	return ""
}

// policy is an unnamed quota policy of drafts 00-07: a quota per window.
type policy struct {
	quota  float64
	window float64
	hasW   bool
	used   bool
}

const maxPolicies = 8

// ietfSeparate reads the fields of drafts 00-07: RateLimit-Limit,
// -Remaining and -Reset (drafts 00-06, and GitLab, which sends its reset
// as epoch seconds), the RateLimit dictionary of draft 07, and unnamed
// quota policies in RateLimit-Limit ("10, 10;w=1, 50;w=60") and
// RateLimit-Policy ("5;w=60"). A policy whose quota equals a limit's gives
// that limit its window; the others become limits of their own.
func (p *parser) ietfSeparate() {
	var pols [maxPolicies]policy
	npol := 0
	addPolicy := func(field string, m *member) {
		switch {
		case m.err != "":
			p.warnf("%s: %s; member ignored", field, m.err)
		case !m.isNum:
			p.warnf("%s: %s is not a quota; ignored", field, quote(m.name))
		case npol == maxPolicies:
			p.warnf("%s: more than %d policies; the rest are ignored", field, maxPolicies)
		default:
			pols[npol] = policy{quota: m.num, window: m.w, hasW: m.params&pw != 0}
			npol++
		}
	}
	var buf [maxFieldLines]string
	var m member
	for _, line := range p.lines(keyRateLimitPolicy, "", &buf) {
		if c := firstByte(line); c < '0' || c > '9' {
			continue // a named policy, read by ietfStructured
		}
		l := sfList{s: line}
		for l.next(&m) {
			addPolicy("RateLimit-Policy", &m)
		}
	}
	var mains [2]int
	nmain := 0

	// Draft 07: RateLimit: limit=100, remaining=50, reset=5.
	for _, line := range p.lines(keyRateLimit, "", &buf) {
		if !isDictionary(line) {
			if c := firstByte(line); c != '"' && (c < 'a' || c > 'z') {
				p.warnf("RateLimit: %s is neither a list of policies nor a dictionary; ignored", quote(line))
			}
			continue
		}
		var lim Limit
		lim.Dialect = IETFCombined
		delayed := false
		l := sfList{s: line, dict: true}
		for l.next(&m) {
			if m.err != "" {
				p.warnf("RateLimit: %s; member ignored", m.err)
				continue
			}
			switch m.key {
			case "limit", "remaining", "reset":
				if !m.isNum {
					p.warnf("RateLimit: %s=%s is not a number; ignored", m.key, quote(m.name))
					continue
				}
			}
			switch m.key {
			case "limit":
				lim.Quota, lim.Known = m.num, lim.Known|HasQuota
				if m.params&pw != 0 {
					lim.Window, lim.Known = seconds(m.w), lim.Known|HasWindow
				}
			case "remaining":
				lim.Remaining, lim.Known = m.num, lim.Known|HasRemaining
			case "reset":
				lim.Reset, lim.Known = p.resetIn(m.num), lim.Known|HasReset
				delayed = !isEpochSeconds(m.num)
			}
		}
		if lim.Known != 0 && nmain < len(mains) {
			if i := p.add(lim, "RateLimit"); i >= 0 {
				mains[nmain], nmain = i, nmain+1
				p.delayed[i] = delayed
			}
		}
	}

	// Drafts 00-06 and GitLab: separate fields.
	var lim Limit
	lim.Dialect = IETFSeparate
	resetFrom := "RateLimit-Reset"
	for i, line := range p.lines(keyRateLimitLimit, "RateLimit-Limit", &buf) {
		l := sfList{s: line}
		for j := 0; l.next(&m); j++ {
			if i > 0 || j > 0 {
				addPolicy("RateLimit-Limit", &m)
				continue
			}
			if m.err != "" || !m.isNum {
				p.warnf("RateLimit-Limit: %s is not a quota; ignored", quote(line))
				continue
			}
			lim.Quota, lim.Known = m.num, lim.Known|HasQuota
			if m.params&pw != 0 {
				lim.Window, lim.Known = seconds(m.w), lim.Known|HasWindow
			}
		}
	}
	if v, ok := p.get(keyRateLimitRemaining); ok {
		if n, ok := number(v); ok {
			lim.Remaining, lim.Known = n, lim.Known|HasRemaining
		} else if n, w, ok := countItem(v); ok {
			// An item with parameters, as Docker Hub sends it
			// ("20;w=21600"): the count, and its window where the limit
			// gave none.
			lim.Remaining, lim.Known = n, lim.Known|HasRemaining
			if w > 0 && !lim.Has(HasWindow) {
				lim.Window, lim.Known = seconds(w), lim.Known|HasWindow
			}
		} else {
			p.warnf("RateLimit-Remaining: %s is not a count; ignored", quote(v))
		}
	}
	delayed := false
	if v, ok := p.get(keyRateLimitReset); ok {
		if t, why := parseReset(v, p.now); why == "" {
			lim.Reset, lim.Known = t, lim.Known|HasReset
			delayed = isDelay(v, p.now)
		} else {
			p.warnf("RateLimit-Reset: %s %s; ignored", quote(v), why)
		}
	}
	if v, ok := p.get(keyRateLimitResetTime); ok && !lim.Has(HasReset) {
		if t, why := parseReset(v, p.now); why == "" {
			lim.Reset, lim.Known, resetFrom = t, lim.Known|HasReset, "RateLimit-ResetTime"
		} else {
			p.warnf("RateLimit-ResetTime: %s %s; ignored", quote(v), why)
		}
	}
	if n, ok := p.count("Ratelimit-Dailylimit", "RateLimit-DailyLimit"); ok && !lim.Has(HasQuota) {
		// Yelp's: calls a day, turning at midnight UTC, with the turn in
		// RateLimit-ResetTime; RateLimit-ResourceDailyLimit and
		// -ResourceRemaining, the endpoint's own daily limit
		// (https://docs.developer.yelp.com/docs/places-rate-limiting).
		lim.Quota, lim.Window, lim.Known = n, 24*time.Hour, lim.Known|HasQuota|HasWindow
		res := Limit{Name: "resource-daily", Scope: ScopeEndpoint, Window: 24 * time.Hour, Known: HasWindow,
			Reset: lim.Reset, Dialect: IETFSeparate}
		res.Known |= lim.Known & HasReset
		p.simple(res, &fields{
			"Ratelimit-Resourcedailylimit", "RateLimit-ResourceDailyLimit",
			"Ratelimit-Resourceremaining", "RateLimit-ResourceRemaining",
			"", "",
		})
	}
	if lim.Known != 0 {
		lim.Name, _ = p.get(keyRateLimitName)
		i := p.add(lim, resetFrom)
		if i >= 0 {
			p.delayed[i] = delayed && resetFrom == "RateLimit-Reset"
		}
		if i >= 0 && nmain < len(mains) {
			mains[nmain], nmain = i, nmain+1
		}
	}

	for _, i := range mains[:nmain] {
		l := &p.o.Limits[i]
		for k := range pols[:npol] {
			if pol := &pols[k]; !pol.used && l.Has(HasQuota) && pol.quota == l.Quota {
				pol.used = true
				if !l.Has(HasWindow) && pol.hasW {
					l.Window, l.Known = seconds(pol.window), l.Known|HasWindow
				}
			}
		}
	}
	for _, pol := range pols[:npol] {
		if pol.used {
			continue
		}
		lim := Limit{Quota: pol.quota, Known: HasQuota, Dialect: IETFSeparate}
		if pol.hasW {
			lim.Window, lim.Known = seconds(pol.window), lim.Known|HasWindow
		}
		p.add(lim, "")
	}
}
