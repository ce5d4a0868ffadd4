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

# Under-runs and skipped cycles in an audiolat probe's --json output, summed over its runs
# (event's are under .underruns, skipped cycles included), and, in a run with a loopback
# capture (one onset found), the notes that sounded whose onset was not found: a stall
# of the guest between playback and capture loses one without the driver reporting it.
underruns() {
  jq '[.runs[] | (.result | (.xruns // 0) + (.skipped_cycles // 0)
      + (.underruns.start // 0) + (.underruns.steady // 0)
      + (.underruns.skipped_cycles_start // 0) + (.underruns.skipped_cycles_steady // 0))
      + (if .result.loopback_ms == null then 0
         else [.triggers[]? | select(.missed == false and .measured_ns == null)] | length end)]
      | add // 0' "$1"
}

# Runs `$AUDIOLAT ARGS... --json` into OUT.json (stderr OUT.err). A guest under TCG now
# and then stalls for longer than a period (the emulator, not the driver or audiolat;
# more often on a busy host): a run that under-ran is run again, up to five runs in
# all, each one before kept as OUT.first.json/.err, OUT.second.json/.err, ... and noted
# in OUT.retried, which the tests print. The tests judge the last run. (Three were too
# few on a host whose two CPUs were both busy: every one of them stalled.)
#   run_clean OUT ARGS...
run_clean() {
  local out=$1 rc n kept
  shift
  : > "$out.retried"
  for kept in first second third fourth last; do
    "$AUDIOLAT" "$@" --json > "$out.json" 2> "$out.err"
    rc=$?
    n=$(underruns "$out.json" 2>/dev/null || echo 0)
    if [ "$rc" != 0 ] || [ "$n" = 0 ] || [ "$kept" = last ]; then
      break
    fi
    mv "$out.json" "$out.$kept.json"
    mv "$out.err" "$out.$kept.err"
    echo "the $kept run under-ran ($n under-runs, skipped cycles or lost onsets): run again" >> "$out.retried"
  done
  [ -s "$out.retried" ] || rm -f "$out.retried"
  return $rc
}

# A SCHED_FIFO culprit the test knows: a process named NAME, pinned to CPU at FIFO
# PRIORITY, spinning SPIN_MS every EVERY_MS for SECS seconds (first after 300 ms); each
# spin's start and end (CLOCK_MONOTONIC ns, one line each) go to OUT, and OUT.ready is
# made once it is set up (Debian's python3 itself: a version manager's shims take
# seconds to start under TCG).
#   culprit NAME CPU PRIORITY SPIN_MS EVERY_MS SECS OUT
culprit() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys, time
name, cpu, prio, spin_ms, every_ms, secs, out = sys.argv[1:]
open("/proc/self/comm", "w").write(name)
os.sched_setaffinity(0, {int(cpu)})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(prio)))
ns = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)
open(out + ".ready", "w").close()
spins, nxt = [], ns() + 300_000_000
end = ns() + int(float(secs) * 1e9)
while ns() < end:
    while ns() < nxt:
        time.sleep(max(0, min(nxt - ns(), 5_000_000)) / 1e9)
    start = ns()
    while ns() < start + int(spin_ms) * 1_000_000:
        pass
    spins.append((start, ns()))
    nxt += int(every_ms) * 1_000_000
with open(out, "w") as f:
    for s, e in spins:
        f.write(f"{s} {e}\n")
PY
}
