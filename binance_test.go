package heed_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/heedtest"
)

// Binance answers an address that kept sending after its 429s with a 418
// and a Retry-After to the end of the ban, and lengthens the ban for
// anything sent before it ends. heed holds the endpoint for the ban and
// sends again when it is over. Read as no throttle (before), the next call
// went at once and drew a longer ban.
func TestBinanceBan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var banEnd time.Time
		var during, accepted int
		first := true
		s := &heedtest.Script{Func: func(*http.Request, int) heedtest.Response {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			h := heedtest.Headers("X-MBX-USED-WEIGHT-1M", "6105")
			switch {
			case first:
				first, banEnd = false, now.Add(2*time.Minute)
				h.Set("Retry-After", "120")
				return heedtest.Response{Status: http.StatusTeapot, Header: h}
			case now.Before(banEnd):
				during++
				banEnd = now.Add(2 * time.Minute)
				h.Set("Retry-After", "120")
				return heedtest.Response{Status: http.StatusTeapot, Header: h}
			}
			accepted++
			return heedtest.Response{Status: http.StatusOK, Header: h}
		}}
		tr := &heed.Transport{Base: s, MaxRetries: -1}
		fails := serial(tr, http.MethodGet, "https://api.binance.com/api/v3/ticker/price", 3*time.Minute)
		mu.Lock()
		defer mu.Unlock()
		t.Logf("sent during the ban %d, accepted %d, failed fast %d", during, accepted, fails)
		// The first minute of the ban fails fast (MaxWait is a minute),
		// the second is waited, and the third minute is sent in.
		if during != 0 || accepted == 0 || fails < 55 || fails > 62 {
			t.Errorf("sent during the ban %d, accepted %d, failed fast %d; want none during it, some after, 55 to 62 failed fast", during, accepted, fails)
		}
	})
}
