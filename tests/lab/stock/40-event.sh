# Event latency on real drivers: snd-dummy (a card with a clock and no sound) against the
# timing model, and snd-aloop with its capture side as the loopback, where the onset is
# found in what came back.
set -u
. "$(dirname "$0")/../lib.sh"
for policy in fixed asap; do
  run_clean "event-dummy-$policy" event --db lab.db --backend alsa --device hw:Dummy \
    --period 256 --policy $policy --triggers 60
  echo "event hw:Dummy $policy: exit $?"
done
for policy in fixed asap; do
  run_clean "event-loopback-$policy" event --db lab.db --backend alsa --device hw:Loopback,0,0 \
    --loopback hw:Loopback,1,0 --period 1024 --policy $policy --triggers 30
  echo "event hw:Loopback $policy: exit $?"
done
$AUDIOLAT event --db lab.db --backend alsa --device hw:Loopback,0,0 --loopback hw:Loopback,1,0 \
  --period 1024 --policy fixed --triggers 10 > event-text.txt 2>&1
echo "event text: exit $?"
