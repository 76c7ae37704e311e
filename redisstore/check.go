package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heedhttp/heed/store"
	"github.com/redis/go-redis/v9"
)

// Check runs one script on Redis, as every decision does, and returns an
// error that says what is wrong when it cannot: a wrong address, a wrong
// password or user, a user whose ACL lacks a command or the key pattern
// of the Store's prefix. Call it at start, so that a misconfigured Redis is
// not noticed only at the first request (after which the Store would run
// on local state). Passwords are redacted from the message. Check does not
// change the Store's health. It waits up to ctx's deadline, or
// [DefaultCheckTimeout] when ctx has none, rather than the Store's timeout:
// a server that is slow to answer at start is not a wrong one.
func (s *Store) Check(ctx context.Context) error {
	bound := DefaultCheckTimeout
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl)
	}
	_, ep, err := s.updateRedis(ctx, &store.Update{}, max(bound, time.Nanosecond))
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil { // go-redis's, without "eval update"
			err = inner
		}
		return &CheckError{Addr: addrOf(s.c), Err: err, secret: secretOf(s.c)}
	}
	s.noteEpoch(ep)
	return nil
}

// DefaultCheckTimeout bounds [Store.Check] when its context has no
// deadline.
const DefaultCheckTimeout = 5 * time.Second

// CheckError is the error of [Store.Check].
type CheckError struct {
	// Addr is the address of the Redis server or cluster (without
	// credentials), when the client tells it.
	Addr string
	// Err is the error of the call, as go-redis returned it.
	Err    error
	secret string
}

func (e *CheckError) Error() string {
	msg := e.Err.Error()
	if e.secret != "" {
		msg = strings.ReplaceAll(msg, e.secret, "[redacted]")
	}
	hint := ""
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"):
		hint = " (wrong user or password)"
	case strings.Contains(msg, "NOPERM"):
		hint = " (the user's ACL lacks a command or the prefix's keys; see the package doc)"
	case errors.Is(e.Err, context.DeadlineExceeded):
		hint = " (no answer within the timeout: wrong address, or a firewall)"
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such host"):
		hint = " (wrong address)"
	}
	return fmt.Sprintf("redisstore: check redis at %s: %s%s", e.Addr, msg, hint)
}

func (e *CheckError) Unwrap() error { return e.Err }

func addrOf(c Client) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		return strings.Join(addrs, ",")
	}
	return "?"
}

func secretOf(c Client) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Password
	case *redis.ClusterClient:
		return c.Options().Password
	case *redis.Ring:
		return c.Options().Password
	}
	return ""
}
