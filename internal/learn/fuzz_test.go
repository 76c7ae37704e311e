package learn

import (
	"math"
	"testing"
	"time"

	"github.com/heedhttp/heed/header"
)

// FuzzPlanCounts feeds the planner sequences of X-RateLimit answers, from
// three endpoints of one tenant, with any quota, count, reset and status:
// the sliding and shared-counter evidence (slidingCount, sharedUnnamed)
// never panics, and every block and rate it plans is finite and bounded.
func FuzzPlanCounts(f *testing.F) {
	f.Add([]byte{0, 10, 9, 1, 0, 1, 10, 8, 1, 0, 2, 10, 9, 1, 0, 0, 10, 0, 1, 0})
	f.Add([]byte{0, 20, 19, 2, 1, 0, 20, 19, 2, 1, 1, 20, 0, 0, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Memory
		eps := []string{"https://api.test GET /a", "https://api.test GET /b", "https://api.test GET /c"}
		at := t0
		for i := 0; i+4 < min(len(b), 200); i += 5 {
			r := request()
			r.Rate = 0
			r.Endpoint = eps[int(b[i])%len(eps)]
			quota := float64(b[i+1]) * float64(1+int(b[i+4])%64)
			remaining := float64(b[i+2]) - 3
			reset := at.Truncate(time.Second).Add(time.Duration(int(b[i+3])%130-5) * time.Second)
			status := 200
			if b[i+4]%7 == 0 {
				status = 429
			}
			at = at.Add(time.Duration(b[i+4]) * 7 * time.Millisecond)
			l := header.Limit{Known: header.HasQuota | header.HasRemaining | header.HasReset, Quota: quota, Remaining: remaining, Reset: reset,
				Dialect: header.XRateLimit, Unit: header.Requests}
			var p Plan
			m.Plan(Config{Skew: 200 * time.Millisecond}, &Input{Req: r, Obs: &header.Observation{Status: status, Throttled: status == 429, Limits: []header.Limit{l}},
				Status: status, SentAt: at, Now: at.Add(time.Millisecond)}, &p)
			for _, bl := range p.Update.Blocks {
				if bl.For < 0 || bl.For > MaxBlock+2*time.Second {
					t.Fatalf("block %+v", bl)
				}
			}
			for _, ru := range p.Update.Rates {
				if math.IsNaN(ru.Rate) || math.IsInf(ru.Rate, 0) || ru.Rate < 0 || math.IsNaN(ru.Add) || math.IsInf(ru.Add, 0) {
					t.Fatalf("rate %+v", ru)
				}
			}
		}
	})
}
