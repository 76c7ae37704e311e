package sim_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/sim"
)

func TestSentWhileBlocked(t *testing.T) {
	const issue = site + "/rest/api/3/issue/ABC-1"
	tests := []struct {
		name  string
		grace time.Duration
		after time.Duration // since the 429, or the write that left r=0
		url   string
		write bool // block with the per-issue window (r=0) instead of a burst 429
		want  int
	}{
		{"in flight within grace", 0, 49 * time.Millisecond, issue, false, 0},
		{"after grace", 0, 50 * time.Millisecond, issue, false, 1},
		{"no grace", -1, 0, issue, false, 1},
		{"longer grace", 200 * time.Millisecond, 150 * time.Millisecond, issue, false, 0},
		{"last instant of Retry-After", 0, time.Second - time.Nanosecond, issue, false, 1},
		{"Retry-After over", 0, time.Second, issue, false, 0},
		{"other endpoint", 0, 100 * time.Millisecond, site + "/rest/api/3/project", false, 0},
		{"other tenant", 0, 100 * time.Millisecond, "https://b.atlassian.net/rest/api/3/issue/ABC-1", false, 0},
		{"window reported exhausted", 0, time.Second, issue, true, 1},
		{"window reset", 0, 2 * time.Second, issue, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := sim.New(sim.Config{Grace: tc.grace})
				c := newClient(t, s)
				method := "GET"
				if tc.write {
					method = "PUT"
					for i := range 20 { // the 20th says r=0 until the 2 s window ends
						c.do(method, issue, fmt.Sprint(i))
					}
				} else if got := c.repeat(101, method, issue, ""); got[429] != 1 {
					t.Fatalf("setup: %v, want one 429", got)
				}
				if got := s.Truth().SentWhileBlocked; got != 0 {
					t.Fatalf("before: SentWhileBlocked = %d, want 0", got)
				}
				time.Sleep(tc.after)
				c.do(method, tc.url, "x", "X-Sim-Client", "w1")
				tr := s.Truth()
				cl, _ := tr.Client("w1")
				if tr.SentWhileBlocked != tc.want || cl.SentWhileBlocked != tc.want {
					t.Errorf("SentWhileBlocked = %d (client %d), want %d", tr.SentWhileBlocked, cl.SentWhileBlocked, tc.want)
				}
			})
		})
	}
}

func TestSentWhileBlockedPerScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Scale: 0.01}) // burst of 1 per endpoint
		c := newClient(t, s)
		url := site + "/rest/api/3/issue/ABC-1"
		c.do("GET", url, "")
		c.do("GET", url, "") // 429, Retry-After 1 from 0 s
		time.Sleep(500 * time.Millisecond)
		c.do("GET", url, "") // blocked; its 429 extends the block to 1.5 s
		time.Sleep(700 * time.Millisecond)
		c.do("GET", url, "") // at 1.2 s, still blocked
		tr := s.Truth()
		sc, ok := tr.Scope(sim.JiraBurst, "acme.atlassian.net GET /rest/api/3/issue/{id}")
		if !ok || sc.SentWhileBlocked != 2 || sc.Requests != 4 || sc.Accepted != 2 || sc.Rejected != 2 {
			t.Errorf("scope = %+v, want 4 requests, 2 accepted, 2 rejected, 2 sent while blocked", sc)
		}
		if sc, _ := tr.Scope(sim.JiraTenantQuota, "acme.atlassian.net"); sc.SentWhileBlocked != 0 || sc.Requests != 4 {
			t.Errorf("tenant scope = %+v, want 4 requests, none blocked", sc)
		}
	})
}

func TestDuplicates(t *testing.T) {
	type req struct {
		method, path, body, key string
		after                   time.Duration
	}
	tests := []struct {
		name  string
		scale float64
		reqs  []req
		want  int
	}{
		{"same POST twice", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", time.Second}}, 1},
		{"POST different bodies", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "b", "", 0}}, 0},
		{"POST different paths", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue/ABC-1/comment", "a", "", 0}}, 0},
		{"POST just within the window", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", time.Minute - time.Millisecond}}, 1},
		{"POST outside the window", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", time.Minute}}, 0},
		{"POST three times", 0, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", 0}}, 2},
		{"PUT is idempotent", 0, []req{{"PUT", "/issue/ABC-1", "a", "", 0}, {"PUT", "/issue/ABC-1", "a", "", 0}}, 0},
		{"same Idempotency-Key", 0, []req{{"PATCH", "/issue/ABC-1", "a", "k1", 0}, {"PATCH", "/issue/ABC-1", "b", "k1", 0}}, 1},
		{"different Idempotency-Keys", 0, []req{{"POST", "/issue", "a", "k1", 0}, {"POST", "/issue", "a", "k2", 0}}, 0},
		{"rejected retry is no duplicate", 0.01, []req{{"POST", "/issue", "a", "", 0}, {"POST", "/issue", "a", "", 0}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := sim.New(sim.Config{Scale: tc.scale})
				c := newClient(t, s)
				for _, r := range tc.reqs {
					time.Sleep(r.after)
					h := []string{"X-Sim-Client", "c"}
					if r.key != "" {
						h = append(h, "Idempotency-Key", r.key)
					}
					c.do(r.method, site+"/rest/api/3"+r.path, r.body, h...)
				}
				tr := s.Truth()
				cl, _ := tr.Client("c")
				if tr.Duplicates != tc.want || cl.Duplicates != tc.want {
					t.Errorf("Duplicates = %d (client %d), want %d", tr.Duplicates, cl.Duplicates, tc.want)
				}
			})
		})
	}
}

func TestPeakAndSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Scale: 0.1}) // 10 per second per endpoint
		c := newClient(t, s)
		url := site + "/rest/api/3/issue/ABC-1"
		for range 3 {
			c.repeat(12, "GET", url, "", "X-Sim-Client", "naive") // 10 accepted, 2 rejected
			time.Sleep(250 * time.Millisecond)
		}
		c.do("GET", url, "", "X-Sim-Client", "polite")
		tr := s.Truth()
		sc, _ := tr.Scope(sim.JiraBurst, "acme.atlassian.net GET /rest/api/3/issue/{id}")
		if sc.Peak != 37 || sc.Quota != 10 || sc.Window != time.Second {
			t.Errorf("Peak %v of Quota %v per %v, want 37 of 10 per 1s", sc.Peak, sc.Quota, sc.Window)
		}
		naive, _ := tr.Client("naive")
		wantAcc := []int{10, 0, 2, 0, 0, 3} // refilled 2.5 tokens per 250 ms
		wantRej := []int{2, 0, 10, 0, 0, 9}
		if !slices.Equal(naive.Series.Accepted, wantAcc) || !slices.Equal(naive.Series.Rejected, wantRej) {
			t.Errorf("naive series = %v / %v, want %v / %v", naive.Series.Accepted, naive.Series.Rejected, wantAcc, wantRej)
		}
		polite, _ := tr.Client("polite")
		if !polite.Series.Start.Equal(tr.Start.Add(700*time.Millisecond)) || !slices.Equal(polite.Series.Accepted, []int{1}) {
			t.Errorf("polite series = %+v, want one point at +700ms", polite.Series)
		}
		if naive.Requests != 36 || naive.Accepted+naive.Rejected != 36 || tr.Requests != 37 {
			t.Errorf("counts: naive %+v, total %d; want 36 and 37", naive.Counts, tr.Requests)
		}
	})
}

func TestReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sim.New(sim.Config{Scale: 0.01})
		c := newClient(t, s)
		if got := c.repeat(2, "GET", site+"/x", ""); got[429] != 1 {
			t.Fatalf("setup: %v", got)
		}
		if r := c.do("POST", site+"/_sim/reset", ""); r.status != 204 {
			t.Fatalf("POST /_sim/reset: %d, want 204", r.status)
		}
		if r := c.do("GET", site+"/x", ""); r.status != 200 {
			t.Errorf("after reset: %d, want 200 (bucket refilled)", r.status)
		}
		if tr := s.Truth(); tr.Requests != 1 || tr.Accepted != 1 {
			t.Errorf("after reset: %+v, want one request", tr.Counts)
		}
		if r := c.do("GET", site+"/_sim/reset", ""); r.status != 405 {
			t.Errorf("GET /_sim/reset: %d, want 405", r.status)
		}
	})
}
