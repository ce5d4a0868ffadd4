# jitter --why on this kernel (misses over 1 ms: under TCG most wake-ups are 100 us late,
# the emulator's idle exit), with a FIFO culprit the test makes spinning on the
# probe's CPU: the trace must name it, with its time (agreement inside the guest; the
# times are the emulator's).
. "$(dirname "$0")/../lib.sh"
culprit why-labhog 1 90 5 250 5 spins.txt &
for _ in $(seq 100); do [ -e spins.txt.ready ] && break; sleep 0.2; done
$AUDIOLAT jitter --db lab.db --cpu 1 -D 4s --why-above 1ms --json > why.json 2> why.err
echo "jitter --why: exit $?"
wait
echo "culprit: $(wc -l < spins.txt) spins"
