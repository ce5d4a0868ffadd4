//! A results database on a filesystem without shared memory for SQLite's write-ahead log
//! (section 4 of the lab): the lab's 9p share. Every check of the stock guest wrote to
//! `lab.db` there.

use results::{Journal, RunFilter, RunStatus, Store};

use crate::harness::{enabled, guest, Kernel};

#[test]
fn a_database_on_the_9p_share_falls_back_to_a_rollback_journal_and_keeps_every_run() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("80-store");
    // The first process to open it said so, once, in one line; the others did not.
    // (A first run the emulator made under-run was made again: its stderr is kept.)
    let first = if g.path("rt-1024-s16.first.err").exists() {
        g.file("rt-1024-s16.first.err")
    } else {
        g.file("rt-1024-s16.err")
    };
    let notes = first
        .lines()
        .filter(|l| l.contains("rollback journal"))
        .count();
    assert_eq!(notes, 1, "the first run should say so once:\n{first}");
    assert!(
        first.contains("lab.db is on a filesystem that cannot share SQLite's write-ahead log"),
        "{first}"
    );
    for later in ["rt-1024-s32.err", "rt-4096-float.err", "runs.err"] {
        let text = g.file(later);
        assert!(
            !text.contains("rollback journal"),
            "{later} said it again:\n{text}"
        );
    }
    // `audiolat runs` read it in the guest.
    let runs = g.file("runs.txt");
    assert!(
        runs.contains("roundtrip") && runs.contains("event") && runs.contains("jitter"),
        "{runs}"
    );
    // Every run came back to this machine, closed; here (a local filesystem) the
    // database opens with its write-ahead log again.
    let store = Store::open_existing(&g.path("lab.db")).expect("lab.db came back");
    assert_eq!(store.journal(), &Journal::Wal);
    let all = store.list_runs(&RunFilter::default()).unwrap();
    assert!(all.len() >= 15, "{} runs", all.len());
    for r in &all {
        assert_eq!(
            r.status,
            RunStatus::Complete,
            "run {} {}: {:?}",
            r.id,
            r.probe,
            r.error
        );
    }
}

#[test]
fn a_wal_database_on_the_9p_share_is_read_and_turned_over_whole() {
    if !enabled() {
        return;
    }
    let g = guest(Kernel::Stock);
    g.ok("80-store");
    let groups = g.file("prewal.txt");
    assert!(
        groups.contains("made on the host, left in WAL mode"),
        "the group in the write-ahead log was lost:\n{groups}\n{}",
        g.file("prewal.err")
    );
    assert!(
        g.file("prewal.err").contains("rollback journal"),
        "turning it over is said: {}",
        g.file("prewal.err")
    );
    let files = g.file("prewal-files.txt");
    assert!(
        !files.contains("prewal.db-wal"),
        "the log was not folded in:\n{files}"
    );
}
