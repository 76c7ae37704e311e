package examples

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
	"github.com/slack-go/slack"
)

// slackAPI is Slack's chat.postMessage as its rate-limit documentation
// describes it (https://api.slack.com/apis/rate-limits): about one message
// per second per channel, short bursts allowed, and a 429 with Retry-After
// in seconds and {"ok":false,"error":"ratelimited"}.
func slackAPI() *fake {
	return &fake{
		Rate: 1, Burst: 3,
		Scope: func(r *http.Request, body []byte) string {
			v, _ := url.ParseQuery(string(body))
			return v.Get("token") + " " + r.URL.Path + " " + v.Get("channel")
		},
		Reject: func(w http.ResponseWriter, wait time.Duration) time.Duration {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", seconds(wait))
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
			return wait
		},
		Accept: func(w http.ResponseWriter, r *http.Request, _, _, _ float64) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
		},
	}
}

// 30 messages, 10 to each of 3 channels, from 6 workers: heed spaces the
// messages to one channel a second apart and lets the channels go side by
// side.
func TestSlack(t *testing.T) {
	bubble(t, func(t *testing.T) {
		api := slackAPI()
		r := newRig(SlackProfile(), inProcess{api})
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
		truth := api.Truth()
		t.Logf("server: %d requests, %d accepted, %d rejected; heed retries %d", truth.Requests, truth.Accepted, truth.Rejected, r.retries.Load())
		// Per channel: a burst of 3, then one a second: 7s for 10.
		ideal := time.Duration(perChannel-3) * time.Second
		checkEfficiency(t, channels*perChannel-len(errs), channels*perChannel, elapsed, ideal, 0.7)
		checkTruth(t, truth, r.wire.n.Load())
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
		r := newRig(SlackProfile(), script)
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
