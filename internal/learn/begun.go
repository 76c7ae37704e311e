package learn

import (
	"time"

	"github.com/heedhttp/heed/header"
)

// A window whose length and count are stated but not when it turns (the
// Riot Games API's X-App-Rate-Limit: 100:120 with -Count: 42:120) turns
// no later than its length after it began, and it began no later than the
// first answer that showed it: the one that said all but its own request
// was left, or one that said more was left than the answer before (a
// later window). Read so, a count spent holds the scope until then; read
// as no reset at all, it was sent into, a 429 a window (a Retry-After of
// two minutes each time, and Riot counts repeated 429s against the key).
// Where no answer showed the window begin (the client came in mid-window),
// nothing bounds it, and the server's own refusal, with its Retry-After,
// says when.
//
// Memory: one begunState a scope, in a map of at most MaxEntries.
type begunState struct {
	first     time.Time // the current window's first answer; zero when unseen
	remaining float64   // what the last accepted answer said was left
	sentAt    time.Time // when that answer's request was sent
	seen      bool
}

// begunMargin is how long past the bound the scope is held: a request
// sent a window after the first answer reaches the server after the
// window the first request opened has turned.
const begunMargin = 5 * time.Millisecond

// stateOnly reports whether a limit states a window's length and count
// and no reset, in a dialect whose windows are counted so (begunTurn).
func stateOnly(l *header.Limit) bool {
	return l.Dialect == header.Riot && l.Has(header.HasQuota|header.HasRemaining|header.HasWindow) &&
		!l.Has(header.HasReset) && l.Window > 0 && l.Quota >= 1
}

// begunTurn records an answer of a window that states no reset (stateOnly)
// and returns when the window turns at the latest, if an answer showed it
// begin; false otherwise.
func (m *Memory) begunTurn(key string, l *header.Limit, status int, sentAt, now time.Time) (time.Time, bool) {
	m.lock()
	defer m.mu.Unlock()
	s, _ := entry(&m.begun, key)
	if status < 400 && (!s.seen || sentAt.After(s.sentAt)) {
		switch {
		case l.Remaining >= l.Quota-1 && (s.first.IsZero() || !now.Before(s.first.Add(l.Window))):
			// The window's first request: it began no later.
			s.first = now
		case s.seen && l.Remaining > s.remaining && (s.first.IsZero() || !now.Before(s.first.Add(l.Window))):
			// More left than the answer before said: a later window,
			// begun no later than now.
			s.first = now
		}
		s.remaining, s.sentAt, s.seen = l.Remaining, sentAt, true
	}
	if s.first.IsZero() {
		return time.Time{}, false
	}
	at := s.first.Add(l.Window + begunMargin)
	if !at.After(now) {
		// Past its bound, the window has turned since: what began it is
		// not known.
		s.first = time.Time{}
		return time.Time{}, false
	}
	return at, true
}
