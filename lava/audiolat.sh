#!/bin/sh
# audiolat for test farms: runs one audiolat scenario with its gates and writes Linaro's
# result file, output/result.txt: one line `NAME RESULT [MEASUREMENT UNITS]` per metric
# and per gate (audiolat's `--output-format lava`). send-to-lava.sh reports each line to
# LAVA with lava-test-case; without LAVA the file is the result.
#
# Usage: ./audiolat.sh [-s SCENARIO] [-d DURATION] [-l LOAD] [-g GATES] [-a AUDIOLAT] [-x EXTRA]
#   -s  jitter, event, roundtrip, net or suite (default jitter)
#   -d  how long to measure, e.g. 60s (jitter, roundtrip, net: --duration; suite: --each;
#       event counts triggers instead: pass -x '-n 500')
#   -l  background load, audiolat's --load SPEC (default none; not for the suite)
#   -g  gates, separated by ';', each an audiolat --fail-if EXPR: 'p99.9 > 200us;p50 > 50us'
#   -a  the audiolat binary (default: audiolat on PATH)
#   -x  more audiolat arguments, split on spaces
# Exit status: 0 when the results were written (a failed gate is a `fail` line, as
# Linaro's tests report), 1 when audiolat could not run at all (also a `fail` line).
set -u
SCENARIO=jitter DURATION=10s LOAD=none GATES="" AUDIOLAT=audiolat EXTRA=""
while getopts "s:d:l:g:a:x:h" opt; do
    case "$opt" in
        s) SCENARIO="$OPTARG" ;;
        d) DURATION="$OPTARG" ;;
        l) LOAD="$OPTARG" ;;
        g) GATES="$OPTARG" ;;
        a) AUDIOLAT="$OPTARG" ;;
        x) EXTRA="$OPTARG" ;;
        *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
OUTPUT="$(pwd)/output"
RESULT_FILE="$OUTPUT/result.txt"
mkdir -p "$OUTPUT"
: > "$RESULT_FILE"

set -- "$SCENARIO"
case "$SCENARIO" in
    jitter|roundtrip|net) set -- "$@" --duration "$DURATION" --load "$LOAD" ;;
    event) set -- "$@" --load "$LOAD" ;;
    suite) set -- "$@" --each "$DURATION" ;;
    *) echo "audiolat.sh: unknown scenario '$SCENARIO': use jitter, event, roundtrip, net or suite" >&2
       echo "audiolat-$SCENARIO fail" >> "$RESULT_FILE"; exit 1 ;;
esac
# Each gate as its own --fail-if (the expressions hold spaces, so split on ';' only).
rest="$GATES"
while [ -n "$rest" ]; do
    gate="${rest%%;*}"
    [ "$gate" = "$rest" ] && rest="" || rest="${rest#*;}"
    gate="$(echo "$gate" | sed 's/^ *//; s/ *$//')"
    [ -n "$gate" ] && set -- "$@" --fail-if "$gate"
done
# shellcheck disable=SC2086 # EXTRA is split on spaces on purpose
set -- "$@" $EXTRA --quiet --output-format lava

echo "audiolat.sh: $AUDIOLAT --db $OUTPUT/audiolat.db $*" >&2
"$AUDIOLAT" --db "$OUTPUT/audiolat.db" "$@" > "$OUTPUT/lines.txt" 2> "$OUTPUT/stderr.txt"
status=$?
cat "$OUTPUT/stderr.txt" >&2
cat "$OUTPUT/lines.txt" >> "$RESULT_FILE"
# 0: done; 3: a gate failed (its own fail line says which); 1: the run failed or was
# interrupted (its run line says fail); anything else: nothing was measured.
case "$status" in
    0|1|3) ;;
    *) echo "audiolat-$SCENARIO fail" >> "$RESULT_FILE"; exit 1 ;;
esac
exit 0
