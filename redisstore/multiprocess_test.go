package redisstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedhttp/heed"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/redisstore"
	"github.com/heedhttp/heed/redisstore/redistest"
	"github.com/heedhttp/heed/sim"
)

// The worker side of TestProcessesShareOneAllowance: when the test binary
// is started with HEED_WORKER set, this test is the worker process.
func TestWorkerProcess(t *testing.T) {
	id := os.Getenv("HEED_WORKER")
	if id == "" {
		t.Skip("runs only as a worker process of TestProcessesShareOneAllowance")
	}
	if err := runWorker(id); err != nil {
		t.Fatal(err)
	}
}

// runWorker sends reads and unique comment writes to the sim for the
// configured time, through a Transport whose store is Redis (or memory, for
// the control run), from several goroutines.
func runWorker(id string) error {
	simURL, runFor := os.Getenv("HEED_SIM"), os.Getenv("HEED_FOR")
	d, err := time.ParseDuration(runFor)
	if err != nil {
		return err
	}
	tr := &heed.Transport{Base: &http.Transport{MaxIdleConnsPerHost: 16}, Profile: profile.Jira(), MaxWait: 10 * time.Second}
	if url := os.Getenv("HEED_REDIS"); url != "" {
		rdb, err := newClient(url)
		if err != nil {
			return err
		}
		defer rdb.Close()
		cfg := redisstore.Config{Prefix: os.Getenv("HEED_PREFIX"), Instances: 4}
		if v := os.Getenv("HEED_TIMEOUT"); v != "" {
			if cfg.Timeout, err = time.ParseDuration(v); err != nil {
				return err
			}
		}
		if v := os.Getenv("HEED_BATCH"); v != "" {
			if cfg.Batch, err = strconv.Atoi(v); err != nil {
				return err
			}
		}
		if os.Getenv("HEED_STRICT") != "" { // as before hysteresis: for comparisons
			cfg.FailThreshold, cfg.RecoverThreshold, cfg.MaxTimeout = 1, 1, time.Nanosecond
		}
		rs := redisstore.New(rdb, cfg)
		if err := rs.Check(context.Background()); err != nil {
			return err
		}
		defer func() {
			rs.Close()
			st := rs.Stats()
			fmt.Printf("HEED_STATS %d %d %v %v\n", st.Fallbacks, st.Recoveries, st.Timeout, st.Latency)
		}()
		tr.Store = rs
	}
	defer tr.Base.(*http.Transport).CloseIdleConnections()
	client := &http.Client{Transport: tr}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				method, path, body := http.MethodGet, fmt.Sprintf("/rest/api/3/issue/PROJ-%d", 1000+i), ""
				if i%5 == 4 {
					method, path = http.MethodPost, fmt.Sprintf("/rest/api/3/issue/PROJ-%d/comment", w+1)
					body = fmt.Sprintf(`{"body":"worker %s.%d comment %d"}`, id, w, i)
				}
				req, _ := http.NewRequest(method, simURL+path, strings.NewReader(body))
				req.Header.Set("X-Sim-Client", "worker-"+id)
				resp, err := client.Do(req)
				if err != nil {
					continue // a wait past MaxWait: go on with the next
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return nil
}

// newClient returns a client of the Redis that url names: a cluster when
// it has addr parameters (redis.ParseClusterURL), else one server.
func newClient(url string) (interface {
	redisstore.Client
	Close() error
}, error) {
	if strings.Contains(url, "addr=") {
		opt, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, err
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

// Several OS processes sharing one Redis behave as one client of a shared
// allowance (seed 001's last test, R12, R25): from the simulator's ground
// truth, the aggregate rate stays within the limit, 429s are rare, nothing
// is sent into a block the server mandated, and no write is duplicated.
// A control run of the same processes with private memory stores shows
// that the test can tell the difference.
func TestProcessesShareOneAllowance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts OS processes and runs in real time")
	}
	const (
		procs   = 4
		runFor  = 6 * time.Second
		perSec  = 10.0 // the burst limit per endpoint: Jira's 100/s scaled by 0.1
		scaleBy = 0.1
	)
	rs := redistest.Start(t)
	batch := "" // the workers' Config.Batch: lease mode when set

	// run runs the worker processes for runFor; timeout "" means the
	// default, adaptive one. It returns the sim's ground truth and the
	// number of fallbacks each process reported.
	run := func(t *testing.T, redisURL, timeout string, runFor time.Duration) (sim.Truth, []int) {
		// Jira's burst and per-issue limits, scaled down; its hourly quotas
		// would only slow every run to a crawl.
		var limits []sim.Limit
		for _, l := range sim.DefaultLimits(sim.Jira) {
			if l.Name == sim.JiraBurst || l.Name == sim.JiraPerIssue || l.Name == sim.JiraPerIssueLong {
				limits = append(limits, l)
			}
		}
		// Requests already on their way when a block is stored are not
		// sent into it; on a loaded CI machine a process can be descheduled
		// between admission and send, hence a grace wider than the default.
		srv := sim.New(sim.Config{Provider: sim.Jira, Limits: limits, Scale: scaleBy, Grace: 250 * time.Millisecond})
		hs := httptest.NewServer(srv)
		defer hs.Close()
		prefix := redistest.Prefix(t)
		if redisURL != "" {
			// One request per endpoint and issue through the shared store
			// teaches it the limits, so that the count below is of
			// processes that share what is known, not of first contact.
			warmUp(t, redisURL, prefix, hs.URL)
			srv.Reset()
		}
		var wg sync.WaitGroup
		fallbacks := make([]int, procs)
		for p := range procs {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(),
					"HEED_WORKER="+strconv.Itoa(p), "HEED_SIM="+hs.URL, "HEED_FOR="+runFor.String(),
					"HEED_REDIS="+redisURL, "HEED_PREFIX="+prefix, "HEED_TIMEOUT="+timeout, "HEED_BATCH="+batch)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("worker %d: %v\n%s", p, err, out)
				}
				for line := range strings.Lines(string(out)) {
					if rest, ok := strings.CutPrefix(line, "HEED_STATS "); ok {
						var rec int
						var to, p99 string
						fmt.Sscan(rest, &fallbacks[p], &rec, &to, &p99)
						t.Logf("worker %d: %d fallbacks, %d returns, timeout %s, p99 latency %s", p, fallbacks[p], rec, to, p99)
					}
				}
			})
		}
		wg.Wait()
		return srv.Truth(), fallbacks
	}

	t.Run("shared redis", func(t *testing.T) {
		truth, _ := run(t, rs.URL, "1s", runFor)
		checkShared(t, truth, 0.02)
	})
	t.Run("shared redis, lease mode", func(t *testing.T) {
		batch = "64"
		defer func() { batch = "" }()
		truth, _ := run(t, rs.URL, "1s", runFor)
		checkShared(t, truth, 0.02)
	})
	t.Run("redis cluster", func(t *testing.T) {
		c := redistest.StartCluster(t)
		truth, _ := run(t, c.URL, "1s", runFor)
		checkShared(t, truth, 0.02)
	})
	t.Run("ACL user", func(t *testing.T) {
		if rs.PID() == 0 {
			t.Skip("REDIS_URL names a shared server; the ACL test creates a user on its own")
		}
		truth, _ := run(t, rs.AddUser(t, "heed", "s3cret-pw", aclRules...), "1s", runFor)
		checkShared(t, truth, 0.02)
	})
	for _, pause := range []time.Duration{300 * time.Millisecond, 3 * time.Second} {
		t.Run("redis paused "+pause.String(), func(t *testing.T) {
			if rs.PID() == 0 {
				t.Skip("REDIS_URL names a shared server; this test pauses its own")
			}
			// SIGSTOP two seconds into the run: the processes go on with
			// their divided local budgets and come back after SIGCONT.
			timer := time.AfterFunc(2*time.Second, func() {
				rs.Pause()
				time.Sleep(pause)
				rs.Resume()
			})
			defer timer.Stop()
			truth, _ := run(t, rs.URL, "", runFor)
			checkShared(t, truth, 0.02)
		})
	}
	t.Run("loaded host", func(t *testing.T) {
		// Busy loops on every core for the run: redis-server, the sim and
		// the workers all wait for CPU, and Redis's latency is many times
		// its quiet value. With the default timeout, adapted to it, no
		// process flaps between Redis and its fallback.
		stop := spin(t, 2*runtime.NumCPU())
		truth, fallbacks := run(t, rs.URL, "", runFor)
		stop()
		checkShared(t, truth, 0.01)
		for p, n := range fallbacks {
			if n > 1 {
				t.Errorf("worker %d fell back %d times on a loaded host, want at most once (no flapping)", p, n)
			}
		}
	})
	t.Run("control: private memory stores", func(t *testing.T) {
		truth, _ := run(t, "", "", runFor)
		report(t, truth)
		if share := float64(truth.Rejected) / float64(truth.Requests); share < 0.05 {
			t.Errorf("only %.1f%% answered 429 without a shared store; the test cannot tell sharing apart", 100*share)
		}
	})
}

// checkShared checks the ground truth of a run on a shared store: at most
// maxShare of requests answered 429, nothing sent into a block, no
// duplicate write, and no more offered than the burst limit allows.
func checkShared(t *testing.T, truth sim.Truth, maxShare float64) {
	t.Helper()
	{
		report(t, truth)
		if truth.Requests < 40 {
			t.Fatalf("only %d requests reached the sim", truth.Requests)
		}
		if share := float64(truth.Rejected) / float64(truth.Requests); share > maxShare {
			t.Errorf("%.1f%% of requests were answered 429, want at most %.0f%%", 100*share, 100*maxShare)
		}
		if truth.SentWhileBlocked != 0 || truth.Duplicates != 0 {
			t.Errorf("%d sent while blocked and %d duplicate writes, want none", truth.SentWhileBlocked, truth.Duplicates)
		}
		elapsed := truth.Now.Sub(truth.Start).Seconds()
		for _, sc := range truth.Scopes {
			if sc.Limit != sim.JiraBurst {
				continue
			}
			// A token bucket may pass its whole burst once, then its rate.
			if offered, most := float64(sc.Requests), sc.Quota+sc.Quota/sc.Window.Seconds()*elapsed*1.05; offered > most {
				t.Errorf("%s: %0.f requests offered in %.1fs, over the %.0f the limit allows", sc.Key, offered, elapsed, most)
			}
		}
	}
}

// warmUp sends one read and one comment per worker issue through a
// Transport on the shared store.
func warmUp(t *testing.T, redisURL, prefix, simURL string) {
	t.Helper()
	rdb, err := newClient(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	rs := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Timeout: time.Second})
	defer rs.Close()
	client := &http.Client{Transport: &heed.Transport{Store: rs, Profile: profile.Jira()}}
	paths := []string{"/rest/api/3/issue/PROJ-999"}
	for w := range 4 {
		paths = append(paths, fmt.Sprintf("/rest/api/3/issue/PROJ-%d/comment", w+1))
	}
	for i, path := range paths {
		method, body := http.MethodGet, ""
		if i > 0 {
			method, body = http.MethodPost, fmt.Sprintf(`{"body":"warm-up %d"}`, i)
		}
		req, _ := http.NewRequest(method, simURL+path, strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// spin starts n busy-loop processes and returns a func that kills them;
// they are killed when the test ends in any case.
func spin(t *testing.T, n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func report(t *testing.T, truth sim.Truth) {
	t.Helper()
	t.Logf("requests %d, accepted %d, rejected %d %v, sent while blocked %d, duplicates %d",
		truth.Requests, truth.Accepted, truth.Rejected, truth.Reasons, truth.SentWhileBlocked, truth.Duplicates)
	for _, c := range truth.Clients {
		t.Logf("  %s: %d requests, %d rejected", c.Name, c.Requests, c.Rejected)
	}
}
