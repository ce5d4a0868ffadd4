# --find-min-buffer on snd-aloop walks down from 4096 frames and stops at the first
# setting that under-runs; alsa_delay then measures the smallest one that held.
# (Its database is the guest's own /tmp: the walk's first settings hold only if the
# emulator keeps up, and writing through 9p costs the emulator most. A walk whose very
# first setting the emulator stalled is made once more, and said.)
set -u
. "$(dirname "$0")/../lib.sh"
walk() {
  $AUDIOLAT roundtrip --db /tmp/min-buffer.db --backend alsa --device hw:Loopback,0,0 \
    --capture-device hw:Loopback,1,0 --find-min-buffer --period 4096,2048,1024,512,256,128,64 \
    --duration 2s --impulses 2 --json > min-buffer.json 2> min-buffer.err
}
walk
echo "find-min-buffer: exit $?"
period=$(jq -r '.min_buffer.smallest_holding.period_frames // empty' min-buffer.json)
if [ -z "$period" ]; then
  mv min-buffer.json min-buffer.first.json
  echo "no setting held, 4096 frames under-ran first: walk again" > min-buffer.retried
  walk
  echo "find-min-buffer again: exit $?"
  period=$(jq -r '.min_buffer.smallest_holding.period_frames // empty' min-buffer.json)
fi
echo "smallest holding: ${period:-none}"
if [ -n "$period" ]; then
  reference_delay alsa_delay-min.txt hw:Loopback,0,0 hw:Loopback,1,0 "$period" 2
  echo "$period" > min-buffer-period.txt
fi
