# Shared by the lab's check scripts (sourced).

# alsa_delay (zita-alsa-pcmi-utils) on PLAYBACK CAPTURE at PERIOD x PERIODS, 48 kHz, into
# OUT: up to three runs, each headed "== run N", until two agree. A run's start can fall
# across one of snd-aloop's timer ticks and read a tick (192 frames at 250 Hz) off; the
# test takes the figure two runs agree on.
#   reference_delay OUT PLAYBACK CAPTURE PERIOD PERIODS
reference_delay() {
  local out=$1 play=$2 capt=$3 period=$4 periods=$5 n figures=()
  : > "$out"
  for n in 1 2 3; do
    echo "== run $n" >> "$out"
    timeout 6 stdbuf -oL alsa_delay "$play" "$capt" 48000 "$period" "$periods" 1 1 > "$out.part" 2>&1
    cat "$out.part" >> "$out"
    figures+=("$(awk '$2 == "frames" { f = $1 } END { print f }' "$out.part")")
    rm -f "$out.part"
    [ "$n" -ge 2 ] && [ "$(printf '%s\n' "${figures[@]}" | sort | uniq -d)" != "" ] && break
  done
}
