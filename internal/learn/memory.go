package learn

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/heedhttp/heed/internal/scope"
	"github.com/heedhttp/heed/store"
)

const (
	// bareWindow: bare 429s from two endpoints of a tenant this close
	// together mean the unknown limit is the tenant's, not each endpoint's.
	bareWindow = 2 * time.Second
	// MaxEntries bounds each of Memory's maps: a full map is cleared, which
	// forgets only what the next responses teach again.
	MaxEntries = 4096
)

// Memory is what one process remembers about limits, beside the store.
// None of it is shared between processes, and losing it costs only what
// the next responses teach again:
//
//   - subs: which named limit scopes (a GitHub resource, an IETF policy, a
//     token limit) each endpoint has reported, so its requests join them
//     from then on; and, per tenant, those its reads and its writes have
//     reported, which an endpoint that has not answered yet joins.
//   - aimd: when each AIMD scope was last cut, so that the many 429s of
//     one event cut its rate once, and the quiet successes since.
//   - bare: the last bare 429 per tenant, to tell a tenant-wide unknown
//     limit from per-endpoint ones.
//   - told: the rates last set in the store, so that an update repeating
//     one is skipped.
//
// Each map holds at most MaxEntries entries. The zero Memory is empty and
// ready to use; it is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	subs map[subsKey][]SubScope
	aimd map[string]*aimdState
	told map[string]toldRate
	bare map[string]*bareState
}

// SubScope is a named limit scope an endpoint joins.
type SubScope struct {
	Key string
	// Units reports a limit that counts tokens or points, not requests: a
	// request is charged its cost there.
	Units bool
}

type toldRate struct {
	rate, burst float64
	at          time.Time
	ttl         time.Duration
}

type bareState struct {
	at       time.Time
	endpoint string
	shared   bool // bare 429s came from several endpoints at once
}

// subsKey names an endpoint (kind 0) or a tenant's reads or writes.
type subsKey struct {
	key  string
	kind uint8
}

const (
	kindEndpoint uint8 = iota
	kindRead
	kindWrite
)

func kindOf(r *Request) subsKey {
	if r.Write {
		return subsKey{key: r.Tenant, kind: kindWrite}
	}
	return subsKey{key: r.Tenant, kind: kindRead}
}

type aimdState struct {
	lastCut time.Time
	quiet   int
}

// SubScopes returns the limit scopes learned for an endpoint or, for an
// endpoint that has not reported any yet, those learned for its tenant's
// requests of the same kind (reads or writes). The slice must not be
// changed.
func (m *Memory) SubScopes(endpoint, tenant string, write bool) []SubScope {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.subs[subsKey{key: endpoint}]; ok {
		return s
	}
	kind := kindRead
	if write {
		kind = kindWrite
	}
	return m.subs[subsKey{key: tenant, kind: kind}]
}

func (m *Memory) addSub(endpoint string, kind subsKey, s SubScope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subs == nil || len(m.subs) >= MaxEntries {
		m.subs = make(map[subsKey][]SubScope)
	}
	for _, key := range [2]subsKey{{key: endpoint}, kind} {
		subs := m.subs[key]
		if slices.ContainsFunc(subs, func(have SubScope) bool { return have.Key == s.Key }) {
			continue
		}
		if len(subs) >= scope.MaxLimits {
			subs = subs[1:] // a kind's list keeps the newest
		}
		m.subs[key] = append(slices.Clip(subs), s)
	}
}

// unchanged reports whether setting ru at now would only repeat, within
// 1%, a rate this process set for the same scope less than a quarter of
// its TTL ago; otherwise it records ru as told.
func (m *Memory) unchanged(ru store.RateUpdate, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.told[ru.Key]; ok && prev.burst == ru.Burst && now.Sub(prev.at) < prev.ttl/4 &&
		math.Abs(ru.Rate-prev.rate) <= 0.01*prev.rate {
		return true
	}
	if m.told == nil || len(m.told) >= MaxEntries {
		m.told = make(map[string]toldRate)
	}
	m.told[ru.Key] = toldRate{rate: ru.Rate, burst: ru.Burst, at: now, ttl: ru.TTL}
	return false
}

// cut reports whether a 429 on a scope, for a request sent at sentAt, is a
// new event that should cut the scope's rate, and by what factor. 429s of
// requests sent before the last cut belong to the event that cut.
func (m *Memory) cut(key string, sentAt, now time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.aimd[key]
	if st == nil {
		if m.aimd == nil || len(m.aimd) >= MaxEntries {
			m.aimd = make(map[string]*aimdState)
		}
		st = &aimdState{}
		m.aimd[key] = st
	} else if st.lastCut.After(sentAt) {
		return 0, false
	}
	factor := aimdCut
	if !st.lastCut.IsZero() && now.Sub(st.lastCut) < aimdFastGap {
		factor = aimdCutFast
	}
	st.lastCut, st.quiet = now, 0
	return factor, true
}

// quiet counts a quiet success on a scope whose rate AIMD has cut, and
// reports when enough have added up to raise it.
func (m *Memory) quiet(key string) (n int, raise bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.aimd[key]
	if st == nil {
		return 0, false
	}
	st.quiet++
	if st.quiet < aimdFlush {
		return 0, false
	}
	n, st.quiet = st.quiet, 0
	return n, true
}

// bareShared records a bare 429 on an endpoint of a tenant and reports
// whether the tenant's unknown limit looks shared by its endpoints: bare
// 429s from two endpoints within bareWindow of each other.
func (m *Memory) bareShared(tenant, endpoint string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.bare[tenant]
	if st == nil {
		if m.bare == nil || len(m.bare) >= MaxEntries {
			m.bare = make(map[string]*bareState)
		}
		st = &bareState{}
		m.bare[tenant] = st
	}
	if !st.shared && st.endpoint != "" && st.endpoint != endpoint && now.Sub(st.at) < bareWindow {
		st.shared = true
	}
	st.at, st.endpoint = now, endpoint
	return st.shared
}

// isShared reports whether a tenant's unknown limit looks shared.
func (m *Memory) isShared(tenant string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.bare[tenant]
	return st != nil && st.shared
}
