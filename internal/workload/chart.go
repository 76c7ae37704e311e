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

// Chart writes an SVG line chart of each result's sent rate (requests the
// server received per second, accepted and rejected) over time, against
// the allowed steady rate, with axes, a legend and title as its caption.
// It uses the standard library only; the SVG is self-contained.
func Chart(w io.Writer, title string, results []Result) error {
	const (
		width, height          = 960, 480
		left, right, top, bott = 70, 190, 50, 55
		plotW, plotH           = width - left - right, height - top - bott
	)
	// Bin the series so that no chart has more than about 150 points.
	var end time.Duration
	step := time.Duration(0)
	for _, r := range results {
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
	rates := make([][]float64, len(results))
	top_ := 0.0
	allowed := 0.0
	for i, r := range results {
		allowed = max(allowed, r.Allowed)
		bins := make([]float64, nbins)
		s := r.Series
		for j := range s.Accepted {
			sent := s.Accepted[j] + s.Rejected[j]
			if j < len(s.Faults) {
				sent += s.Faults[j]
			}
			at := r.Offset + time.Duration(j)*s.Step
			if k := int(at / bin); k >= 0 && k < nbins {
				bins[k] += float64(sent)
			}
		}
		// The client's last bin ends at its end, not the bin's.
		last := min(nbins, int(math.Ceil(float64(r.Offset+time.Duration(len(s.Accepted))*s.Step)/float64(bin))))
		for k := range bins {
			bins[k] /= bin.Seconds()
			top_ = max(top_, bins[k])
		}
		rates[i] = bins[:max(0, last)]
	}
	ymax := niceCeil(max(top_, allowed*1.25, 1))
	x := func(d float64) float64 { return left + d/end.Seconds()*plotW }
	y := func(v float64) float64 { return top + plotH - v/ymax*plotH }

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and y axis.
	ystep := ymax / 5
	for i := 0; i <= 5; i++ {
		v := float64(i) * ystep
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), left+plotW, y(v))
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, trimFloat(v))
	}
	xstep := niceCeil(end.Seconds() / 8)
	for v := 0.0; v <= end.Seconds()+1e-9; v += xstep {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", x(v), top, x(v), top+plotH)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), top+plotH+18, trimFloat(v))
	}
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	p(`<text x="%d" y="%d" text-anchor="middle">time (s)</text>`+"\n", left+plotW/2, height-12)
	p(`<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">requests sent per second</text>`+"\n", top+plotH/2)
	// Allowed rate.
	if allowed > 0 {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", left, y(allowed), left+plotW, y(allowed))
	}
	// Series.
	for i, r := range results {
		color := palette[i%len(palette)]
		var pts strings.Builder
		for k, v := range rates[i] {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x((float64(k)+0.5)*bin.Seconds()), y(min(v, ymax)))
		}
		p(`<polyline class="series" data-client="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" points="%s"/>`+"\n",
			html.EscapeString(r.Client), color, strings.TrimSpace(pts.String()))
	}
	// Legend.
	lx, ly := left+plotW+16, top+8
	for i, r := range results {
		color := palette[i%len(palette)]
		yy := ly + i*20
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lx, yy, lx+24, yy, color)
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
	p("</svg>\n")
	return bw.Flush()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
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
