package bench

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
)

// TestThirdPartyFiberLimiter runs heed against Fiber's limiter middleware
// (gofiber/fiber v2, on fasthttp), configured per route as its
// documentation shows: fixed windows that each client's first request
// opens, or its sliding window (the last window's count, weighed by how
// much of it is left, and this one's). Its clock is a timestamp in whole
// seconds that a goroutine moves once a second, so windows start and end
// on it, up to a second from the real time; X-RateLimit-Reset is the whole
// seconds left on that clock and Retry-After the same; and a refused
// request counts too, so a client that keeps sending stays refused. Real
// time only: fasthttp serves no http.Handler to run in a bubble.
func TestThirdPartyFiberLimiter(t *testing.T) {
	var got tally
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	key := func(c *fiber.Ctx) string { return c.Get("X-Client") }
	routes := tpFilter([]tpRoute{
		{name: "/fb1/ fixed 10/1s", path: "/fb1/", workers: 2},
		{name: "/fb2/ fixed 30/10s", path: "/fb2/", workers: 2},
		{name: "/fb3/ sliding 20/2s", path: "/fb3/", workers: 2},
		{name: "/fb4/ sliding 10/1s", path: "/fb4/", workers: 2},
	})
	limits := map[string]limiter.Config{
		"/fb1/": {Max: 10, Expiration: time.Second, KeyGenerator: key},
		"/fb2/": {Max: 30, Expiration: 10 * time.Second, KeyGenerator: key},
		"/fb3/": {Max: 20, Expiration: 2 * time.Second, KeyGenerator: key, LimiterMiddleware: limiter.SlidingWindow{}},
		"/fb4/": {Max: 10, Expiration: time.Second, KeyGenerator: key, LimiterMiddleware: limiter.SlidingWindow{}},
	}
	for _, r := range routes {
		path := r.path
		app.Get(path+"*", limiter.New(limits[path]), func(c *fiber.Ctx) error {
			got.add(c.Get("X-Client"), path)
			return c.SendString("ok")
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	defer func() {
		// The clients' idle connections close only after the test
		// (runTP's cleanup): wait for them no longer than a second.
		app.ShutdownWithTimeout(time.Second)
		<-served
	}()
	base := "http://" + ln.Addr().String()
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := http.Get(base + "/_ready")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fiber not serving after 5s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wires := runTP(t, base, routes)
	got.count(wires)
	name := "gofiber/fiber " + moduleVersion("github.com/gofiber/fiber/v2") + " limiter"
	table := tpReport(t, name, *tpFor, routes, wires, true)
	tpWrite(t, "gofiber/fiber limiter", name+": fixed windows each client's first request opens, and its sliding window, on a clock of whole seconds a goroutine moves once a second; X-RateLimit-* and, on a refusal, Retry-After, both in whole seconds; refused requests count; fasthttp on loopback, keyed per client. *accepted*: the handler's own count.", table)
}
