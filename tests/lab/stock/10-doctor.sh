# doctor on the stock kernel: the PREEMPT_DYNAMIC mode, read from debugfs (which the
# guest has not mounted: doctor mounts it read-only for the reading, and unmounts it).
$AUDIOLAT doctor --json > doctor.json
echo "doctor exit $?"
grep -c " /sys/kernel/debug " /proc/mounts > debugfs-mounted-after.txt || true
