#!/usr/bin/env bash
# instructions.sh: instructions per operation of bench's benchmarks, counted
# by valgrind's callgrind, for binaries built at one or more commits. Counts
# repeat run after run where wall-clock time on a shared host does not.
#
#   bench/instructions.sh [-b REGEX]... COMMIT...
#
# Each benchmark runs at 10,000 and at 30,000 iterations with GOGC=off,
# GOMAXPROCS=1 and no asynchronous preemption (its signals now and then
# crash callgrind, or land a one-off cost in one run); the difference over
# 20,000 is the count per operation. Each pair runs twice; the lower is
# printed.
# Needs valgrind (Debian: apt-get install valgrind) and git.
set -euo pipefail
cd "$(dirname "$0")/.."

benches=()
while [ "${1:-}" = "-b" ]; do benches+=("$2"); shift 2; done
if [ ${#benches[@]} -eq 0 ]; then
	benches=(
		'Overhead/stub/serial/bare$'
		'Overhead/stub/serial/heed$'
		'Overhead/stub/serial/heed-paced$'
		'Overhead/stub/serial/heed-capped$'
		'Overhead/stub/serial/failsafe$'
		'PacingDecision/x-time-rate/Allow-paced$'
		'PacingDecision/heed/Admit.Release$'
	)
fi
[ $# -gt 0 ] || { echo "usage: $0 [-b REGEX]... COMMIT..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }

work=$(mktemp -d)
trap 'git worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

count() { # binary regex iterations -> instructions of the whole run
	# cpu.rdtscp=off: valgrind 3.19 dies on RDTSCP, which the Go runtime
	# uses for its clock; a run that died says no ns/op, and counts nothing.
	GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$1" -test.run '^$' -test.bench "$2" -test.benchtime "$3x" 2>&1 |
		awk '/ns\/op/ {ok = 1} /Collected/ {n = $4} END {if (ok) print n}'
}
per_op() { # binary regex -> instructions per operation
	local best=
	for _ in 1 2; do
		local a b n
		a=$(count "$1" "$2" 10000)
		b=$(count "$1" "$2" 30000)
		if [ -z "$a" ] || [ -z "$b" ]; then
			echo "callgrind counted nothing for $2 ($1)" >&2
			exit 1
		fi
		n=$(((b - a) / 20000))
		if [ -z "$best" ] || [ "$n" -lt "$best" ]; then best=$n; fi
	done
	echo "$best"
}

for commit in "$@"; do
	git worktree add --detach "$work/tree" "$commit" >/dev/null
	(cd "$work/tree/bench" && go test -c -o "$work/bench.test" .)
	git worktree remove --force "$work/tree"
	for re in "${benches[@]}"; do
		printf '%s\t%s\t%s\n' "$(git rev-parse --short "$commit")" "$re" "$(per_op "$work/bench.test" "$re")"
	done
done
