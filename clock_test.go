package heed

import (
	"net/http"
	"testing"
	"time"
)

// An IMF-fixdate is read to the second; anything else is refused.
func TestParseIMFFixdate(t *testing.T) {
	if got, ok := parseIMFFixdate("Sun, 06 Nov 1994 08:49:37 GMT"); !ok || !got.Equal(time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)) {
		t.Errorf("parseIMFFixdate = %v, %v; want 1994-11-06 08:49:37 UTC", got, ok)
	}
	for _, v := range []string{"", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 06 Nov 19x4 08:49:37 GMT"} {
		if got, ok := parseIMFFixdate(v); ok {
			t.Errorf("parseIMFFixdate(%q) = %v, want refused", v, got)
		}
	}
	if v := time.Date(2026, 12, 4, 10, 0, 5, 0, time.UTC).Format(http.TimeFormat); v != "Fri, 04 Dec 2026 10:00:05 GMT" {
		t.Fatalf("http.TimeFormat wrote %q", v)
	}
}

// A server's clock is placed from its Date fields to within the round
// trip, once responses sent at enough fractions of a second agree: a server
// 3 s behind is waited for 3 s longer, one 2 s ahead 2 s less, with the
// default allowance beyond the whole seconds, or what the clocks show where
// that is more (3.4 s behind). From one reading, a second wide, a clock in
// step is allowed the default, one seconds off the reading's far end. A reading the interval
// excludes (a clock stepped, another server behind the name) starts over.
func TestClocksPlaceAServersClock(t *testing.T) {
	const def = 200 * time.Millisecond
	const rtt = 4 * time.Millisecond
	base := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	read := func(c *clocks, host string, offset time.Duration, from, n int) {
		for i := from; i < from+n; i++ {
			sent := base.Add(time.Duration(i) * 137 * time.Millisecond) // fractions of a second all round
			made := sent.Add(rtt / 2).Add(offset)                       // on the server's clock
			c.observe(host, made.Truncate(time.Second).Format(http.TimeFormat), sent, sent.Add(rtt))
		}
	}
	for _, tc := range []struct {
		name     string
		offset   time.Duration
		readings int
		lo, hi   time.Duration // the allowance's bounds
	}{
		{"behind by 3 s", -3 * time.Second, 40, 3*time.Second + def, 3*time.Second + def},
		{"ahead by 2 s", 2 * time.Second, 40, -2*time.Second + def, -2*time.Second + def},
		{"in step", 0, 40, def, def},
		{"behind by 3 s, one reading", -3 * time.Second, 1, 3*time.Second + def, 4*time.Second + rtt + clockMargin},
		{"in step, one reading", 0, 1, def, def},
		{"ahead by 5 ms", 5 * time.Millisecond, 40, def, def},
		{"behind by 3.4 s", -3400 * time.Millisecond, 40, 3400*time.Millisecond + clockMargin, 3400*time.Millisecond + 20*time.Millisecond + clockMargin}, // readings no nearer a second than 15 ms
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c clocks
			read(&c, "h", tc.offset, 0, tc.readings)
			if got := c.allowance("h", def); got < tc.lo || got > tc.hi {
				t.Errorf("allowance %v, want within [%v, %v]", got, tc.lo, tc.hi)
			}
			// Resets move by whole seconds only where the clock is shown
			// to be that far off: never a server in step, or a few ms off.
			if by, _ := c.shift("h", def); by != tc.offset.Round(time.Second)*-1 {
				t.Errorf("resets moved by %v, want %v", by, -tc.offset.Round(time.Second))
			}
		})
	}
	var c clocks
	read(&c, "h", 0, 0, 40)
	read(&c, "h", -1500*time.Millisecond, 40, 1) // another clock: over again
	if got, hi := c.allowance("h", def), 2500*time.Millisecond+rtt+clockMargin; got < 1500*time.Millisecond || got > hi {
		t.Errorf("in step, then a reading 1.5 s behind: allowance %v, want within [1.5s, %v]", got, hi)
	}
	if got := c.allowance("unseen", def); got != def {
		t.Errorf("a host with no readings: allowance %v, want the default %v", got, def)
	}
}

// BenchmarkClockReading is what a response stating an instant adds: its
// Date read, the host's interval narrowed, and the shift taken.
func BenchmarkClockReading(b *testing.B) {
	var c clocks
	date := "Fri, 04 Dec 2026 10:00:05 GMT"
	sent := time.Date(2026, 12, 4, 10, 0, 5, 300e6, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		c.observe("https://api.github.com", date, sent, sent.Add(time.Millisecond))
		c.shift("https://api.github.com", 200*time.Millisecond)
	}
}

// A Date field is whatever the server sent: read or refused, never a
// panic, and what net/http writes reads back to the second (the weekday is
// not checked, and a leap second reads as the next minute's first).
func FuzzParseIMFFixdate(f *testing.F) {
	for _, s := range []string{"Sun, 06 Nov 1994 08:49:37 GMT", "Fri, 04 Dec 2026 10:00:05 GMT", "", "Sun, 06 Nov 1994 08:49:37 GMX",
		"Xxx, 99 Abc 9999 99:99:99 GMT", "Sun, 06 Nov 1994 08:49:60 GMT", "Mon, 29 Feb 2027 00:00:00 GMT"} {
		f.Add(s)
	}
	f.Add(time.Unix(1<<40, 0).UTC().Format(http.TimeFormat))
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := parseIMFFixdate(v)
		if !ok || v[23:25] == "60" || got.Day() != int(v[5]-'0')*10+int(v[6]-'0') {
			return // refused; a leap second; a day past its month's end, moved on
		}
		if again := got.Format(http.TimeFormat); again[5:] != v[5:] {
			t.Errorf("parseIMFFixdate(%q) = %v, written back as %q", v, got, again)
		}
	})
}

// resetUnits reads milliseconds only from a delay that falls a thousand a
// second, measured from the window's earliest answer, and seconds back
// from one that falls a second a second.
func TestResetUnits(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type read struct {
		after time.Duration // since t0
		d     time.Duration // the delay read as seconds
		want  bool
	}
	for _, c := range []struct {
		name  string
		reads []read
	}{
		{"milliseconds, 20 ms apart", []read{
			{0, 60000 * time.Second, false},
			{20 * time.Millisecond, 59980 * time.Second, false},
			{80 * time.Millisecond, 59920 * time.Second, false},
			{100 * time.Millisecond, 59900 * time.Second, true},
			{time.Second, 59000 * time.Second, true},
		}},
		{"longer than a day: milliseconds until answers show seconds", []read{
			{0, 600000 * time.Second, true},
			{600 * time.Second, 599400 * time.Second, false},
			{601 * time.Second, 599399 * time.Second, false},
		}},
		{"longer than a day, in milliseconds", []read{
			{0, 600000 * time.Second, true},
			{time.Second, 599000 * time.Second, true},
			{10 * time.Minute, 3599000 * time.Second, true},
		}},
		{"seconds", []read{
			{0, 60 * time.Second, false},
			{10 * time.Millisecond, 60 * time.Second, false},
			{time.Second, 59 * time.Second, false},
			{3 * time.Second, 57 * time.Second, false},
			{60 * time.Second, 1 * time.Second, false},
		}},
		{"a window that turns is no fall", []read{
			{0, 2 * time.Second, false},
			{2 * time.Second, 600 * time.Second, false},
			{2100 * time.Millisecond, 600 * time.Second, false},
		}},
		{"seconds again after milliseconds", []read{
			{0, 60000 * time.Second, false},
			{200 * time.Millisecond, 59800 * time.Second, true},
			{2200 * time.Millisecond, 59798 * time.Second, false},
		}},
		{"a fall of 100 in a second is not a thousand a second", []read{
			{0, 5000 * time.Second, false},
			{2 * time.Second, 4800 * time.Second, false},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var u resetUnits
			for i, r := range c.reads {
				if got := u.millis("k", r.d, t0.Add(r.after)); got != r.want {
					t.Errorf("read %d (%v at +%v): millis %v, want %v", i, r.d, r.after, got, r.want)
				}
			}
		})
	}
}
