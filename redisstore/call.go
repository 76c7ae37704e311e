package redisstore

import (
	"cmp"
	"context"
	"math"
	"strconv"
	"time"

	"github.com/heedhttp/heed/store"
	"github.com/redis/go-redis/v9"
)

// nonNeg returns f when it is a positive finite number, its largest finite
// neighbour for +Inf, and 0 otherwise (negative or NaN: the script treats
// both as zero, as the Go reference does).
func nonNeg(f float64) float64 {
	if f > 0 {
		return finite(f)
	}
	return 0
}

// finite maps NaN to 0 and infinities to the largest finite numbers, which
// the script's number parser handles alike everywhere.
func finite(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f > math.MaxFloat64:
		return math.MaxFloat64
	case f < -math.MaxFloat64:
		return -math.MaxFloat64
	}
	return f
}

// call holds one script call's arguments: the keys, packed into one string,
// and the other arguments, packed into one space-separated bulk string.
// Calls are pooled, so that the hot path reuses their buffers.
type call struct {
	bound   time.Duration // the call's timeout; zero means the Store's
	args    []byte
	keyBuf  []byte
	keyEnds []int
	keys    []string
	ops     []pendingOp // the queued releases and updates the call carries
}

func (c *call) reset() {
	c.args, c.keyBuf, c.keyEnds, c.keys = c.args[:0], c.keyBuf[:0], c.keyEnds[:0], c.keys[:0]
	clear(c.ops)
	c.ops = c.ops[:0]
	c.bound = 0
}

func (c *call) sep() {
	if len(c.args) > 0 {
		c.args = append(c.args, ' ')
	}
}

func (c *call) time(now func() time.Time) {
	if now == nil {
		c.args = append(c.args, "- 0"...)
		return
	}
	t := now()
	sec, ns := t.Unix(), int64(t.Nanosecond())
	if sec < 0 { // before 1970: outside the script's stored form
		sec, ns = 0, 0
	}
	c.int(sec)
	c.int(ns)
}

func (c *call) int(v int64)   { c.sep(); c.args = strconv.AppendInt(c.args, v, 10) }
func (c *call) uint(v uint64) { c.sep(); c.args = strconv.AppendUint(c.args, v, 10) }
func (c *call) dur(d time.Duration) {
	c.int(int64(max(d, 0)))
}
func (c *call) str(v string)    { c.sep(); c.args = append(c.args, v...) }
func (c *call) float(f float64) { c.sep(); c.args = strconv.AppendFloat(c.args, f, 'g', -1, 64) }
func (c *call) bool(b bool) {
	if b {
		c.int(1)
	} else {
		c.int(0)
	}
}

// pending appends the pending section (see pending.lua): ops, the
// releases and updates a call carries, the oldest first, then own, the
// call's own update, unless nil. It returns how many rates the section
// sets, which the script reports as set.
func (c *call) pending(s *Store, ops []pendingOp, own *store.Update) (rates int) {
	n := len(ops)
	for i := range ops {
		if u := ops[i].upd; u != nil {
			rates += len(u.Rates)
		}
	}
	if own != nil {
		n++
		rates += len(own.Rates)
	}
	c.int(int64(n))
	c.int(int64(rates))
	if n == 0 {
		return 0
	}
	now := s.clock()
	for i := range ops {
		op := &ops[i]
		if op.upd != nil {
			c.update(s, op.upd, now.Sub(op.at), op.at)
			continue
		}
		c.uint(uint64(op.lease))
		if op.at.IsZero() {
			c.int(0)
		} else {
			c.dur(now.Sub(op.at))
		}
		c.int(int64(len(op.scopes)))
		for _, sc := range op.scopes {
			c.dur(sc.gap)
			if sc.gap > 0 {
				c.key(s.tag, ":s:", sc.key)
			}
			c.key(s.tag, ":l:", sc.key)
		}
	}
	if own != nil {
		c.update(s, own, 0, now)
	}
	return rates
}

// update appends an update of the pending section, made age ago, at on
// the Store's clock.
func (c *call) update(s *Store, u *store.Update, age time.Duration, at time.Time) {
	nb := 0
	for _, b := range u.Blocks {
		if b.For > 0 {
			nb++
		}
	}
	c.str("u")
	c.dur(age)
	c.int(int64(nb))
	c.int(int64(len(u.Rates)))
	c.int(int64(len(u.Charges)))
	c.int(int64(s.maxScopes))
	c.key(s.epochKey, "", "")
	c.key(s.tag, ":i", "")
	for _, b := range u.Blocks {
		if b.For > 0 {
			c.key(s.tag, ":s:", b.Key)
			if b.Bound {
				c.int(-int64(b.For)) // a bound comes negated
			} else {
				c.dur(b.For)
			}
		}
	}
	for i := range u.Rates {
		r := &u.Rates[i]
		c.key(s.tag, ":s:", r.Key)
		c.float(finite(r.Rate))
		c.float(finite(r.Factor))
		c.float(finite(r.Add))
		c.float(finite(r.Default))
		c.float(finite(r.Min))
		c.float(finite(r.Max))
		c.float(finite(r.Burst))
		c.dur(orDefault(r.TTL, s.rateTTL))
		if r.HasFree {
			// What is owed: the burst less what is free, as memstore
			// computes it.
			b := max(finite(r.Burst), 1)
			c.float(b - min(max(finite(r.Free), -b), b))
		} else {
			c.float(-1)
		}
		if r.Factor > 0 && r.Factor < 1 && !r.Event.IsZero() {
			c.dur(at.Sub(r.Event)) // how long before the update the event began
		} else {
			c.int(-1)
		}
		if r.HasFree && r.Until > 0 {
			c.dur(r.Until)
		} else {
			c.int(0)
		}
		c.float(nonNeg(r.Ceiling))
	}
	for _, ch := range u.Charges {
		c.key(s.tag, ":s:", ch.Key)
		c.float(finite(ch.Cost))
	}
}

func (c *call) key(tag, kind, key string) {
	c.keyBuf = append(c.keyBuf, tag...)
	c.keyBuf = append(c.keyBuf, kind...)
	c.keyBuf = append(c.keyBuf, key...)
	c.keyEnds = append(c.keyEnds, len(c.keyBuf))
}

// run runs script with the call's keys and arguments, bounded by the
// Store's timeout.
func (c *call) run(ctx context.Context, s *Store, script *redis.Script) (any, error) {
	all := string(c.keyBuf) // one allocation for every key
	start := 0
	for _, end := range c.keyEnds {
		c.keys = append(c.keys, all[start:end])
		start = end
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.bound, s.callTimeout()))
	defer cancel()
	began := time.Now()
	res, err := script.Run(ctx, s.c, c.keys, c.args).Result()
	if err == nil {
		s.lat.observe(time.Since(began))
	}
	return res, err
}
