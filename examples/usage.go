package examples

import (
	"context"
	"crypto/tls"
	"log"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/redisstore"
)

// The README's uses of heed outside an SDK, here so that they compile
// (TestREADME holds the README to them).

// GetJiraIssue is the README's first use: a Jira client on heed.
func GetJiraIssue() error {
	client := &http.Client{Transport: &heed.Transport{Profile: profile.Jira()}}
	resp, err := client.Get("https://your-domain.atlassian.net/rest/api/3/issue/PROJ-1")
	if err != nil {
		return err // a *heed.LimitedError when heed refused to send (fail-fast, or a wait past MaxWait)
	}
	defer resp.Body.Close()
	if err := heed.CheckResponse(resp); err != nil {
		return err // a 429 is an error, never data: errors.Is(err, heed.ErrLimited)
	}
	return nil
}

// WithRedis is the README's Transport whose state every process shares
// through Redis; it gives the client to use.
func WithRedis(ctx context.Context, use func(*http.Client) error) error {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		Username:              "heed",
		Password:              os.Getenv("HEED_REDIS_PASSWORD"),
		ContextTimeoutEnabled: true, // so that redisstore's Timeout bounds every call
	})
	store := redisstore.New(rdb, redisstore.Config{
		Prefix:    "myapp", // one Redis Cluster hash tag: {myapp}
		Instances: 4,       // if Redis is down, each process takes a quarter of the budget
	})
	defer store.Close()
	if err := store.Check(ctx); err != nil {
		log.Fatal(err) // "redisstore: check redis at 127.0.0.1:6379: WRONGPASS ... (wrong user or password)"
	}
	client := &http.Client{Transport: &heed.Transport{Store: store, Profile: profile.Jira()}}
	return use(client)
}

// RedisOverTLS is the README's go-redis client for a Redis served over TLS.
func RedisOverTLS() *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "redis.internal:6380",
		Username:              "heed",
		Password:              os.Getenv("HEED_REDIS_PASSWORD"),
		TLSConfig:             &tls.Config{MinVersion: tls.VersionTLS12, ServerName: "redis.internal"},
		ContextTimeoutEnabled: true,
	})
	return rdb
}
