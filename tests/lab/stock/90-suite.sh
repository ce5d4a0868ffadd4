# The lab's answer to "stock or PREEMPT_RT?": the same suite in each guest, into one
# database on the shared directory; the test compares the two groups.
$AUDIOLAT suite --each 1s --db ../suite.db > suite.txt 2>&1
echo "suite: exit $?"
