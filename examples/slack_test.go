package examples

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/sim"
	"github.com/slack-go/slack"
)

// 30 messages, 10 to each of 3 channels, from 6 workers, against the
// simulator's Slack (chat.postMessage: a burst of 3 per channel, then one a
// second): heed spaces the messages to one channel a second apart and lets
// the channels go side by side.
func TestSlack(t *testing.T) {
	bubble(t, func(t *testing.T) {
		srv := sim.New(sim.Scenario(sim.Slack))
		r := newRig(profile.Slack(), srv.RoundTripper())
		sl := NewSlackClient(&r.sdk, "xoxb-test")
		const channels, perChannel = 3, 10
		start := time.Now()
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		work := make(chan int)
		for range 6 {
			wg.Go(func() {
				for i := range work {
					ch := fmt.Sprintf("C%d", i%channels)
					if _, _, err := sl.PostMessageContext(t.Context(), ch, slack.MsgOptionText(fmt.Sprintf("message %d", i), false)); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
		for i := range channels * perChannel {
			work <- i
		}
		close(work)
		wg.Wait()
		elapsed := time.Since(start)
		for _, err := range errs {
			t.Errorf("call failed: %v", err)
		}
		truth := srv.Truth()
		t.Logf("server: %d requests, %d accepted, %d rejected; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, r.retries.Load())
		// Per channel: a burst of 3, then one a second: 7s for 10.
		ideal := time.Duration(perChannel-3) * time.Second
		checkEfficiency(t, channels*perChannel-len(errs), channels*perChannel, elapsed, ideal, 0.7)
		checkTruth(t, truth.Counts, r.wire.n.Load())
		r.checkOneLayer(t, channels*perChannel, 0)
	})
}

// A 429 whose Retry-After is past MaxWait comes back as slack-go's
// *slack.RateLimitedError; the next call heed refuses without sending, and
// slack-go's error wraps heed's. slack-go makes one attempt per call: its
// retries are off unless OptionRetry turns them on.
func TestSlackErrors(t *testing.T) {
	bubble(t, func(t *testing.T) {
		script := &heedtest.Script{Responses: []heedtest.Response{{
			Status: http.StatusTooManyRequests,
			Header: heedtest.Headers("Retry-After", "120", "Content-Type", "application/json"),
			Body:   `{"ok":false,"error":"ratelimited"}`,
		}}}
		r := newRig(profile.Slack(), script)
		sl := NewSlackClient(&r.sdk, "xoxb-test")
		_, _, err := sl.PostMessageContext(t.Context(), "C1", slack.MsgOptionText("one", false))
		var rle *slack.RateLimitedError
		if !errors.As(err, &rle) || rle.RetryAfter != 120*time.Second {
			t.Fatalf("first call: %v, want a *slack.RateLimitedError of 2m", err)
		}
		_, _, err = sl.PostMessageContext(t.Context(), "C1", slack.MsgOptionText("two", false))
		var lim *heed.LimitedError
		if !errors.As(err, &lim) || lim.StatusCode != 0 {
			t.Fatalf("second call: %v, want an error wrapping heed's local refusal", err)
		}
		r.checkOneLayer(t, 2, 1)
	})
}
