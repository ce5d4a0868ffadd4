# doctor on the PREEMPT_RT kernel (debugfs is left unmounted here too, and must stay so:
# doctor mounts it only to read a PREEMPT_DYNAMIC mode).
$AUDIOLAT doctor --json > doctor.json
echo "doctor exit $?"
grep -c " /sys/kernel/debug " /proc/mounts > debugfs-mounted-after.txt || true
