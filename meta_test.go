package heed_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// metaAPI answers as the Graph API documents its app limit: calls counted
// over a rolling hour, the share spent in X-App-Usage, and once it is
// spent, a 400 with error code 4 until enough of the hour has passed.
type metaAPI struct {
	mu       sync.Mutex
	limit    int
	sent     []time.Time // accepted calls within the last hour
	accepted int
	refused  int
}

func (s *metaAPI) answer(*http.Request, int) heedtest.Response {
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for len(s.sent) > 0 && !now.Before(s.sent[0].Add(time.Hour)) {
		s.sent = s.sent[1:]
	}
	status, body := http.StatusOK, `{"data":[]}`
	if len(s.sent) >= s.limit {
		status, body = http.StatusBadRequest, `{"error":{"message":"(#4) Application request limit reached","type":"OAuthException","is_transient":true,"code":4,"fbtrace_id":"A1"}}`
		s.refused++
	} else {
		s.sent = append(s.sent, now)
		s.accepted++
	}
	pct := 100 * len(s.sent) / s.limit
	h := heedtest.Headers("X-App-Usage", `{"call_count":`+strconv.Itoa(pct)+`,"total_time":1,"total_cputime":1}`)
	return heedtest.Response{Status: status, Header: h, Body: body}
}

// The Graph API's app limit answered with a 400 and error code 4 is a
// throttle, of the token's calls (its tenant), once X-App-Usage says the
// answer is Meta's: heed backs off instead of sending the next call at
// once. It states no wait (the count drops as the hour rolls on), so heed
// waits its backoff and asks again: about one refusal a second. Read as an
// ordinary 400 (before), a loop sent into it 35,800 times in 30 minutes.
func TestMetaAppLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &metaAPI{limit: 200}
		tr := &heed.Transport{Base: &heedtest.Script{Func: s.answer}, MaxRetries: -1}
		fails := serial(tr, http.MethodGet, "https://graph.facebook.com/v21.0/me/feed", 30*time.Minute)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("accepted %d, refused %d, failed %d", s.accepted, s.refused, fails)
		// The hour's 200, then about one refusal a second (a backoff of
		// up to 2 s, a second on average) for the rest of the half hour:
		// a wait ten times longer would leave about 180, none at all tens
		// of thousands.
		if s.accepted != 200 || s.refused < 1400 || s.refused > 2000 {
			t.Errorf("accepted %d, refused %d; want the 200 the hour allows, and 1400 to 2000 refused in the half hour", s.accepted, s.refused)
		}
	})
}
