# --find-min-buffer on snd-aloop walks down from 4096 frames and stops at the first
# setting that under-runs; alsa_delay then measures the smallest one that held.
set -u
. "$(dirname "$0")/../lib.sh"
$AUDIOLAT roundtrip --db lab.db --backend alsa --device hw:Loopback,0,0 --capture-device hw:Loopback,1,0 \
  --find-min-buffer --period 4096,2048,1024,512,256,128,64 --duration 2s --impulses 2 \
  --json > min-buffer.json 2> min-buffer.err
echo "find-min-buffer: exit $?"
period=$(jq -r '.min_buffer.smallest_holding.period_frames // empty' min-buffer.json)
echo "smallest holding: ${period:-none}"
if [ -n "$period" ]; then
  reference_delay alsa_delay-min.txt hw:Loopback,0,0 hw:Loopback,1,0 "$period" 2
  echo "$period" > min-buffer-period.txt
fi
