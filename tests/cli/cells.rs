//! Cells and namespaces left on the machine: undone by the next measuring command or
//! `doctor --fix`, named when they cannot be, never taken from a running audiolat; and
//! refusals for want of root.

use std::time::Duration;

use results::{RunFilter, Store};

use crate::util::{
    self, machine_lock, not_root, require_tool, run, run_json, spawn, temp_db, tempdir,
    wait_timeout,
};

/// The CPUs a new process may run on (its `Cpus_allowed_list`).
fn new_process_cpus() -> String {
    let out = std::process::Command::new("grep")
        .args(["Cpus_allowed_list", "/proc/self/status"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

fn root_load_balance() -> String {
    std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Nothing of audiolat `pid` left: no cpuset, cpuacct group, namespace (and so no
/// qdisc), veth or state file.
fn assert_nothing_left_by(pid: u32) {
    let named = |dir: &str, prefix: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(prefix))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (dir, prefix) in [
        ("/sys/fs/cgroup/cpuset", format!("audiolat-{pid}-")),
        ("/sys/fs/cgroup/cpuacct", format!("audiolat-{pid}-")),
        ("/sys/fs/cgroup", format!("audiolat-{pid}")),
        ("/run/audiolat", format!("cells-{pid}.")),
        ("/var/run/netns", format!("al-host-{pid}")),
        ("/var/run/netns", format!("al-ctl-{pid}")),
        ("/sys/class/net", format!("alh{pid}")),
        ("/sys/class/net", format!("alc{pid}")),
    ] {
        let left = named(dir, &prefix);
        assert!(left.is_empty(), "left in {dir}: {left:?}");
    }
}

/// Starts a net run with a dedicated cell, a best-effort cell, namespaces and a shaped
/// link, and waits until it has changed the machine (cpusets made, load balancing off,
/// namespaces and the qdisc there).
fn start_cells_and_netns_run(db: &std::path::Path) -> util::KillOnDrop {
    let child = util::KillOnDrop(spawn(db, &[CELLS_AND_NETNS_RUN, &["--quiet"]].concat()));
    wait_until_cells_and_netns_are_made(child.id());
    child
}

/// A net run with a dedicated cell, a best-effort cell, namespaces and a shaped link.
const CELLS_AND_NETNS_RUN: &[&str] = &[
    "net",
    "--netns",
    "--cell",
    "music=dedicated:cpus=1",
    "--cell",
    "others=best-effort",
    "--host-cell",
    "music",
    "--link",
    "100",
    "--reserve",
    "20",
    "--duration",
    "30s",
    "--no-reference",
    "--warmup",
    "300ms",
];

/// Until the net run of audiolat `pid` has changed the machine (cpusets made, load
/// balancing off, namespaces and the qdisc there).
fn wait_until_cells_and_netns_are_made(pid: u32) {
    let start = std::time::Instant::now();
    loop {
        let qdisc = std::process::Command::new("tc")
            .args(["-n", &format!("al-ctl-{pid}"), "qdisc", "show"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("htb"));
        if qdisc
            && std::path::Path::new(&format!("/sys/fs/cgroup/cpuset/audiolat-{pid}-rest")).exists()
            && root_load_balance() == "0"
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the net run never set up its cells and namespaces"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cells_and_netns_possible() -> bool {
    if not_root("cells and namespaces need root") {
        return false;
    }
    if engine::rt::online_cpus().len() < 2
        || !std::path::Path::new("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance").exists()
    {
        eprintln!("skipped: needs two CPUs and the cgroup v1 cpuset hierarchy");
        return false;
    }
    require_tool("ip", "iproute2");
    require_tool("tc", "iproute2");
    true
}

/// SIGKILL during a net run with cells and namespaces leaves the machine changed:
/// `doctor` says so (FAIL, with the fix), and the next measuring command undoes all of
/// it first and says so in one line: no cpuset, namespace, qdisc or state file left,
/// the root's load balancing and every new process's CPUs as they were.
#[test]
fn a_killed_runs_cpusets_namespaces_and_state_are_undone_by_the_next_measuring_command() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let balance_before = root_load_balance();
    let cpus_before = new_process_cpus();
    let online = engine::rt::format_cpu_list(&engine::rt::online_cpus());
    assert_eq!(cpus_before, online);
    // A task pinned to CPU 1 is moved onto CPU 0 by the run; it gets CPU 1 back.
    let pinned = util::KillOnDrop(
        std::process::Command::new("taskset")
            .args(["-c", "1", "sleep", "120"])
            .spawn()
            .unwrap(),
    );
    let pinned_cpus = || {
        qos::partition::task_affinity(pinned.id() as i32).map(|a| engine::rt::format_cpu_list(&a))
    };
    let start = std::time::Instant::now();
    while pinned_cpus().as_deref() != Some("1")
        || std::fs::read_to_string(format!("/proc/{}/comm", pinned.id())).unwrap_or_default()
            != "sleep\n"
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "taskset did not pin"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (_dir, db) = temp_db("killed.db");
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // Left as the kill found it.
    assert_eq!(root_load_balance(), "0");
    assert_ne!(new_process_cpus(), online, "new processes are not confined");
    assert_eq!(pinned_cpus().as_deref(), Some("0"));
    assert!(std::path::Path::new(&format!("/run/audiolat/cells-{pid}.json")).exists());
    assert!(std::path::Path::new(&format!("/var/run/netns/al-host-{pid}")).exists());
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "100ms"]);
    let finding = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "system.leftovers")
        .unwrap()
        .clone();
    assert_eq!(finding["verdict"], "fail", "{finding}");
    let value = finding["value"].as_str().unwrap();
    for needle in [
        format!("audiolat PID {pid} (no longer running) left"),
        format!("audiolat-{pid}-rest"),
        "sched_load_balance 0".to_string(),
        format!("network namespace al-ctl-{pid} (with 1 tc HTB qdisc)"),
        format!("cells-{pid}.json"),
    ] {
        assert!(value.contains(&needle), "{needle}: {value}");
    }
    assert!(finding["fix"].as_str().unwrap().contains("doctor --fix"));
    // The next measuring command undoes it first, and says so.
    let out = run(&db, &["jitter", "--loops", "50", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said: Vec<&str> = out.stderr.lines().filter(|l| l.contains("undid")).collect();
    assert_eq!(said.len(), 1, "{}", out.stderr);
    assert!(
        said[0].starts_with(&format!(
            "audiolat: undid what audiolat PID {pid} left when it was killed: "
        )),
        "{}",
        said[0]
    );
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
    let own = engine::rt::format_cpu_list(&qos::partition::task_affinity(0).unwrap());
    assert_eq!(own, online, "this test's own affinity");
    assert_eq!(
        pinned_cpus().as_deref(),
        Some("1"),
        "a pinned task's affinity"
    );
    // Nothing left to say the next time.
    let again = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("undid"), "{}", again.stderr);
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "100ms"]);
    assert!(doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "system.leftovers" && f["verdict"] == "ok"));
}

/// Two SIGTERMs in quick succession during the same run: whether the run undoes its
/// own state or is cut short, nothing is left once the next measuring command has run,
/// and the machine's CPUs are as they were.
#[test]
fn two_sigterms_during_a_cells_and_netns_run_leave_nothing_behind() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let balance_before = root_load_balance();
    let cpus_before = new_process_cpus();
    let (_dir, db) = temp_db("twice.db");
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    for _ in 0..2 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = wait_timeout(&mut child.0, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    // The run put the machine back itself, the second signal notwithstanding.
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
    let out = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("undid"), "{}", out.stderr);
    // Killed outright, its state is undone by `doctor --fix` as well.
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert_eq!(root_load_balance(), "0");
    let fix = run(&db, &["doctor", "--fix", "--steal-window", "100ms"]);
    assert!(
        fix.stderr
            .contains(&format!("undid what audiolat PID {pid} left")),
        "{fix:?}"
    );
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
}

/// A celled net run whose terminal hangs up (closed, an ssh session dropped) puts the
/// machine back itself, as Ctrl-C does: exit 130, no cpuset, namespace, qdisc or state
/// file left, load balancing and every new process's CPUs as they were, nothing for the
/// next run to undo, and the run stored `interrupted` with what it measured.
#[test]
fn a_hang_up_during_a_cells_and_netns_run_leaves_the_machine_as_it_was() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let balance_before = root_load_balance();
    let cpus_before = new_process_cpus();
    let (_dir, db) = temp_db("hup.db");
    let mut term = util::OnTerminal::spawn(&db, CELLS_AND_NETNS_RUN);
    let pid = term.id();
    wait_until_cells_and_netns_are_made(pid);
    // Past the warm-up, measuring (a net run stores what it measured at its end).
    std::thread::sleep(Duration::from_millis(3000));
    let printed = term.printed();
    term.hang_up();
    let status = term.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}\n{printed}");
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
    let store = Store::open_read_only(&db).unwrap();
    let id = store.last_run_id().unwrap().unwrap();
    assert_eq!(
        store.run(id).unwrap().status,
        results::RunStatus::Interrupted
    );
    assert!(store
        .measurements(id)
        .unwrap()
        .iter()
        .any(|m| m.measurement.metric == "response_time" && m.measurement.count() > 0));
    drop(store);
    let out = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("undid"), "{}", out.stderr);
}

/// A leftover that cannot be undone (here: a state file naming a root cpuset that is
/// not there) makes a measuring command refuse, naming it, before it stores anything;
/// `doctor --fix` says the same.
#[test]
fn a_leftover_that_cannot_be_undone_is_named_and_nothing_measures() {
    let _m = machine_lock();
    if not_root("/run/audiolat is root's") {
        return;
    }
    // A pid above pid_max: never running.
    let file = std::path::Path::new("/run/audiolat/cells-4999999.json");
    std::fs::create_dir_all("/run/audiolat").unwrap();
    let dir = tempdir();
    let missing = dir.path().join("no-such-cpuset");
    std::fs::write(
        file,
        serde_json::json!({"cpuset_root": missing, "sched_load_balance": "1"}).to_string(),
    )
    .unwrap();
    let db = dir.path().join("refused.db");
    let out = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    let fix = run(&db, &["doctor", "--fix", "--steal-window", "100ms"]);
    let _ = std::fs::remove_file(file);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("audiolat PID 4999999 (no longer running) left")
            && out.stderr.contains("could not be undone"),
        "{}",
        out.stderr
    );
    assert!(!db.exists(), "a refusal stored something");
    assert_eq!(fix.code, 2, "{fix:?}");
    assert!(fix.stderr.contains("4999999"), "{}", fix.stderr);
}

/// A second `net` wanting a CPU another running audiolat's dedicated cell holds is
/// refused before anything starts, naming the holder (exit 2, one line, no run stored);
/// a measuring command meanwhile leaves the running audiolat's cells alone.
#[test]
fn a_cpu_another_audiolat_holds_is_refused_naming_it_and_nothing_is_stored() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let dir = tempdir();
    let first_db = dir.path().join("first.db");
    let mut first = util::KillOnDrop(spawn(
        &first_db,
        &[
            "net",
            "--cell",
            "music=dedicated:cpus=1",
            "--host-cell",
            "music",
            // Ended by the test's Ctrl-C, long before: the commands below must find it
            // running however slowly a busy machine (every other task squeezed onto the
            // CPUs the cell leaves) starts them.
            "--duration",
            "300s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--quiet",
        ],
    ));
    let pid = first.id();
    let music = format!("/sys/fs/cgroup/cpuset/audiolat-{pid}-music");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(format!("{music}/cpuset.cpu_exclusive"))
        .map(|s| s.trim() != "1")
        .unwrap_or(true)
        || root_load_balance() != "0"
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no cell appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let second_db = dir.path().join("second.db");
    let out = run(
        &second_db,
        &[
            "net",
            "--cell",
            "m2=dedicated:cpus=1",
            "--duration",
            "1s",
            "--no-reference",
        ],
    );
    // Threads pinned to the held CPU outside any cell: refused the same way, by every
    // command that pins them (a jitter run would otherwise run on CPU 0 and say
    // `complete`).
    let pinned: Vec<util::Output> = [
        &["jitter", "--cpu", "1", "--duration", "1s"][..],
        &[
            "net",
            "--host-cpus",
            "1",
            "--duration",
            "1s",
            "--no-reference",
        ],
        &[
            "net",
            "--controller-cpus",
            "0,1",
            "--duration",
            "1s",
            "--no-reference",
        ],
        &[
            "net",
            "respond",
            "--cpus",
            "1",
            "-D",
            "1s",
            "--bind",
            "127.0.0.1:19740",
        ],
        &[
            "net",
            "emulate",
            "--cpus",
            "1",
            "-D",
            "1s",
            "--host",
            "127.0.0.1:19741",
            "--bind",
            "127.0.0.1:19742",
        ],
    ]
    .iter()
    .map(|args| run(&second_db, args))
    .collect();
    // A measuring command while the first runs: its cells are not a dead audiolat's.
    let jitter = run(&second_db, &["jitter", "--loops", "10", "--quiet"]);
    let still_there = std::path::Path::new(&music).exists() && root_load_balance() == "0";
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_timeout(&mut first.0, Duration::from_secs(60));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "CPU 1 is held by audiolat PID {pid} (its cell `music`)"
        )),
        "{}",
        out.stderr
    );
    for out in &pinned {
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "CPU 1 is held by audiolat PID {pid} (its cell `music`): wait for that run to end, or pin the threads to other CPUs"
            )),
            "{}",
            out.stderr
        );
    }
    assert_eq!(jitter.code, 0, "{}", jitter.stderr);
    assert!(!jitter.stderr.contains("undid"), "{}", jitter.stderr);
    assert!(still_there, "a running audiolat's cells were touched");
    // Only the jitter run was stored: the refusal stored nothing.
    let store = Store::open_existing(&second_db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].probe.name, "jitter");
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_nothing_left_by(pid);
}

/// Refusals of an ordinary user store nothing: `--netns` (namespaces need root) is
/// refused before the database opens, and a dedicated cell (moving other tasks needs
/// root) before a run is begun.
#[test]
fn refusals_for_want_of_root_store_no_run() {
    if not_root("this test drops root itself, with setpriv") {
        return;
    }
    let dir = tempdir();
    // The user `nobody` writes the database here.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = dir.path().join("user.db");
    let as_nobody = |args: &[&str]| {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(util::bin())
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .expect("running audiolat under setpriv (util-linux)");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = as_nobody(&["net", "--netns", "--duration", "1s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--netns makes network namespaces, which needs root"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!db.exists(), "a refusal opened the database");
    if engine::rt::online_cpus().len() >= 2 {
        let (code, stderr) = as_nobody(&[
            "net",
            "--cell",
            "music=dedicated:cpus=1",
            "--duration",
            "1s",
            "--no-reference",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("needs root"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        if db.exists() {
            let runs = Store::open_existing(&db)
                .unwrap()
                .list_runs(&RunFilter::default())
                .unwrap();
            assert!(runs.is_empty(), "a refusal stored {runs:?}");
        }
    }
}
