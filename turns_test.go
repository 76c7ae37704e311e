package heed

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedhttp/heed/heedtest"
	"github.com/heedhttp/heed/memstore"
	"github.com/heedhttp/heed/profile"
	"github.com/heedhttp/heed/store"
)

type noJitter struct{}

func (noJitter) Uint64() uint64 { return 0 }

// A request whose booked pacing turn falls in a block this Transport set
// for a window whose count ran out (learn.Block.Turn) keeps its turn: it
// goes when the block ends, and the next one keeps its own. After any
// other block it takes a new turn, behind those booked meanwhile, and the
// turn it had goes unused.
func TestABlockUntilTheTurnKeepsABookedTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn bool
		want []time.Duration
	}{
		{"a window's turn", true, []time.Duration{10 * time.Millisecond, 1100 * time.Millisecond, 2010 * time.Millisecond}},
		{"another block", false, []time.Duration{10 * time.Millisecond, 2010 * time.Millisecond, 3010 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &heedtest.Script{Responses: []heedtest.Response{{Status: 200, Body: "{}"}}, Repeat: true}
				st := memstore.New()
				tr := &Transport{Base: s, Store: st, Profile: &profile.Profile{Rate: func(string) float64 { return 1 }},
					MaxWait: time.Minute, Rand: rand.New(noJitter{})}
				start := time.Now()
				var wg sync.WaitGroup
				for i := range 3 {
					time.Sleep(10 * time.Millisecond)
					wg.Go(func() {
						req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://acme.atlassian.net/rest/api/3/search?i=%d", i), nil)
						resp, err := tr.RoundTrip(req)
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					})
				}
				time.Sleep(900*time.Millisecond - 30*time.Millisecond)
				// From 0.9s to 1.1s nothing may go: the second request's
				// turn, at 1.01s, falls in it.
				if err := st.Update(context.Background(), &store.Update{Blocks: []store.Block{{Key: "global", For: 200 * time.Millisecond}}}); err != nil {
					t.Fatal(err)
				}
				if tc.turn {
					tr.turns.note("global", time.Now().Add(200*time.Millisecond), time.Now())
				}
				wg.Wait()
				sent := s.Sent()
				if len(sent) != len(tc.want) {
					t.Fatalf("%d sent, want %d", len(sent), len(tc.want))
				}
				for i, r := range sent {
					if got := r.At.Sub(start); got != tc.want[i] {
						t.Errorf("send %d went at %v, want %v", i, got, tc.want[i])
					}
				}
			})
		})
	}
}

// turnBlocks holds at most maxTurnBlocks blocks, dropping those that
// ended to make room, and never explains a block that outlasts the one
// noted.
func TestTurnBlocksStayBounded(t *testing.T) {
	var b turnBlocks
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 * maxTurnBlocks {
		b.note(fmt.Sprint("k", i), now.Add(time.Second), now)
	}
	if len(b.m) != maxTurnBlocks {
		t.Errorf("%d held, want %d", len(b.m), maxTurnBlocks)
	}
	later := now.Add(2 * time.Second)
	b.note("fresh", later.Add(time.Second), later) // the ended ones make room
	if len(b.m) != 1 || !b.explains("fresh", later.Add(time.Second)) {
		t.Errorf("after the others ended: %d held, fresh explained %v; want 1 and true", len(b.m), b.explains("fresh", later.Add(time.Second)))
	}
	if b.explains("fresh", later.Add(time.Second+turnSlack+time.Millisecond)) {
		t.Errorf("a block past the noted one's end was explained")
	}
}
