//! `audiolat doctor` on a running PipeWire: a private one this test starts (the engine's
//! `PipewireServer`), doctor pointed at it with its client environment, with
//! `clock.force-quantum` left at 256 by the test. The references: the value the test
//! set, and PipeWire's data thread's priority as `/proc` shows it (module-rt's 88 as
//! root). Without a PipeWire, doctor's PipeWire findings are absent.

use std::process::Command;
use std::time::Duration;

use engine::pipewire::{PipewireRequest, PipewireServer};
use serde_json::Value;

use crate::util::{command, machine_lock, output, parse_json, require_pipewire, require_tool};

fn doctor(env: &[(&'static str, std::ffi::OsString)]) -> Value {
    let mut cmd = command(
        std::path::Path::new("unused.db"),
        &["doctor", "--json", "--steal-window", "100ms"],
    );
    cmd.env_remove("PIPEWIRE_RUNTIME_DIR")
        .env_remove("PIPEWIRE_REMOTE");
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = output(&mut cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    parse_json(&out.stdout)
}

fn finding<'a>(v: &'a Value, check: &str) -> Option<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
}

/// The highest SCHED_FIFO priority of the `pipewire` process's threads, by `ps`.
fn fifo_priority_by_ps(pid: u32) -> Option<u32> {
    let out = Command::new("ps")
        .args(["-L", "-o", "cls=,rtprio=", "-p", &pid.to_string()])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next()? == "FF").then(|| f.next()?.parse().ok())?
        })
        .max()
}

#[test]
fn doctor_reports_a_running_pipewire_its_forced_quantum_and_priority() {
    require_pipewire();
    require_tool("pw-metadata", "pipewire-bin");
    let _m = machine_lock();
    let empty_runtime = crate::util::tempdir();
    // No PipeWire where doctor looks: no PipeWire findings, the libjack one as ever.
    let none = doctor(&[("XDG_RUNTIME_DIR", empty_runtime.path().into())]);
    assert!(finding(&none, "pipewire.force_quantum").is_none(), "{none}");
    assert!(finding(&none, "pipewire.rt_priority").is_none(), "{none}");
    assert!(finding(&none, "jack.libjack").is_some(), "{none}");

    let server = PipewireServer::start(&PipewireRequest {
        start_timeout: Duration::from_secs(10),
        ..Default::default()
    })
    .expect("a private PipeWire");
    let env = server.client_env();
    let set = Command::new("pw-metadata")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(["-n", "settings", "0", "clock.force-quantum", "256"])
        .output()
        .expect("pw-metadata");
    assert!(set.status.success());
    let v = doctor(&env);
    let servers = finding(&v, "audio.servers").unwrap();
    assert!(
        servers["value"].as_str().unwrap().contains("PipeWire"),
        "{servers}"
    );

    let forced = finding(&v, "pipewire.force_quantum").expect("the forced quantum");
    assert_eq!(forced["verdict"], "warn", "{forced}");
    assert!(
        forced["value"]
            .as_str()
            .unwrap()
            .contains("clock.force-quantum 256"),
        "{forced}"
    );
    assert!(
        forced["fix"]
            .as_str()
            .unwrap()
            .contains("pw-metadata -n settings 0 clock.force-quantum 0"),
        "{forced}"
    );

    let pid = server.info().pids.pipewire;
    let reference = fifo_priority_by_ps(pid).expect("PipeWire's FIFO thread, by ps");
    assert_eq!(reference, 88, "module-rt's default as root");
    let prio = finding(&v, "pipewire.rt_priority").expect("the priority");
    let value = prio["value"].as_str().unwrap();
    assert!(
        value.starts_with(&format!("SCHED_FIFO {reference} ")),
        "{prio}"
    );
    assert!(value.contains("above the probe's FIFO 80"), "{prio}");
    assert_eq!(prio["verdict"], "warn", "{prio}");
    assert!(
        prio["fix"].as_str().unwrap().contains("--priority"),
        "{prio}"
    );
    let source = finding(&v, "pipewire.rt_source").expect("the priority's source");
    if !crate::util::not_root("PipeWire runs as root only when the test does") {
        assert_eq!(source["value"], "root", "{source}");
    }
}

/// doctor looks for PipeWire where a client does: `$PIPEWIRE_REMOTE` names the socket
/// (here a link named `my-pipewire` to a private PipeWire's), not always `pipewire-0`.
#[test]
fn doctor_finds_the_pipewire_that_pipewire_remote_names() {
    require_pipewire();
    require_tool("pw-metadata", "pipewire-bin");
    let _m = machine_lock();
    let server = PipewireServer::start(&PipewireRequest {
        start_timeout: Duration::from_secs(10),
        ..Default::default()
    })
    .expect("a private PipeWire");
    let set = Command::new("pw-metadata")
        .envs(server.client_env())
        .args(["-n", "settings", "0", "clock.force-quantum", "128"])
        .output()
        .expect("pw-metadata");
    assert!(set.status.success());
    let elsewhere = crate::util::tempdir();
    let link = elsewhere.path().join("my-pipewire");
    std::os::unix::fs::symlink(server.info().runtime_dir.join("pipewire-0"), &link).unwrap();
    let v = doctor(&[
        ("XDG_RUNTIME_DIR", elsewhere.path().into()),
        ("PIPEWIRE_RUNTIME_DIR", elsewhere.path().into()),
        ("PIPEWIRE_REMOTE", "my-pipewire".into()),
    ]);
    let forced = finding(&v, "pipewire.force_quantum").expect("the forced quantum");
    assert!(
        forced["value"]
            .as_str()
            .unwrap()
            .contains("clock.force-quantum 128"),
        "{forced}"
    );
}
