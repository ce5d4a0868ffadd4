#!/bin/sh
# Reports each line `NAME RESULT [MEASUREMENT UNITS]` of a result file to LAVA with
# lava-test-case, as Linaro's test-definitions do; without lava-test-case (a farm with
# no LAVA, or a shell) it prints LAVA's signal lines instead.
RESULT_FILE="${1:-./output/result.txt}"
command -v lava-test-case >/dev/null 2>&1 && lava=yes || lava=no
while read -r name result measurement units; do
    [ -z "$name" ] && continue
    if [ "$lava" = yes ]; then
        if [ -n "$measurement" ]; then
            lava-test-case "$name" --result "$result" --measurement "$measurement" --units "$units"
        else
            lava-test-case "$name" --result "$result"
        fi
    else
        echo "<TEST_CASE_ID=$name RESULT=$result${measurement:+ MEASUREMENT=$measurement}${units:+ UNITS=$units}>"
    fi
done < "$RESULT_FILE"
