//! One end of a two-machine run's configuration as stored (`net respond`, `net
//! emulate`): the [`NetEndConfig`] its [`HostSetup`] or [`ControllerSetup`] describes.

use netaudio::ends::{ControllerSetup, HostSetup};
use results::records::net::{EmulateConfig, NetEndConfig, RespondConfig};

use super::wire;

/// A host's configuration as stored (role `respond`; times in seconds, the deadline in
/// ns).
pub fn respond_config(setup: &HostSetup) -> NetEndConfig {
    NetEndConfig::Respond(RespondConfig {
        bind: setup.bind.to_string(),
        peer: setup.peer.map(|p| p.to_string()),
        synth: setup.synth,
        workers: setup.workers,
        poll: setup.poll.to_string(),
        cpus: setup.cpus.clone(),
        warmup_s: setup.warmup.as_secs_f64(),
        duration_s: setup.serve_for.map(|d| d.as_secs_f64()),
        deadline_ns: wire::DEADLINE_NS,
    })
}

/// A controller's configuration as stored (role `emulate`; times in seconds, the
/// deadline in ns).
pub fn emulate_config(setup: &ControllerSetup) -> NetEndConfig {
    NetEndConfig::Emulate(EmulateConfig {
        host: setup.host.to_string(),
        bind: setup.bind.to_string(),
        pads: setup.pads,
        x: setup.x,
        y: setup.y,
        pressure: setup.pressure,
        cpus: setup.cpus.clone(),
        duration_s: setup.duration.as_secs_f64(),
        warmup_s: setup.warmup.as_secs_f64(),
        deadline_ns: wire::DEADLINE_NS,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use engine::rt::Policy;
    use netaudio::host;
    use results::records::Record;
    use serde_json::json;

    use super::*;

    /// What each end stores, key for key as before its record: the record writes it and
    /// reads it back unchanged.
    #[test]
    fn each_ends_configuration_is_stored_as_its_record() {
        let host = HostSetup {
            bind: "127.0.0.1:9700".parse().unwrap(),
            peer: None,
            serve_for: None,
            warmup: Duration::from_secs(1),
            synth: true,
            workers: 2,
            poll: host::PollMode::Spin,
            policy: Policy::Other { nice: 0 },
            cpus: Some(vec![1, 2]),
        };
        let stored = respond_config(&host).to_json();
        assert_eq!(
            stored,
            json!({"role": "respond", "bind": "127.0.0.1:9700", "peer": null, "synth": true,
                "workers": 2, "poll": "spin", "cpus": [1, 2], "warmup_s": 1.0,
                "duration_s": null, "deadline_ns": wire::DEADLINE_NS})
        );
        assert_eq!(
            NetEndConfig::from_json(&stored),
            Some(respond_config(&host))
        );
        let controller = ControllerSetup {
            host: "10.0.0.2:9700".parse().unwrap(),
            bind: "0.0.0.0:9701".parse().unwrap(),
            duration: Duration::from_millis(2500),
            warmup: Duration::from_secs(1),
            pads: 8,
            x: 0.5,
            y: 0.25,
            pressure: 0.8,
            policy: Policy::Other { nice: 0 },
            cpus: None,
        };
        let stored = emulate_config(&controller).to_json();
        assert_eq!(
            stored,
            json!({"role": "emulate", "host": "10.0.0.2:9700", "bind": "0.0.0.0:9701",
                "pads": 8, "x": 0.5_f32, "y": 0.25_f32, "pressure": 0.8_f32, "cpus": null,
                "duration_s": 2.5, "warmup_s": 1.0, "deadline_ns": wire::DEADLINE_NS})
        );
        assert_eq!(
            NetEndConfig::from_json(&stored),
            Some(emulate_config(&controller))
        );
    }
}
