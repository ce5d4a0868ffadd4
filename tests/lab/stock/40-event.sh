# Event latency on real drivers: snd-dummy (a card with a clock and no sound) against the
# timing model, and snd-aloop with its capture side as the loopback, where the onset is
# found in what came back.
set -u
for policy in fixed asap; do
  $AUDIOLAT event --db lab.db --backend alsa --device hw:Dummy --period 256 --policy $policy \
    --triggers 60 --json > "event-dummy-$policy.json" 2> "event-dummy-$policy.err"
  echo "event hw:Dummy $policy: exit $?"
done
for policy in fixed asap; do
  $AUDIOLAT event --db lab.db --backend alsa --device hw:Loopback,0,0 --loopback hw:Loopback,1,0 \
    --period 1024 --policy $policy --triggers 30 --json > "event-loopback-$policy.json" 2> "event-loopback-$policy.err"
  echo "event hw:Loopback $policy: exit $?"
done
$AUDIOLAT event --db lab.db --backend alsa --device hw:Loopback,0,0 --loopback hw:Loopback,1,0 \
  --period 1024 --policy fixed --triggers 10 > event-text.txt 2>&1
echo "event text: exit $?"
