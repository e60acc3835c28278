#!/usr/bin/env bash
# Sizes fuzz-smoke's run counts: runs each target as fuzz-smoke does (its
# committed corpus, dictionary, options, seed SEED) for its current RUNS
# inputs, one target at a time, measures the CPU seconds that took and prints
# the FUZZ_RUNS_<target> line for the Makefile that would take SECS CPU
# seconds (two significant digits). CPU time, not wall time: a busy machine
# only stretches the wall. Targets that start DuckDB count its threads too.
#   tests/fuzz/rates.sh BUILD SEED SECS TARGET=RUNS[:DICT[:OPTS]]...
set -u
build=$1 seed=$2 secs=$3
shift 3
TIMEFORMAT='%U %S'
for arg in "$@"; do
    t=${arg%%=*} rest=${arg#*=}
    runs=${rest%%:*} rest=${rest#"$runs"}; rest=${rest#:}
    d=${rest%%:*} opts=${rest#"$d"}; opts=${opts#:}
    w=$(mktemp -d)
    cp tests/fuzz/corpus/$t/* "$w"/ 2>/dev/null
    cpu=$( { time env -i PATH=/usr/bin:/bin "$build/$t" -seed="$seed" -runs="$runs" -reload=0 -detect_leaks=0 -print_final_stats=1 $opts \
                ${d:+-dict=$d} "$w" > "$w.log" 2>&1; } 2>&1 | awk '{print $1 + $2}')
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$w.log")
    awk -v t="$t" -v n="${n:-0}" -v c="$cpu" -v s="$secs" 'BEGIN {
        r = n / (c > 0 ? c : 1) * s; p = 1; while (r / p >= 100) p *= 10
        printf "FUZZ_RUNS_%s := %d   # was %d runs in %.1f CPU s\n", t, int(r / p) * p, n, c }'
    rm -rf "$w" "$w.log"
done
