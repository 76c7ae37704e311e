package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three masters and no replicas for one
// test, each a redis-server in cluster mode on a free loopback port.
type Cluster struct {
	// Addrs are the masters' host:port.
	Addrs []string
	// URL names the cluster for [redis.ParseClusterURL]:
	// redis://first?addr=second&addr=third.
	URL string
	// Nodes are the masters.
	Nodes []*Server
}

// StartCluster starts three redis-servers in cluster mode and joins them
// with redis-cli --cluster create. It skips the test when redis-cli is not
// installed, unless HEED_REQUIRE_CLUSTER is set (as CI does), when it
// fails it.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("HEED_REQUIRE_CLUSTER") != "" {
			t.Fatalf("redistest: redis-cli not found and HEED_REQUIRE_CLUSTER is set: %v", err)
		}
		t.Skip("redistest: redis-cli not found (install redis-tools); skipping the Redis Cluster test")
	}
	c := &Cluster{}
	for range 3 {
		srv := start(t, []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
		}, func(port int) bool { // the cluster bus listens on port+10000
			if port+10000 > 65535 {
				return false
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
			if err != nil {
				return false
			}
			l.Close()
			return true
		})
		c.Nodes = append(c.Nodes, srv)
		c.Addrs = append(c.Addrs, srv.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = "redis://" + c.Addrs[0] + "?addr=" + c.Addrs[1] + "&addr=" + c.Addrs[2]
	deadline := time.Now().Add(startTimeout)
	for _, addr := range c.Addrs {
		for {
			err := clusterOK(addr)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster not ready within %v: %v", startTimeout, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

func clusterOK(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.ClusterInfo(context.Background()).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("%s: cluster_state not ok", addr)
	}
	return nil
}

// Options returns options for a client of the cluster, with
// ContextTimeoutEnabled set. Each call returns a new value.
func (c *Cluster) Options() *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: append([]string(nil), c.Addrs...), ContextTimeoutEnabled: true}
}

// NewClient returns a cluster client, closed when the test ends.
func (c *Cluster) NewClient(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(c.Options())
	t.Cleanup(func() { cc.Close() })
	return cc
}

// AddUser creates an ACL user on the server with the password and the
// rules given (as for ACL SETUSER, after "on" and the password), and
// returns a URL of the server that logs in as that user. The default user
// keeps its rights, so that the test itself can still inspect the server.
func (s *Server) AddUser(t testing.TB, user, password string, rules ...string) string {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redistest: ACL SETUSER %s: %v", user, err)
	}
	return "redis://" + user + ":" + password + "@" + s.Addr + "/0"
}
