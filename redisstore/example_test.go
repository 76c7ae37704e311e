package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/redisstore"
)

// Many workers, in many processes, calling one Jira site as one client:
// each creates its Transport with a Store on the same Redis and prefix.
func Example() {
	rdb := redis.NewClient(&redis.Options{
		Addr: "localhost:6379",
		// Lets Config.Timeout bound each call.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()

	store := redisstore.New(rdb, redisstore.Config{
		Prefix:    "heed:jira", // one prefix per fleet sharing one allowance
		Timeout:   50 * time.Millisecond,
		Instances: 8, // if Redis fails, each worker takes 1/8 of the budget
		Logger:    slog.Default(),
		OnHealth: func(e redisstore.HealthEvent) {
			slog.Info("redisstore health", "healthy", e.Healthy, "err", e.Err)
		},
	})
	client := &http.Client{Transport: &heed.Transport{Store: store, Profile: profile.Jira()}}
	_ = client // client.Get("https://example.atlassian.net/rest/api/3/myself") ...
}

// Check at start, so that a wrong address or password stops the program
// rather than leaving every process on its local fallback.
func ExampleStore_Check() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:1", // nothing listens here
		Username:              "heed",
		Password:              "s3cret-pw", // never in the message
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	store := redisstore.New(rdb, redisstore.Config{Timeout: time.Second})
	if err := store.Check(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// redisstore: check redis at 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused (wrong address)
}
