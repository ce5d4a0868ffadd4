# jitter runs on this kernel (under TCG its times are the emulator's: nothing is
# asserted on them).
$AUDIOLAT jitter --db lab.db -D 2s --json > jitter.json 2> jitter.err
echo "jitter: exit $?"
