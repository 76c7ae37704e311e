package redistest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/heedhttp/heed/redisstore/redistest"
)

func TestKillAndRestart(t *testing.T) {
	if os.Getenv("REDIS_URL") != "" {
		t.Skip("REDIS_URL names a shared server")
	}
	srv := redistest.Start(t)
	c := srv.NewClient(t)
	ctx := context.Background()
	key := redistest.Prefix(t) + ":k"
	if err := c.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET on a started server: %v", err)
	}
	srv.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING after Kill = nil error, want the server gone")
	}
	srv.Restart()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if n, _ := c.Exists(ctx, key).Result(); n != 0 {
		t.Errorf("key survived a restart without persistence")
	}

	srv.Pause()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Errorf("PING to a paused server = nil error, want a timeout")
	}
	srv.Resume()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after Resume: %v", err)
	}
}

func TestPrefixIsUnique(t *testing.T) {
	if a, b := redistest.Prefix(t), redistest.Prefix(t); a == b {
		t.Errorf("Prefix twice = %q and %q, want two prefixes", a, b)
	}
}
