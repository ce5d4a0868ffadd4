//! The quantum as a setting on a real private PipeWire: `clock.force-quantum` set, the
//! graph's quantum measured (a JACK client's `nframes`), the previous value restored
//! after the guard drops and after an error, and a quantum the graph rounds refused
//! naming what it granted. Requires PipeWire and pipewire-jack (scripts/install-deps).
//!
//! A test binary of its own: it loads PipeWire's libjack for good.

mod common;

use engine::jack::via_pipewire::SERVER_NAME;
use engine::pipewire::quantum::{
    measure_quantum, read_settings, ForcedQuantum, QuantumError, FORCE_QUANTUM_KEY,
};
use engine::pipewire::PipewireServer;
use std::time::Duration;

/// Generous: a loaded machine, not a measurement.
const TIMEOUT: Duration = Duration::from_secs(10);

fn force_quantum_setting(server: &PipewireServer) -> String {
    read_settings(&server.client_env())
        .unwrap()
        .get(FORCE_QUANTUM_KEY)
        .cloned()
        .unwrap_or_else(|| "0".into())
}

fn apply(server: &PipewireServer, quantum: u32) -> Result<ForcedQuantum, QuantumError> {
    ForcedQuantum::apply(server.client_env(), SERVER_NAME, quantum, None, TIMEOUT)
}

/// One test: one private PipeWire, one libjack for the process.
#[test]
fn forced_quanta_are_granted_measured_and_restored() {
    common::require_pipewire_jack();
    let (server, _info) = engine::jack::via_pipewire::start(None, None, TIMEOUT).unwrap();
    let before = force_quantum_setting(&server);
    assert_eq!(before, "0", "a fresh private PipeWire forces nothing");
    assert_eq!(measure_quantum(SERVER_NAME, None, TIMEOUT).unwrap(), 1024);

    let q128 = apply(&server, 128).unwrap();
    assert_eq!((q128.asked(), q128.granted()), (128, 128));
    assert_eq!(q128.previous(), &[(FORCE_QUANTUM_KEY, "0".to_string())]);
    assert_eq!(force_quantum_setting(&server), "128");
    let q256 = apply(&server, 256).unwrap();
    assert_eq!((q256.asked(), q256.granted()), (256, 256));
    assert_eq!(measure_quantum(SERVER_NAME, None, TIMEOUT).unwrap(), 256);

    drop(q256);
    assert_eq!(force_quantum_setting(&server), "128");
    assert_eq!(
        measure_quantum(SERVER_NAME, Some(128), TIMEOUT).unwrap(),
        128
    );
    drop(q128);
    assert_eq!(force_quantum_setting(&server), before);
    assert_eq!(
        measure_quantum(SERVER_NAME, Some(1024), TIMEOUT).unwrap(),
        1024
    );

    // Rounded down to a power of two by the graph: refused, naming what it granted,
    // and the previous value is back after the error.
    match apply(&server, 3000) {
        Err(e @ QuantumError::NotGranted { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("3000") && text.contains("granted 2048"),
                "{text}"
            );
        }
        other => panic!("3000 frames must be refused, got {other:?}"),
    }
    assert_eq!(force_quantum_setting(&server), before);
    assert_eq!(
        measure_quantum(SERVER_NAME, Some(1024), TIMEOUT).unwrap(),
        1024
    );
}
