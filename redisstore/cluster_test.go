package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/store"
	"github.com/heedhttp/heed/storetest"
)

// aclRules is the least a heed user needs, for a Store whose prefix starts
// with "heedtest:" (keys "{heedtest:...}:..."); the README gives the same
// rules for the default prefix.
var aclRules = []string{
	"resetkeys", "~{heedtest:*", "resetchannels", "-@all",
	"+evalsha", "+eval",
	// what the scripts call
	"+time", "+hmget", "+hset", "+pexpire", "+pttl", "+exists", "+set",
	"+zadd", "+zrem", "+zscore", "+zcard", "+zremrangebyscore", "+zrange", "+zpopmin", "+del",
}

func TestConformanceOnCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	storetest.Run(t, newStores(c.NewClient(t)))
}

func TestDifferentialOnCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	storetest.Differential(t, newStores(c.NewClient(t)))
}

// aclClient returns a client of a server that logs in as a user with only
// aclRules.
func aclClient(t *testing.T) (*redistest.Server, *redis.Client) {
	srv := redistest.Start(t)
	if srv.PID() == 0 {
		t.Skip("REDIS_URL names a shared server; the ACL test creates a user on its own")
	}
	u := srv.AddUser(t, "heed", "s3cret-pw", aclRules...)
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func TestConformanceAsACLUser(t *testing.T) {
	_, c := aclClient(t)
	storetest.Run(t, newStores(c))
}

// The ceiling on learned scopes (Config.MaxScopes) drops scopes with the
// ACL user's commands: past it, no update fails.
func TestCeilingAsACLUser(t *testing.T) {
	_, c := aclClient(t)
	s := redisstore.New(c, redisstore.Config{Prefix: redistest.Prefix(t), Timeout: 5 * time.Second, MaxScopes: 3,
		OnHealth: func(e redisstore.HealthEvent) { t.Errorf("store left Redis: %v", e.Err) }})
	defer s.Close()
	for i := range 10 {
		u := &store.Update{Rates: []store.RateUpdate{{Key: fmt.Sprintf("e%d", i), Rate: 1, TTL: time.Hour}}}
		if err := s.Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

// The user's rules are what the Store needs and no more: a command
// outside them is refused.
func TestACLIsMinimal(t *testing.T) {
	_, c := aclClient(t)
	if err := c.Get(context.Background(), "{heedtest:x}:k").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("GET as the heed user = %v, want NOPERM", err)
	}
	if err := c.Eval(context.Background(), "return redis.call('TIME')", []string{"other:k"}).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("EVAL on a key outside the prefix = %v, want NOPERM", err)
	}
}

// Check tells a wrong password and a wrong address apart, and never
// repeats the password.
func TestCheck(t *testing.T) {
	srv, good := aclClient(t)
	ctx := context.Background()
	s := redisstore.New(good, redisstore.Config{Prefix: redistest.Prefix(t)})
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check with the right password = %v, want nil", err)
	}
	for _, tc := range []struct {
		name string
		opts *redis.Options
		want string
	}{
		{"wrong password", &redis.Options{Addr: srv.Addr, Username: "heed", Password: "wrong-pw-123"}, "wrong user or password"},
		{"wrong address", &redis.Options{Addr: "127.0.0.1:1", Username: "heed", Password: "s3cret-pw"}, "wrong address"},
		{"no rights on the prefix", &redis.Options{Addr: srv.Addr, Username: "heed", Password: "s3cret-pw"}, "lacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ContextTimeoutEnabled = true
			tc.opts.MaxRetries = -1
			c := redis.NewClient(tc.opts)
			defer c.Close()
			prefix := redistest.Prefix(t)
			if tc.name == "no rights on the prefix" {
				prefix = "other"
			}
			err := redisstore.New(c, redisstore.Config{Prefix: prefix, Timeout: time.Second}).Check(ctx)
			var ce *redisstore.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("Check = %v, want a *CheckError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.opts.Password) || !strings.Contains(msg, tc.opts.Addr) {
				t.Errorf("Check = %q, want it to say %q and name %s, without the password", msg, tc.want, tc.opts.Addr)
			}
		})
	}
}

// Renew extends a lease that is held, so that a short lease TTL is safe
// for a request that runs longer, and leaves a released lease alone.
func TestRenew(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock()
	s := redisstore.New(srv.NewClient(t), redisstore.Config{Prefix: redistest.Prefix(t), Now: clock.Now, Timeout: 5 * time.Second})
	ctx := context.Background()
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "tenant", Limit: 1}}, LeaseTTL: time.Second}
	d, err := s.Admit(ctx, a)
	if err != nil || d.Reason != store.Admitted {
		t.Fatalf("Admit = %+v, %v", d, err)
	}
	for range 3 {
		clock.Advance(600 * time.Millisecond)
		if err := s.Renew(ctx, a, d.Lease, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// 1.8s after the admission, a 1s lease still holds the only slot.
	if d2, _ := s.Admit(ctx, a); d2.Reason != store.Busy {
		t.Errorf("Admit while a renewed lease holds the slot = %+v, want busy", d2)
	}
	if err := s.Release(ctx, a, d.Lease); err != nil {
		t.Fatal(err)
	}
	if err := s.Renew(ctx, a, d.Lease, time.Minute); err != nil {
		t.Errorf("Renew of a released lease = %v, want nil", err)
	}
	if d2, _ := s.Admit(ctx, a); d2.Reason != store.Admitted {
		t.Errorf("Admit after release and a late Renew = %+v, want admitted (a released lease is not revived)", d2)
	}
}

// A cluster client needs the cluster's topology too: CLUSTER SLOTS,
// besides aclRules; COMMAND (which commands are read-only) spares a log
// line per node.
var clusterACLRules = append(append([]string(nil), aclRules...), "+cluster|slots", "+command")

// clusterACLClient starts a cluster and returns a client of it that logs
// in as a user with only clusterACLRules.
func clusterACLClient(t *testing.T) *redis.ClusterClient {
	c := redistest.StartCluster(t)
	for _, n := range c.Nodes {
		n.AddUser(t, "heed", "s3cret-pw", clusterACLRules...)
	}
	opts := c.Options()
	opts.Username, opts.Password = "heed", "s3cret-pw"
	cc := redis.NewClusterClient(opts)
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestConformanceOnClusterAsACLUser(t *testing.T) {
	cc := clusterACLClient(t)
	s := redisstore.New(cc, redisstore.Config{Prefix: redistest.Prefix(t)})
	defer s.Close()
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check on the cluster as the heed user: %v", err)
	}
	storetest.Run(t, newStores(cc))
}

// leaseSmoke runs lease mode on c: a capped scope's share, batched turns
// and the meter, through the public API.
func leaseSmoke(t *testing.T, c redisstore.Client) {
	t.Helper()
	s := redisstore.New(c, redisstore.Config{Prefix: redistest.Prefix(t), Batch: 8, Timeout: 5 * time.Second,
		OnHealth: func(e redisstore.HealthEvent) { t.Errorf("store left Redis: %v", e.Err) }})
	defer s.Close()
	ctx := context.Background()
	a := &store.Admission{Scopes: []store.ScopeAdmit{{Key: "global"}, {Key: "tenant", Limit: 4}, {Key: "tenant GET /x", Rate: 1e9, Burst: 1e9, Meter: true}}}
	var leases []store.Lease
	for range 4 {
		d, err := s.Admit(ctx, a)
		if err != nil || d.Reason != store.Admitted {
			t.Fatalf("Admit = %+v, %v; want admitted", d, err)
		}
		leases = append(leases, d.Lease)
	}
	if d, err := s.Admit(ctx, a); err != nil || d.Reason != store.Busy {
		t.Fatalf("Admit past the cap = %+v, %v; want busy", d, err)
	}
	for _, l := range leases {
		if err := s.Release(ctx, a, l); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		d, err := s.Admit(ctx, a)
		if err != nil || d.Reason != store.Admitted {
			t.Fatalf("admission %d = %+v, %v; want admitted", i, d, err)
		}
		if err := s.Release(ctx, a, d.Lease); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLeaseModeOnClusterAsACLUser(t *testing.T) {
	leaseSmoke(t, clusterACLClient(t))
}

func TestLeaseModeAsACLUser(t *testing.T) {
	_, c := aclClient(t)
	leaseSmoke(t, c)
}
