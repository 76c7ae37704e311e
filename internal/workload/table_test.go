package workload_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/heedhttp/heed/internal/workload"
)

func TestTableRows(t *testing.T) {
	tests := []struct {
		name string
		res  workload.Result
		want []string // the row's fields
	}{
		{
			name: "failing fast",
			res: workload.Result{Client: "none", Finished: true, Elapsed: 1500 * time.Millisecond, Ideal: 15 * time.Second,
				Ops: 1154, Done: 1154, Failed: 627, Requests: 1154, Rejected: 627, SentWhileBlocked: 746, Efficiency: 527.0 / 1154},
			want: []string{"none", "1.5s", "0.10x", "527", "627", "0", "1154", "627", "746", "0", "46%"},
		},
		{
			name: "stopped",
			res: workload.Result{Client: "guide", Elapsed: 28 * time.Second, Ideal: 14 * time.Second,
				Ops: 1154, Done: 986, Failed: 16, Requests: 1035, Rejected: 65, Duplicates: 1, Efficiency: 0.42},
			want: []string{"guide", "stopped", "28.0s", "2.00x", "970", "16", "168", "1035", "65", "0", "1", "42%"},
		},
		{
			name: "no ideal",
			res:  workload.Result{Client: "heed", Finished: true, Elapsed: time.Second, Ops: 10, Done: 10, Requests: 10, Efficiency: 1},
			want: []string{"heed", "1.0s", "-", "10", "0", "0", "10", "0", "0", "0", "100%"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := workload.Table(&buf, []workload.Result{tc.res}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("Table() = %q, want a header and one row", buf.String())
			}
			if h := strings.Join(strings.Fields(lines[0]), " "); h != "client time vs ideal completed failed ops unfinished sent 429s sent while blocked duplicate writes efficiency" {
				t.Errorf("Table() header = %q", h)
			}
			if got := strings.Fields(lines[1]); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("Table() row = %q, want %q", got, tc.want)
			}
		})
	}
}
