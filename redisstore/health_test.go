package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/store"
)

// fakeRedis answers the Store's scripts as an empty, healthy Redis would,
// or fails every call while down is set.
type fakeRedis struct {
	s *Store

	mu    sync.Mutex
	down  bool
	calls map[string]int      // by script: admit, release, update, undo, renew
	keys  map[string][]string // by script: the keys of its last call
}

func (f *fakeRedis) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeRedis) count(script string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[script]
}

// lastKeys returns the keys of script's last call.
func (f *fakeRedis) lastKeys(script string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys[script]
}

func (f *fakeRedis) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return redis.NewCmdResult(nil, errors.New("fake: connection refused"))
	}
	name := map[string]string{
		f.s.admit.Hash(): "admit", f.s.release.Hash(): "release", f.s.update.Hash(): "update",
		f.s.undo.Hash(): "undo", f.s.renew.Hash(): "renew",
	}[sha]
	if f.calls == nil {
		f.calls = make(map[string]int)
		f.keys = make(map[string][]string)
	}
	f.calls[name]++
	f.keys[name] = append([]string(nil), keys...)
	// The rates the pending section's updates set (see pending.lua), each
	// reported as 1.
	a := strings.Fields(string(args[0].([]byte)))
	section := map[string]int{"update": 5, "release": 2}[name]
	if name == "admit" {
		n, _ := strconv.Atoi(a[13])
		section = 17 + 6*n
	}
	var set []any
	if section > 0 {
		nr, _ := strconv.Atoi(a[section+1])
		for range nr {
			set = append(set, "1")
		}
	}
	switch name {
	case "admit":
		if len(set) > 0 {
			return redis.NewCmdResult([]any{int64(0), int64(0), int64(0), int64(0), "epoch", nil, nil, nil, nil, set}, nil)
		}
		return redis.NewCmdResult([]any{int64(0), int64(0), int64(0), int64(0), "epoch"}, nil)
	case "update":
		return redis.NewCmdResult(append([]any{"epoch"}, set...), nil)
	case "release":
		return redis.NewCmdResult(append([]any{}, set...), nil)
	}
	return redis.NewCmdResult(int64(0), nil)
}

func (f *fakeRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, "", keys, args...)
}
func (f *fakeRedis) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, "", keys, args...)
}
func (f *fakeRedis) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, sha, keys, args...)
}
func (f *fakeRedis) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(nil, nil)
}
func (f *fakeRedis) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}

// Switching has hysteresis: FailThreshold failures in a row to fall back
// (the calls before decide locally on their own), RecoverThreshold good
// probes in a row to return, each switch reported once; what could not
// reach Redis meanwhile (a release, the undo of an admission whose reply
// was lost) is delivered after the return.
func TestHealthHysteresis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRedis{}
		var health healthLog
		s := New(f, Config{ProbeInterval: time.Second, OnHealth: health.record})
		f.s = s
		defer s.Close()
		ctx := context.Background()
		a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 4}}}

		d, err := s.Admit(ctx, a)
		if err != nil || d.Lease&redisLease == 0 {
			t.Fatalf("Admit on Redis = %+v, %v; want a Redis lease", d, err)
		}
		held := d.Lease
		f.setDown(true)
		for i := range DefaultFailThreshold {
			if !s.Healthy() {
				t.Fatalf("fell back after %d failed calls, want %d", i, DefaultFailThreshold)
			}
			d, err := s.Admit(ctx, a)
			if err != nil || d.Reason != store.Admitted || d.Lease&redisLease != 0 {
				t.Fatalf("Admit %d with Redis down = %+v, %v; want a local lease", i+1, d, err)
			}
		}
		if s.Healthy() || len(health.get()) != 1 {
			t.Fatalf("after %d failed calls: healthy %v, events %+v; want one fallback", DefaultFailThreshold, s.Healthy(), health.get())
		}
		if err := s.Release(ctx, a, held); err != nil {
			t.Errorf("Release of a Redis lease while down = %v, want nil (kept)", err)
		}
		// The failed admissions' undos and the release wait for Redis.
		if st := s.Stats(); st.Pending != DefaultFailThreshold+1 || st.Fallbacks != 1 {
			t.Errorf("Stats() = %+v, want %d pending and one fallback", st, DefaultFailThreshold+1)
		}

		f.setDown(false)
		before := f.count("admit")
		for range 10 {
			_, _ = s.Admit(ctx, a)
		}
		if n := f.count("admit") - before; n != 0 {
			t.Errorf("%d calls reached Redis within the probe interval, want none", n)
		}
		time.Sleep(time.Second)
		for i := range DefaultRecoverThreshold {
			if s.Healthy() {
				t.Fatalf("returned after %d good probes, want %d", i, DefaultRecoverThreshold)
			}
			_, _ = s.Admit(ctx, a)
			time.Sleep(time.Second / 5)
		}
		if !s.Healthy() {
			t.Fatalf("not back after %d good probes", DefaultRecoverThreshold)
		}
		if ev := health.get(); len(ev) != 2 || !ev[1].Healthy {
			t.Errorf("health events = %+v, want a fallback and a return", ev)
		}
		_, _ = s.Admit(ctx, a) // delivers what was kept
		if st := s.Stats(); st.Pending != 0 || st.Recoveries != 1 || !st.Healthy {
			t.Errorf("Stats() after the return = %+v, want nothing pending, one recovery", st)
		}
		if f.count("undo") != DefaultFailThreshold || f.count("release") != 1 {
			t.Errorf("delivered %d undos and %d releases, want %d and 1", f.count("undo"), f.count("release"), DefaultFailThreshold)
		}
		if _, ok := s.handingOver(); !ok {
			t.Errorf("handingOver() = false just after the return, want buckets taken as empty")
		}
		time.Sleep(handoverWindow)
		if _, ok := s.handingOver(); ok {
			t.Errorf("handingOver() = true %v after the return, want false", handoverWindow)
		}
	})
}

// The timeout follows Redis's measured latency: four times its 99th
// percentile when that is above the configured one, capped by MaxTimeout.
func TestTimeoutAdapts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		latency time.Duration
		want    time.Duration
	}{
		{"quiet", time.Millisecond, 100 * time.Millisecond},
		{"loaded", 60 * time.Millisecond, 240 * time.Millisecond},
		{"capped", time.Second, DefaultMaxTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&fakeRedis{}, Config{})
			for range 128 {
				s.lat.observe(tc.latency)
			}
			if got := s.callTimeout(); got != tc.want {
				t.Errorf("callTimeout() after 128 calls of %v = %v, want %v", tc.latency, got, tc.want)
			}
		})
	}
}

// The local bucket emptied at a hand-over is the one the fallback paces
// by: with a learned rate, its learned burst, not the admission's default
// (a large default burst priced at a slow learned rate would stall the
// scope for many seconds).
func TestHandOverPrimesTheLearnedBucket(t *testing.T) {
	clock := time.Unix(1e9, 0)
	f := &fakeRedis{}
	s := New(f, Config{Instances: 2, FailThreshold: 1, Now: func() time.Time { return clock }})
	f.s = s
	defer s.Close()
	ctx := context.Background()
	if err := s.Update(ctx, &store.Update{Rates: []store.RateUpdate{{Key: "e", Rate: 10, Burst: 4}}}); err != nil {
		t.Fatal(err)
	}
	f.setDown(true)
	// Defaults far above what was learned: 100/s with a burst of 100.
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "e", Rate: 100, Burst: 100}}, MaxWait: time.Nanosecond}
	d, err := s.Admit(ctx, a)
	if err != nil || d.Reason != store.Paced {
		t.Fatalf("first local Admit = %+v, %v; want paced (no burst at the hand-over)", d, err)
	}
	// The learned 10/s divided by 2 instances: one turn is 200ms.
	if d.Wait > 200*time.Millisecond {
		t.Errorf("first local Admit waits %v, want at most one turn of 200ms at the learned local rate", d.Wait)
	}
	clock = clock.Add(d.Wait)
	if d, err := s.Admit(ctx, a); err != nil || d.Reason != store.Admitted {
		t.Errorf("local Admit a turn later = %+v, %v; want admitted", d, err)
	}
}

// At the switch to the fallback, a spaced resource's gap starts, as if
// written on Redis just before, multiplied by Instances like every local
// gap.
func TestHandOverStartsGaps(t *testing.T) {
	clock := time.Unix(1e9, 0)
	f := &fakeRedis{}
	s := New(f, Config{Instances: 2, FailThreshold: 1, Now: func() time.Time { return clock }})
	f.s = s
	defer s.Close()
	f.setDown(true)
	w := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "issue 1", Gap: time.Second}}}
	d, err := s.Admit(context.Background(), w)
	if err != nil || d.Reason != store.Spaced || d.Wait != 2*time.Second {
		t.Fatalf("first local write = %+v, %v; want spaced for the gap of 1s times 2 instances", d, err)
	}
	clock = clock.Add(d.Wait)
	if d, err := s.Admit(context.Background(), w); err != nil || d.Reason != store.Admitted {
		t.Errorf("local write after the gap = %+v, %v; want admitted", d, err)
	}
}
