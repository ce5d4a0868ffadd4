# Round trip through snd-aloop (hw:Loopback,0,0 plays into hw:Loopback,1,0), beside the
# references in this guest: alsa_delay (zita-alsa-pcmi-utils, the multi-tone method) on
# the same devices and settings, and aplay/arecord passing noise with no xrun.
# Every audiolat run goes to lab.db in the shared directory (9p: no shared memory for
# SQLite's write-ahead log).
set -u
. "$(dirname "$0")/../lib.sh"
play=hw:Loopback,0,0
capt=hw:Loopback,1,0
for setting in "1024 2" "4096 3"; do
  set -- $setting
  period=$1 periods=$2
  reference_delay "alsa_delay-$period.txt" $play $capt "$period" "$periods"
  # aplay/arecord at the same setting: noise through the loop, xruns reported on stderr.
  timeout 8 arecord -D $capt -f S16_LE -r 48000 -c 1 --period-size="$period" \
    --buffer-size=$((period * periods)) -d 3 "arecord-$period.wav" > "arecord-$period.txt" 2>&1 &
  sleep 0.3
  timeout 8 aplay -D $play -t raw -f S16_LE -r 48000 -c 1 --period-size="$period" \
    --buffer-size=$((period * periods)) -d 4 /dev/urandom > "aplay-$period.txt" 2>&1
  wait
  for format in s16 s24_3 s24 s32 float; do
    run_clean "rt-$period-$format" roundtrip --db lab.db --backend alsa --device $play \
      --capture-device $capt --period "$period" --periods "$periods" --format $format \
      --duration 2s --impulses 2
    echo "roundtrip $period x $periods $format: exit $?"
  done
  # The same settings again: the same figure.
  run_clean "rt-$period-again" roundtrip --db lab.db --backend alsa --device $play \
    --capture-device $capt --period "$period" --periods "$periods" --duration 2s --impulses 2
  echo "roundtrip $period x $periods again: exit $?"
done
# The text a user reads, once.
$AUDIOLAT roundtrip --db lab.db --backend alsa --device $play --capture-device $capt \
  --period 1024 --duration 1s --impulses 2 > rt-text.txt 2>&1
echo "roundtrip text: exit $?"
