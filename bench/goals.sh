#!/usr/bin/env bash
# goals.sh: issue 15's speed goals in one interleaved run. Each round runs
# the Transport over a stub (serial and at 16 goroutines), the pacing
# decision and the Redis store, each beside its peer in one process, so
# that heed's figure and the peer's come from the same minute; the ratios
# are taken per round, then the median and the range over the rounds are
# printed as a Markdown table. On a shared, noisy host an absolute time
# alone means little; a ratio paired within a round means more.
#
#   bench/goals.sh [ROUNDS]          (default 10; the raw output is kept)
#   bench/goals.sh -s DIR            (summarise the rounds kept in DIR)
#
# Needs Go and redis-server (the Redis benchmarks start their own).
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "-s" ]; then
	work=$2 rounds=0
else
	rounds=${1:-10}
	work=$(mktemp -d)
	go test -c -o "$work/bench.test" .
	echo "raw output: $work" >&2
fi
bin="$work/bench.test"

for r in $(seq 1 "$rounds"); do
	{
		"$bin" -test.run '^$' -test.bench 'Overhead/stub/serial/(bare|heed|heed-capped|failsafe)$' -test.benchtime 1000000x
		"$bin" -test.run '^$' -test.bench 'StubAt16Goroutines/(bare|heed|heed-capped|failsafe)$' -test.benchtime 1000000x
		"$bin" -test.run '^$' -test.bench 'PacingDecision' -test.benchtime 5000000x
		"$bin" -test.run '^$' -test.bench 'BenchmarkRedis$|EvalshaFloor' -test.benchtime 5000x
	} | grep '^Benchmark' >"$work/round$r.txt"
	echo "round $r of $rounds done" >&2
done

# One line per round and figure: "figure value", then the median and range.
for f in "$work"/round*.txt; do
	awk '
	{
		name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
		ns[name] = $3
		for (i = 4; i < NF; i++) if ($(i+1) ~ /\/op$|ops\/s$/) m[name, $(i+1)] = $i
	}
	function added(a, b) { return (ns[a] - ns[b]) }
	END {
		s = "Overhead/stub/serial/"; p = "StubAt16Goroutines/"
		printf "Transport added cost ÷ failsafe-go'"'"'s, serial %f\n", added(s "heed", s "bare") / added(s "failsafe", s "bare")
		printf "Transport added cost ÷ failsafe-go'"'"'s, serial, default cap %f\n", added(s "heed-capped", s "bare") / added(s "failsafe", s "bare")
		printf "Transport added cost ÷ failsafe-go'"'"'s, 16 goroutines %f\n", added(p "heed", p "bare") / added(p "failsafe", p "bare")
		printf "Transport added cost ÷ failsafe-go'"'"'s, 16 goroutines, default cap %f\n", added(p "heed-capped", p "bare") / added(p "failsafe", p "bare")
		d = "PacingDecision/"
		printf "decision ÷ x/time/rate Allow (paced) %f\n", ns[d "heed/Admit+Release"] / ns[d "x-time-rate/Allow-paced"]
		printf "decision ÷ x/time/rate Allow (rate.Inf) %f\n", ns[d "heed/Admit+Release"] / ns[d "x-time-rate/Allow"]
		split("serial 16-goroutines", md, " ")
		for (k = 1; k <= 2; k++) {
			mo = md[k]; rr = "Redis/redis_rate-allow/" mo
			split("heed-admit heed-admit+release heed-admit+update+release heed-lease-admit heed-lease-admit+release", hs, " ")
			for (j = 1; j <= 5; j++) {
				h = "Redis/" hs[j] "/" mo
				printf "Redis decisions/s ÷ redis_rate'"'"'s, %s, %s %f\n", hs[j], mo, m[h, "ops/s"] / m[rr, "ops/s"]
				printf "Redis script µs ÷ redis_rate'"'"'s, %s, %s %f\n", hs[j], mo, m[h, "redis-µs/op"] / m[rr, "redis-µs/op"]
				printf "Redis round trips per request, %s, %s %f\n", hs[j], mo, m[h, "roundtrips/op"]
			}
			printf "Redis decisions/s ÷ redis_rate'"'"'s, EVALSHA return 1, %s %f\n", mo, m["EvalshaFloor/" mo, "ops/s"] / m[rr, "ops/s"]
		}
	}' "$f"
done | awk '
	{
		v = $NF; k = $0; sub(/ [^ ]+$/, "", k)
		if (!(k in n)) order[++nk] = k
		vals[k, ++n[k]] = v
	}
	END {
		print "| figure | median | interquartile | range | rounds |"
		print "|---|--:|--:|--:|--:|"
		for (i = 1; i <= nk; i++) {
			k = order[i]; c = n[k]
			for (a = 1; a <= c; a++) x[a] = vals[k, a]
			for (a = 2; a <= c; a++) for (b = a; b > 1 && x[b-1] > x[b]; b--) { t = x[b]; x[b] = x[b-1]; x[b-1] = t }
			med = (c % 2) ? x[(c+1)/2] : (x[c/2] + x[c/2+1]) / 2
			q1 = x[int((c + 3) / 4)]; q3 = x[c + 1 - int((c + 3) / 4)]
			printf "| %s | %.3f | %.3f-%.3f | %.3f-%.3f | %d |\n", k, med, q1, q3, x[1], x[c], c
		}
	}'
