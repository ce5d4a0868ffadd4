# lab.db is on the 9p share: every run above is in it, and it reads back here.
$AUDIOLAT runs --db lab.db > runs.txt 2> runs.err
echo "runs: exit $?"
ls -la lab.db* > db-files.txt
