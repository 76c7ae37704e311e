package workload

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// palette colours the clients' lines, in order.
var palette = [...]string{"#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#1f77b4", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// Chart writes an SVG chart of results, with title as its caption, in two
// panels sharing the time axis.
//
// The upper panel draws each client's sent rate (requests the server
// received per second, accepted or not, averaged over a second) against
// the allowed steady rate. Its scale follows the allowed rate, up to about
// twice it, so that a client pacing to the limit is seen against it; it
// grows only to fit a client that the server never refused. A client
// sending faster runs along the top, and the legend gives its peak.
//
// The lower panel has one lane per client: bars up for the 429s it got,
// bars down for the requests it sent while a wait the server had mandated
// was running, per interval, their heights on a logarithmic scale shared
// by all lanes so that a single 429 shows; the lane's totals are at its
// right. An empty lane is a client that neither got a 429 nor sent into a
// block.
//
// Chart uses the standard library only; the SVG is self-contained.
func Chart(w io.Writer, title string, results []Result) error {
	const (
		width            = 1000
		left, right, top = 96, 210, 86
		plotW            = width - left - right
		plotH            = 300
		gap              = 56 // between the panels, for the lower one's caption
		laneH            = 36
		barH             = laneH/2 - 3
		bottomMargin     = 48
		smoothing        = time.Second
	)
	lanesTop := top + plotH + gap
	height := lanesTop + laneH*max(1, len(results)) + bottomMargin

	// Bin the series so that no chart has more than about 150 bins.
	var end, step time.Duration
	allowed := 0.0
	for _, r := range results {
		allowed = max(allowed, r.Allowed)
		if r.Series.Step > 0 {
			step = max(step, r.Series.Step)
			end = max(end, r.Offset+time.Duration(len(r.Series.Accepted))*r.Series.Step)
		}
		end = max(end, r.Elapsed)
	}
	if step == 0 {
		step = 100 * time.Millisecond
	}
	end = max(end, step)
	bin := step * time.Duration(max(1, int(math.Ceil(float64(end)/float64(step)/150))))
	nbins := int(math.Ceil(float64(end) / float64(bin)))
	// The moving average takes window bins, centred.
	window := max(1, int(math.Round(float64(smoothing)/float64(bin))))

	type series struct {
		rate            []float64 // sent per second, smoothed, up to the client's last bin
		rejected, block []int     // per bin
		peak            float64
	}
	all := make([]series, len(results))
	cmax := 0
	for i, r := range results {
		s := r.Series
		sent := make([]int, nbins)
		rej := make([]int, nbins)
		blk := make([]int, nbins)
		binOf := func(at time.Duration) int {
			return min(nbins-1, max(0, int(at/bin)))
		}
		for j := range s.Accepted {
			n := s.Accepted[j] + s.Rejected[j]
			if j < len(s.Faults) {
				n += s.Faults[j]
			}
			k := binOf(r.Offset + time.Duration(j)*s.Step)
			sent[k] += n
			rej[k] += s.Rejected[j]
		}
		bstep := s.Step
		if bstep <= 0 {
			bstep = step
		}
		for j, n := range r.Blocked {
			blk[binOf(time.Duration(j)*bstep)] += n
		}
		// The client's line ends with its last bin.
		last := 0
		if len(s.Accepted) > 0 {
			last = min(nbins, int(math.Ceil(float64(r.Offset+time.Duration(len(s.Accepted))*s.Step)/float64(bin))))
		}
		rate := make([]float64, last)
		for k := range rate {
			lo, hi := max(0, k-window/2), min(last, k-window/2+window)
			sum := 0
			for _, n := range sent[lo:hi] {
				sum += n
			}
			rate[k] = float64(sum) / (float64(hi-lo) * bin.Seconds())
		}
		se := series{rate: rate, rejected: rej, block: blk}
		for k := range nbins {
			cmax = max(cmax, rej[k], blk[k])
		}
		for _, v := range rate {
			se.peak = max(se.peak, v)
		}
		all[i] = se
	}
	ymax := 0.0
	if allowed > 0 {
		// A client the server never refused stayed within the limits, its
		// bursts included: it fits.
		ymax = 2 * allowed
		for i, r := range results {
			if r.Rejected == 0 {
				ymax = max(ymax, all[i].peak)
			}
		}
		ymax = niceCeil(ymax, true)
	} else {
		for _, s := range all {
			ymax = max(ymax, s.peak)
		}
		ymax = niceCeil(max(ymax, 1), true)
	}
	x := func(d float64) float64 { return left + d/end.Seconds()*plotW }
	y := func(v float64) float64 { return top + plotH - min(v, ymax)/ymax*plotH }
	barScale := func(n int) float64 {
		if n <= 0 || cmax <= 0 {
			return 0
		}
		return max(0.12, math.Log1p(float64(n))/math.Log1p(float64(cmax))) * barH
	}

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="26" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	if allowed > 0 {
		p(`<text x="%d" y="46" fill="#444">requests each client sent per second (1s moving average), against the workload's allowed steady rate (dashed)</text>`+"\n", left)
		p(`<text x="%d" y="62" fill="#444">The busiest scope sets that rate: bursts, and scopes with room to spare, may exceed it for a while within the limits.</text>`+"\n", left)
	} else {
		p(`<text x="%d" y="46" fill="#444">requests each client sent per second (1s moving average)</text>`+"\n", left)
	}

	// Time grid, in both panels; labels under the lower one.
	xstep := niceCeil(end.Seconds()/8, false)
	lanesBottom := lanesTop + laneH*len(results)
	for v := 0.0; v <= end.Seconds()+1e-9; v += xstep {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", x(v), top, x(v), top+plotH)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eeeeee"/>`+"\n", x(v), lanesTop, x(v), lanesBottom)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), top+plotH+16, trimFloat(v))
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), lanesBottom+16, trimFloat(v))
	}
	p(`<text x="%d" y="%d" text-anchor="middle">time (s)</text>`+"\n", left+plotW/2, lanesBottom+36)

	// Upper panel: rate scale, allowed rate, series.
	ystep := ymax / 5
	for i := 0; i <= 5; i++ {
		v := float64(i) * ystep
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), left+plotW, y(v))
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, trimFloat(v))
	}
	p(`<rect class="plot" data-ymax="%s" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", trimFloat(ymax), left, top, plotW, plotH)
	p(`<text transform="translate(22 %d) rotate(-90)" text-anchor="middle">requests sent per second</text>`+"\n", top+plotH/2)
	if allowed > 0 {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", left, y(allowed), left+plotW, y(allowed))
	}
	above := 0 // clients off the scale so far
	for i, r := range results {
		color := palette[i%len(palette)]
		s := all[i]
		// Off the scale, a client's line runs just above the frame, each
		// such client on a track of its own so that none hides another.
		track := float64(top - 4 - 4*min(above, 4))
		if s.peak > ymax {
			above++
		}
		var pts strings.Builder
		for k, v := range s.rate {
			yv := y(v)
			if v > ymax {
				yv = track
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x((float64(k)+0.5)*bin.Seconds()), yv)
		}
		p(`<polyline class="series" data-client="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" points="%s"/>`+"\n",
			html.EscapeString(r.Client), color, strings.TrimSpace(pts.String()))
	}
	// Upper legend.
	lx, ly := left+plotW+16, top+8
	for i, r := range results {
		yy := ly + i*20
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lx, yy, lx+24, yy, palette[i%len(palette)])
		label := r.Client
		if !r.Finished {
			label += " (stopped)"
		}
		p(`<text x="%d" y="%d">%s</text>`+"\n", lx+30, yy+4, html.EscapeString(label))
	}
	if allowed > 0 {
		yy := ly + len(results)*20
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", lx, yy, lx+24, yy)
		p(`<text x="%d" y="%d">allowed %s/s</text>`+"\n", lx+30, yy+4, trimFloat(allowed))
	}
	// Clients off the scale, with their peaks.
	yy := ly + (len(results)+1)*20 + 10
	first := true
	for i, r := range results {
		if all[i].peak <= ymax {
			continue
		}
		if first {
			p(`<text x="%d" y="%d">off the scale, peaking at:</text>`+"\n", lx, yy)
			first = false
		}
		yy += 16
		p(`<text class="offscale" data-client="%s" x="%d" y="%d" fill="%s">▲ %s %s/s</text>`+"\n",
			html.EscapeString(r.Client), lx+8, yy, palette[i%len(palette)], html.EscapeString(r.Client), trimFloat(all[i].peak))
	}

	// Lower panel: a lane per client.
	p(`<text x="%d" y="%d" fill="#444">bars up: 429s; bars down (dark): requests sent while blocked by the server; per %s, on a log scale</text>`+"\n",
		left, lanesTop-10, bin)
	bw_ := float64(plotW) / float64(nbins)
	for i, r := range results {
		color := palette[i%len(palette)]
		s := all[i]
		mid := float64(lanesTop + i*laneH + laneH/2)
		if i%2 == 1 {
			p(`<rect x="%d" y="%d" width="%d" height="%d" fill="#f7f7f7"/>`+"\n", left, lanesTop+i*laneH, plotW, laneH)
		}
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#bbb"/>`+"\n", left, mid, left+plotW, mid)
		p(`<text x="%d" y="%.1f" text-anchor="end" fill="%s" font-weight="bold">%s</text>`+"\n", left-6, mid+4, color, html.EscapeString(r.Client))
		for k := range nbins {
			bx := x(float64(k) * bin.Seconds())
			if n := s.rejected[k]; n > 0 {
				h := barScale(n)
				p(`<rect class="throttled" data-client="%s" data-count="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
					html.EscapeString(r.Client), n, bx, mid-h, max(1, bw_-0.5), h, color)
			}
			if n := s.block[k]; n > 0 {
				p(`<rect class="blocked" data-client="%s" data-count="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#222"/>`+"\n",
					html.EscapeString(r.Client), n, bx, mid, max(1, bw_-0.5), barScale(n))
			}
		}
		p(`<text x="%d" y="%.1f">%d 429s</text>`+"\n", left+plotW+8, mid-3, r.Rejected)
		p(`<text x="%d" y="%.1f">%d sent while blocked</text>`+"\n", left+plotW+8, mid+11, r.SentWhileBlocked)
	}
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, lanesTop, plotW, lanesBottom-lanesTop)
	p("</svg>\n")
	return bw.Flush()
}

// niceCeil rounds v up to a round number: 1, 2 or 5 times a power of ten,
// for a tick step; or, fine, also 1.5, 2.5, 3, 4, 6 or 8 times it, for the
// top of a scale that should not end far above v.
func niceCeil(v float64, fine bool) float64 {
	if v <= 0 {
		return 1
	}
	ms := []float64{1, 2, 5, 10}
	if fine {
		ms = []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range ms {
		if m*e >= v-1e-9 {
			return m * e
		}
	}
	return 10 * e
}

func trimFloat(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}
