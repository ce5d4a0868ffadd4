//! One process, one libjack: once a JACK client has loaded jackd2's libjack, a private
//! PipeWire through its JACK API is refused with a typed error, and nothing is started.
//! A test binary of its own (the libjack it loads stays loaded).

use engine::audio::AudioError;
use engine::jack::server::{probe, JackServer, ServerMode, ServerRequest};
use engine::jack::via_pipewire::loaded_libjacks;
use std::time::Duration;

#[test]
fn pipewire_is_refused_once_jackd2s_libjack_is_loaded() {
    // Any libjack call loads the system's libjack (jackd2's).
    let _ = probe("audiolat-no-such-server");
    let loaded = loaded_libjacks();
    assert!(
        !loaded.is_empty()
            && loaded
                .iter()
                .all(|l| !l.to_string_lossy().contains("pipewire")),
        "jackd2's libjack (libjack-jackd2-0) should be loaded: {loaded:?}"
    );
    let req = ServerRequest {
        mode: ServerMode::Pipewire,
        name: None,
        rate_hz: None,
        period_frames: None,
        jackd: None,
        start_timeout: Duration::from_secs(10),
    };
    let e = JackServer::connect(&req).unwrap_err();
    assert!(matches!(e, AudioError::OtherLibjackLoaded(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("one libjack"), "{text}");
    assert!(text.contains(&loaded[0].display().to_string()), "{text}");
}
