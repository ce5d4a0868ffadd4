//! `--server pipewire` in the engine: a JACK client of this process reaches a private
//! headless PipeWire through PipeWire's libjack, and sees the null sink's ports. Requires
//! PipeWire and pipewire-jack (scripts/install-deps installs them) and names the package
//! that is missing.
//!
//! A test binary of its own: once PipeWire's libjack is loaded, it is this process's
//! libjack for good (jackd2's can no longer be used here).

mod common;

use engine::jack::server::{open_client, JackServer, ServerMode, ServerRequest};
use engine::jack::via_pipewire::{loaded_libjacks, sink_port, SERVER_NAME};
use std::time::{Duration, Instant};

/// Whether `pid` still has a /proc entry (running, or a zombie not yet reaped).
fn has_proc_entry(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_jack_client_reaches_the_private_pipewire_and_sees_the_sinks_ports() {
    common::require_pipewire_jack();
    let req = ServerRequest {
        mode: ServerMode::Pipewire,
        name: None,
        rate_hz: None,
        period_frames: None,
        jackd: None,
        start_timeout: Duration::from_secs(10),
    };
    let server = JackServer::connect(&req).expect("a private PipeWire");
    let info = server.info().clone();
    assert_eq!(info.name, SERVER_NAME);
    assert!(info.private);
    let version = info.version.clone().unwrap();
    assert!(
        version.starts_with("PipeWire 0.") || version.starts_with("PipeWire 1."),
        "{version}"
    );
    assert!(version.contains(", WirePlumber "), "{version}");
    assert!(!version.contains("unknown"), "{version}");
    assert!(
        info.command_line
            .as_deref()
            .unwrap()
            .contains("pipewire -c "),
        "{info:?}"
    );
    // This process's libjack is PipeWire's, and only that one.
    let loaded = loaded_libjacks();
    assert!(!loaded.is_empty());
    assert!(
        loaded
            .iter()
            .all(|l| l.to_string_lossy().contains("/pipewire-0.3/jack/")),
        "{loaded:?}"
    );

    let client = open_client(server.name(), "audiolat-pwtest").expect("a JACK client");
    assert_eq!(client.sample_rate(), 48_000);
    let inputs = client.ports(None, None, jack::PortFlags::IS_INPUT);
    let outputs = client.ports(None, None, jack::PortFlags::IS_OUTPUT);
    for port in ["playback_FL", "playback_FR"] {
        assert!(inputs.contains(&sink_port(port)), "{port}: {inputs:?}");
    }
    for port in ["monitor_FL", "monitor_FR"] {
        assert!(outputs.contains(&sink_port(port)), "{port}: {outputs:?}");
    }
    drop(client);

    let pids = server.pipewire().unwrap().info().pids;
    assert_eq!(server.pid(), Some(pids.pipewire));
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    let all = [pids.dbus_daemon, pids.pipewire, pids.wireplumber];
    while all.iter().any(|p| has_proc_entry(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in all {
        assert!(
            !has_proc_entry(pid),
            "process {pid} left after the server dropped"
        );
    }
    // PipeWire's libjack stays this process's: a jackd server is refused, not reached
    // through PipeWire's library.
    let jackd = ServerRequest {
        mode: ServerMode::Dummy,
        jackd: Some("/usr/bin/jackd".into()),
        ..req
    };
    match JackServer::connect(&jackd) {
        Err(engine::audio::AudioError::OtherLibjackLoaded(path)) => {
            assert!(path.contains("/pipewire-0.3/"), "{path}")
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a jackd server was used through PipeWire's libjack"),
    }
}
