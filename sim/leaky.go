package sim

import "time"

// A LeakyBucket keeps its excess in state.tokens, in units, the way nginx's
// limit_req does: each admitted request sets the excess to
// max(0, excess - rate*elapsed + cost) and a request that would set it above
// the burst is rejected. The excess is kept down to -1 between requests, so
// that a request arriving one interval after the last leaves none, as in
// nginx, and a fresh state (-1) admits its first request with no excess.

// drain lets the excess leak at the rule's rate until now.
func (ru *rule) drain(st *state, now time.Time) {
	if d := now.Sub(st.last); d > 0 {
		st.tokens = max(-1, st.tokens-d.Seconds()*ru.rate)
		st.last = now
	}
}

// excess is what the excess would be after admitting cost now; st is
// drained.
func (ru *rule) excess(st *state, cost float64) float64 {
	return max(0, st.tokens+cost)
}

// queueDelay is how long nginx holds a request it admitted with the excess
// st now has before passing it on (burst=N without nodelay).
func (ru *rule) queueDelay(st *state) time.Duration {
	return seconds(max(0, st.tokens) / ru.rate)
}
