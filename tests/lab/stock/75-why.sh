# jitter --why on this kernel, with a FIFO culprit the test makes spinning on the
# probe's CPU: the trace must name it, with its time (agreement inside the guest; the
# times are the emulator's).
. "$(dirname "$0")/../lib.sh"
culprit why-labhog 1 90 5 250 4 spins.txt &
$AUDIOLAT jitter --db lab.db --cpu 1 -D 3s --why --json > why.json 2> why.err
echo "jitter --why: exit $?"
wait
echo "culprit: $(wc -l < spins.txt) spins"
