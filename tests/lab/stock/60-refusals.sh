# What a real device refuses, and a device another program holds: one line each, exit 2.
set -u
refuse() {
  local name=$1; shift
  $AUDIOLAT "$@" --db refusals.db > "refuse-$name.out" 2> "refuse-$name.err"
  echo $? > "refuse-$name.rc"
}
# snd-dummy plays U8 and S16_LE, 1 or 2 channels, 5500-48000 Hz.
refuse format event --backend alsa --device hw:Dummy --format float --triggers 2
refuse rate event --backend alsa --device hw:Dummy --rate 96000 --triggers 2
refuse nodevice event --backend alsa --device hw:9 --triggers 2
# snd-aloop's playback held by aplay.
aplay -D hw:Loopback,0,0 -t raw -f S16_LE -r 48000 -c 1 -d 15 /dev/zero 2> /dev/null &
holder=$!
for _ in $(seq 100); do
  grep -q RUNNING /proc/asound/Loopback/pcm0p/sub0/status 2>/dev/null && break
  sleep 0.1
done
echo "$holder" > busy-holder.pid
refuse busy roundtrip --backend alsa --device hw:Loopback,0,0 --capture-device hw:Loopback,1,0 --duration 1s
kill $holder
wait
