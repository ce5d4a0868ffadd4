# lab.db is on the 9p share: every run above is in it, and it reads back here.
$AUDIOLAT runs --db lab.db > runs.txt 2> runs.err
echo "runs: exit $?"
ls -la lab.db* > db-files.txt
# A database the host left with its write-ahead log: read here, turned over whole.
$AUDIOLAT runs --groups --db prewal.db > prewal.txt 2> prewal.err
echo "runs --groups on prewal.db: exit $?"
ls -la prewal.db* > prewal-files.txt
