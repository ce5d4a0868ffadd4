# audiolat devices beside aplay's and arecord's own dump of what the devices accept
# (tests/lab/devices.rs compares them), then with hw:Loopback,0,0 held by aplay.
set -u
"$AUDIOLAT" devices --json > devices.json || exit 1
"$AUDIOLAT" devices > devices.txt || exit 1
# The references. --dump-hw-params prints the whole configuration space, then aplay goes
# on with its default format (U8, which snd-aloop refuses: an error after the dump).
aplay -D hw:Dummy --dump-hw-params -d 1 /dev/zero > aplay-dummy.dump 2>&1
aplay -D hw:Loopback,0,0 --dump-hw-params -d 1 /dev/zero > aplay-loopback.dump 2>&1
arecord -D hw:Loopback,1,0 --dump-hw-params -d 1 /dev/null > arecord-loopback.dump 2>&1
# The suggested flags work: an event run on the first suggestion for the loopback card.
args=$(sed -n 's/.*"args": "\(--backend alsa --device hw:Loopback,0,0\)".*/\1/p' devices.json | head -1)
echo "suggested: $args"
# (The database off the shared directory, in the guest's own /tmp.
# Under TCG the emulator can stall a stream for seconds, which ends a run with exit 1:
# one more try then; a refusal of the flags is exit 2 at once.)
for try in 1 2; do
  # shellcheck disable=SC2086
  "$AUDIOLAT" --db "/tmp/suggested-$try.db" event $args --triggers 3 --quiet > suggested.txt 2>&1
  rc=$?
  echo "try $try: exit $rc" >> suggested.tries
  [ "$rc" = 1 ] || break
done
echo $rc > suggested.rc
# Busy: aplay plays on hw:Loopback,0,0 until killed.
aplay -D hw:Loopback,0,0 -f S16_LE -r 48000 -c 2 /dev/zero 2> busy-aplay.err &
holder=$!
for _ in $(seq 100); do
  grep -q RUNNING /proc/asound/Loopback/pcm0p/sub0/status 2>/dev/null && break
  sleep 0.1
done
echo "$holder" > busy.pid
cat /proc/asound/Loopback/pcm0p/sub0/status
"$AUDIOLAT" devices --json > busy.json
"$AUDIOLAT" devices
"$AUDIOLAT" --db /tmp/busy.db event --backend alsa --device hw:Loopback,0,0 --triggers 1 > busy-event.txt 2>&1
echo $? > busy-event.rc
kill "$holder"
wait "$holder"
cat devices.txt suggested.txt busy-event.txt
