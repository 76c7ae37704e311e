package workload

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Table writes one row per result, aligned in columns: time against the
// ideal, operations completed, failed and unfinished (not run, or cut off
// when the client was stopped), requests sent, 429s, requests sent while
// blocked, duplicate writes and efficiency.
func Table(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\ttime\tvs ideal\tcompleted\tfailed ops\tunfinished\tsent\t429s\tsent while blocked\tduplicate writes\tefficiency\t")
	for _, r := range results {
		t := seconds(r.Elapsed)
		if !r.Finished {
			t = "stopped " + t
		}
		vs := "-"
		if r.Ideal > 0 {
			vs = fmt.Sprintf("%.2fx", float64(r.Elapsed)/float64(r.Ideal))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f%%\t\n", r.Client, t, vs,
			r.Completed(), r.Failed, r.Ops-r.Done, r.Requests, r.Rejected, r.SentWhileBlocked, r.Duplicates, 100*r.Efficiency)
	}
	return tw.Flush()
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
