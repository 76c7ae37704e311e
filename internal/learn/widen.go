package learn

import (
	"math"
	"time"
)

const (
	// bareWindow: bare 429s from two endpoints of a tenant this close
	// together, each already paced by AIMD, are a suspicion that their
	// unknown limit is one of the tenant; the same again, suspectMin to
	// suspectFor after the first, is the evidence (see bare429).
	bareWindow = 2 * time.Second
	// togetherMin is the least window two paced endpoints' bare 429s are
	// taken together in (togetherWindowLocked).
	togetherMin = 200 * time.Millisecond
	suspectMin  = time.Second
	suspectFor  = 10 * time.Second
	// widenQuiet is how long a tenant whose hypothesis was refuted is paced
	// per endpoint before the hypothesis may be adopted again.
	widenQuiet = 5 * time.Minute
	// refuteAfter is how many bare 429s under the hypothesis it takes to
	// judge it; refuteMargin is by how much one endpoint's share of them
	// must exceed its share of the traffic to refute it.
	refuteAfter  = 8
	refuteMargin = 0.4
	// refuteChance: a member's share of the 429s refutes the hypothesis
	// only when a shared limit gives it so many with no more than this
	// chance (see refuted).
	refuteChance = 0.001
	// refuteFloor: a shared limit takes at least what one of its members
	// was accepted at alone; the hypothesis is refuted once its members
	// together are accepted at less than this share of that (the cuts
	// that brought them there answered some member's own limit).
	refuteFloor = 0.8
	// floorEvery: the floor is tested every this many members' responses.
	floorEvery = 16
	// maxMembers caps the endpoints one tenant's hypothesis tracks.
	maxMembers = 64
	// noBurstOwn: a no-burst endpoint's refusal this many of its found
	// limiter's intervals after its previous request, or sooner, is its
	// own limiter's (bare429).
	noBurstOwn = 1.25
)

// wideState is the hypothesis that a tenant's unknown limit spans the
// endpoints that draw bare 429s, and its test. Under it, those endpoints
// (its members, and only they) are paced by one AIMD scope of the tenant.
// A shared limit refuses each endpoint in proportion to its traffic; when
// one endpoint draws far more than its share of the 429s, its limit is its
// own, and the hypothesis is dropped. A shared limit also takes at least
// what any one member was accepted at alone before it joined (floor); when
// the members together fall well below that, the hypothesis is dropped too.
// Otherwise it lasts while its members send, and lapses widenTTL after they
// stop.
type wideState struct {
	suspect    time.Time // when two paced endpoints were last first refused together
	until      time.Time // the hypothesis holds until then
	quietUntil time.Time // refuted: not adopted again before then
	lastAt     time.Time // the last bare 429, and its endpoint
	lastEP     string
	lastPaced  bool // whether AIMD paced lastEP when it drew that 429
	lastBelow  bool // whether lastEP drew it below its own ceiling (bare429's below)
	members    map[string]*member
	sent       int       // responses to members under the hypothesis
	limited    int       // bare 429s of members under the hypothesis
	floor      float64   // the most one member was accepted at when it joined
	adopted    time.Time // when the hypothesis was adopted; the floor is tested two meter windows on
}

type member struct{ sent, limited int }

// bare429 records a bare 429 of an endpoint, sent at sentAt and answered
// at now, whose previous send was at prevSent (zero when never), and
// adopts, renews or tests the hypothesis.
func (m *Memory) bare429(tenant, endpoint string, prevSent, sentAt, now time.Time) {
	m.lock()
	defer m.mu.Unlock()
	w := m.wide[tenant]
	if w == nil {
		reset(&m.wide)
		w = &wideState{}
		m.wide[tenant] = w
		m.anyWide.Store(true)
	}
	// Evidence: an endpoint idle for a while cannot have drawn the 429 by
	// its own traffic. Bare 429s of several busy endpoints close together
	// are no evidence: endpoints bursting at once when a program starts,
	// or each probing its own limit, are refused together by limits of
	// their own just as well.
	//
	// Bare 429s of two endpoints close together, each paced by its own
	// AIMD, are a suspicion, not yet evidence: two limits of their own,
	// each probed by its own AIMD, refuse them so too (nginx locations of
	// 5 and 20 r/s were taken for one limit in every run, the 20 r/s one
	// held at a shared rate for 4-9 s), and each endpoint's own cut
	// answers them. A limit they share refuses them together again after
	// those cuts: the same again, a second to ten seconds after the
	// first, is the evidence.
	//
	// A refusal of an endpoint whose no-burst limiter AIMD has found
	// between bounds of its own (noBurstGap), sent less than noBurstOwn
	// of that limiter's intervals after the request before it, is that
	// limiter's answer (to a probe above the lower bound, or to a pace
	// held just under it that the delay's variation, or the server's
	// own clock, brought a little early): no evidence either, and it
	// joins no hypothesis that holds. (Before such bounds, a limit the
	// endpoint shares looks just as one with no burst would: its first
	// refusal may come with none of the endpoint's own requests
	// accepted.)
	//
	// So is a refusal in a long run of the endpoint's own (longRun): a
	// window of its own, spent, refuses it until it turns, whoever else
	// is refused meanwhile (HAProxy's 20 per 10 s beside routes of 10 and
	// 20 a second, all started at once, was taken for one limit with
	// them, and drew a 429 every 75 ms at the tenant's pace).
	st := m.aimd[endpoint]
	if st != nil && st.gapBound && st.lo > 0 && w.members[endpoint] == nil && !prevSent.IsZero() &&
		sentAt.Sub(prevSent).Seconds()*st.lo < noBurstOwn {
		return
	}
	if st != nil && st.runLong && st.run > 0 && w.members[endpoint] == nil {
		return
	}
	// An idle endpoint's refusal is evidence only where its own traffic
	// cannot explain it: its request before the idle spell was accepted
	// (one refused, then held back by heed's own backoff, is a window of
	// its own not yet turned: HAProxy's 20 per 10 s, a single endpoint,
	// was widened to "the tenant" at its third refusal and held 10 s on
	// a fresh AIMD scope), and another endpoint of the tenant drew a bare
	// 429 lately, so that a limit they share is there to be spent by
	// someone else (a hypothesis with one member says nothing).
	idle := !prevSent.IsZero() && sentAt.Sub(prevSent) >= idleGap &&
		m.acceptedLastLocked(endpoint, prevSent) &&
		w.lastEP != "" && w.lastEP != endpoint && now.Sub(w.lastAt) < suspectFor
	paced := st != nil
	// below: refused where its own limit would not have refused it: its
	// requests accepted below the ceiling its own AIMD found, or, for a
	// no-burst limiter found between bounds, sent noBurstOwn of its
	// intervals or more after the one before. A limit
	// it shares refuses it so when the others take their share; a limit
	// of its own, only past its ceiling.
	below := m.belowCeilingLocked(endpoint) ||
		st != nil && st.gapBound && st.lo > 0 && !prevSent.IsZero() && sentAt.Sub(prevSent).Seconds()*st.lo >= noBurstOwn
	together := paced && w.lastPaced && w.lastEP != "" && w.lastEP != endpoint && now.Sub(w.lastAt) < m.togetherWindowLocked(w.lastEP, endpoint)
	if together && !now.Before(w.until) {
		switch {
		case w.suspect.IsZero() || now.Sub(w.suspect) > suspectFor:
			w.suspect, together = now, false
		case now.Sub(w.suspect) < suspectMin:
			together = false // the same event
		case !below && !w.lastBelow:
			// Both refused at or past the ceilings their own AIMD found:
			// each probing its own limit, as two routes with limits of
			// their own on one window grid are refused together again
			// and again (sim.MultiRoute's, 10 per 1 s each, held at a
			// shared rate, 79% and 79% of theirs; 91% each, not).
			together = false
		}
	}
	if (idle || together) && !now.Before(w.quietUntil) {
		w.suspect = time.Time{}
		if !now.Before(w.until) {
			w.members, w.sent, w.limited, w.floor, w.adopted = nil, 0, 0, 0, now // a new hypothesis
		}
		w.until = now.Add(widenTTL)
		m.joinLocked(w, w.lastEP, now)
		m.joinLocked(w, endpoint, now)
	}
	w.lastAt, w.lastEP, w.lastPaced, w.lastBelow = now, endpoint, paced, below
	if !now.Before(w.until) {
		return
	}
	m.joinLocked(w, endpoint, now)
	if mb := w.members[endpoint]; mb != nil {
		mb.limited++
		w.limited++
	}
	if w.limited >= refuteAfter && w.refuted() {
		w.refute(now)
	}
}

// acceptedLastLocked reports whether an endpoint's request sent at
// prevSent, its last before the one now answered, was accepted; m.mu is
// held.
func (m *Memory) acceptedLastLocked(endpoint string, prevSent time.Time) bool {
	mt := m.accepted[endpoint]
	return mt != nil && !mt.accSent.Before(prevSent)
}

// belowCeilingLocked reports whether an endpoint's own AIMD found a
// ceiling and its requests are accepted below it now; m.mu is held.
func (m *Memory) belowCeilingLocked(endpoint string) bool {
	st := m.aimd[endpoint]
	return st != nil && st.ceiling > 0 && m.accepted[endpoint].acceptedRate() < aimdNearCeiling*st.ceiling
}

// togetherWindowLocked is how close two endpoints' bare 429s must come to
// be refused together: two of the slower one's intervals between accepted
// requests, within [togetherMin, bareWindow]. A limit they share refuses
// them in one event, as soon as each sends; limits of their own refuse
// them each at its own times, and one refused every few seconds meets the
// other's refusals within a fixed two seconds by chance most of the time
// (nginx locations of 5 and 20 r/s were so taken for one in 5 of 15 runs);
// m.mu is held.
func (m *Memory) togetherWindowLocked(a, b string) time.Duration {
	slow := math.Inf(1)
	for _, ep := range [2]string{a, b} {
		slow = min(slow, m.accepted[ep].acceptedRate())
	}
	if slow <= 0 || math.IsInf(slow, 1) {
		return bareWindow
	}
	return min(max(time.Duration(2*float64(time.Second)/slow), togetherMin), bareWindow)
}

// joinLocked makes an endpoint a member of w, raising w's floor to the
// rate its requests were accepted at alone; m.mu is held.
func (m *Memory) joinLocked(w *wideState, endpoint string, now time.Time) {
	if endpoint == "" || w.members[endpoint] != nil {
		return
	}
	if w.members == nil {
		w.members = make(map[string]*member)
	}
	if len(w.members) < maxMembers {
		w.members[endpoint] = &member{}
		// Only a rate measured over a whole window: a partial one, at a
		// program's start, reads the burst the server let through at once.
		if mt := m.accepted[endpoint]; mt != nil && mt.rate > 0 {
			w.floor = max(w.floor, mt.rate)
		}
	}
}

// refute drops the hypothesis, and keeps it from being adopted again for a
// while.
func (w *wideState) refute(now time.Time) {
	w.until, w.quietUntil, w.members = time.Time{}, now.Add(widenQuiet), nil
}

// refuted reports whether one member drew far more of the 429s than its
// share of the traffic, and more than chance gives a shared limit: a
// shared limit refuses its members' requests alike, so the refusals one
// member draws are about a binomial count at its share. Eight 429s of
// four members, six on one, is a chance of about 1 in 60, met often over
// a long run: the hypothesis was refuted in 15 of 200 runs of four
// endpoints on one silent 10/s limit, whose 429s then rose to 4-6%.
// refuteChance keeps such a refusal pattern from refuting it by chance
// (runs with over 2.8% refused: 13 of 200 before, 4 after); an endpoint
// refused by a limit of its own draws nearly all of them, which no shared
// limit explains.
func (w *wideState) refuted() bool {
	if w.sent < floorEvery {
		return false // too few answers to know anyone's share
	}
	for _, mb := range w.members {
		share := float64(mb.sent) / float64(w.sent)
		// The chance at its share, one answer more for each member, so
		// that one with none yet is not taken to have sent nothing.
		smoothed := float64(mb.sent+1) / float64(w.sent+len(w.members))
		if float64(mb.limited)/float64(w.limited) > share+refuteMargin &&
			binomialTail(w.limited, mb.limited, smoothed) < refuteChance {
			return true
		}
	}
	return false
}

// binomialTail is the chance of k or more successes in n trials of
// chance p each. Past the most likely count the terms only shrink, and
// the sum stops once they no longer add to it: a few dozen steps however
// many 429s a long-lived hypothesis has counted.
func binomialTail(n, k int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n || p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	ln, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lr, _ := math.Lgamma(float64(n - k + 1))
	term := math.Exp(ln - lk - lr + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	odds := p / (1 - p)
	sum := 0.0
	for i := k; i <= n; i++ {
		sum += term
		next := term * float64(n-i) / float64(i+1) * odds
		if next == 0 || next < term && next <= sum*1e-15 {
			break
		}
		term = next
	}
	return min(sum, 1)
}

// wideResponseLocked counts a response of an endpoint under its tenant's
// hypothesis, if the endpoint is one of its members; m.mu is held.
func (m *Memory) wideResponseLocked(tenant, endpoint string, now time.Time) {
	if len(m.wide) == 0 {
		return
	}
	w := m.wide[tenant]
	if w == nil || !now.Before(w.until) {
		return
	}
	if mb := w.members[endpoint]; mb != nil {
		mb.sent++
		w.sent++
		if w.sent%floorEvery == 0 && w.floor > 0 && now.Sub(w.adopted) >= 2*meterWindow &&
			m.membersRateLocked(tenant, now) < refuteFloor*w.floor {
			w.refute(now)
			return
		}
		// Holding, and not refuted: it lasts while its members send.
		w.until = now.Add(widenTTL)
	}
}

// Widened returns the scope that paces an endpoint while its tenant's
// unknown limit is taken to span the endpoints that draw bare 429s and
// the endpoint is one of them, and whether there is one.
func (m *Memory) Widened(tenant, endpoint string, now time.Time) (string, bool) {
	if !m.anyWide.Load() {
		return "", false
	}
	m.lock()
	defer m.mu.Unlock()
	return m.widenedLocked(tenant, endpoint, now)
}

func (m *Memory) widenedLocked(tenant, endpoint string, now time.Time) (string, bool) {
	if len(m.wide) == 0 {
		return "", false
	}
	w := m.wide[tenant]
	if w == nil || !now.Before(w.until) || w.members[endpoint] == nil {
		return "", false
	}
	return wideKey(tenant), true
}

// wideFloor is the least rate a tenant's widened scope is cut to while the
// hypothesis holds: refuteFloor of the most one member was accepted at
// alone when it joined, below which the hypothesis is refuted anyway; 0
// where none holds.
func (m *Memory) wideFloor(tenant string, now time.Time) float64 {
	m.lock()
	defer m.mu.Unlock()
	w := m.wide[tenant]
	if w == nil || !now.Before(w.until) {
		return 0
	}
	return refuteFloor * w.floor
}

// wideKey is the AIMD scope of a tenant's widened unknown limit.
func wideKey(tenant string) string { return tenant + " limit:unknown" }
