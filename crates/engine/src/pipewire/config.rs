//! The private daemon's configuration file: self-contained, so that `pipewire -c FILE`
//! reads nothing from `~/.config`, `/etc/pipewire` or `/usr/share/pipewire` (it still
//! reads `FILE.d/`, which audiolat never creates).
//!
//! It loads the modules a headless graph needs (real-time, the native protocol, the
//! profiler, metadata, the node and device factories, access, the adapter, links and the
//! session manager for WirePlumber), the dummy and freewheel drivers, and the null sink
//! [`SINK_NODE_NAME`] as a `context.objects` entry, so the sink exists from the start.
//! The stock `pipewire.conf` raises `default.clock.min-quantum` to 1024 on virtual
//! machines (`vm.overrides`); this one keeps the minimum asked for there too.

/// The null sink's `node.name` and `node.description`. PipeWire's JACK API names ports
/// after the description, so the two are equal: the ports are `audiolat-sink:playback_FL`,
/// `audiolat-sink:playback_FR`, `audiolat-sink:monitor_FL` and `audiolat-sink:monitor_FR`.
pub const SINK_NODE_NAME: &str = "audiolat-sink";

/// The clock settings written into the daemon's `context.properties`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSettings {
    /// `default.clock.rate`.
    pub rate_hz: u32,
    /// `default.clock.quantum`: the graph's quantum when no client asks for another.
    pub quantum_frames: u32,
    /// `default.clock.min-quantum`, also written into `vm.overrides`.
    pub min_quantum_frames: u32,
    /// `default.clock.max-quantum`.
    pub max_quantum_frames: u32,
}

/// The text of the daemon's configuration file for `clock`.
pub fn daemon_config(clock: &ClockSettings) -> String {
    let ClockSettings {
        rate_hz,
        quantum_frames,
        min_quantum_frames,
        max_quantum_frames,
    } = *clock;
    format!(
        r#"# Private PipeWire daemon for audiolat, written by audiolat for this server only.
# Self-contained: loaded with `pipewire -c <this file>`.
context.properties = {{
    link.max-buffers          = 16
    core.daemon               = true
    core.name                 = pipewire-0
    default.clock.rate        = {rate_hz}
    default.clock.quantum     = {quantum_frames}
    default.clock.min-quantum = {min_quantum_frames}
    default.clock.max-quantum = {max_quantum_frames}
    vm.overrides = {{ default.clock.min-quantum = {min_quantum_frames} }}
}}
context.spa-libs = {{
    audio.convert.* = audioconvert/libspa-audioconvert
    support.*       = support/libspa-support
}}
context.modules = [
    {{ name = libpipewire-module-rt
      args = {{ nice.level = -11 rt.prio = 88 }}
      flags = [ ifexists nofail ] }}
    {{ name = libpipewire-module-protocol-native }}
    {{ name = libpipewire-module-profiler }}
    {{ name = libpipewire-module-metadata }}
    {{ name = libpipewire-module-spa-device-factory }}
    {{ name = libpipewire-module-spa-node-factory }}
    {{ name = libpipewire-module-client-node }}
    {{ name = libpipewire-module-client-device }}
    {{ name = libpipewire-module-access args = {{ }} }}
    {{ name = libpipewire-module-adapter }}
    {{ name = libpipewire-module-link-factory }}
    {{ name = libpipewire-module-session-manager }}
]
context.objects = [
    {{ factory = spa-node-factory
      args = {{ factory.name = support.node.driver node.name = Dummy-Driver
               node.group = pipewire.dummy priority.driver = 20000 }} }}
    {{ factory = spa-node-factory
      args = {{ factory.name = support.node.driver node.name = Freewheel-Driver
               priority.driver = 19000 node.group = pipewire.freewheel node.freewheel = true }} }}
    {{ factory = adapter
      args = {{ factory.name     = support.null-audio-sink
               node.name        = {SINK_NODE_NAME}
               node.description = "{SINK_NODE_NAME}"
               media.class      = Audio/Sink
               audio.position   = [ FL FR ]
               monitor.channel-volumes = true
               object.linger    = true }} }}
]
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_holds_the_clock_and_the_null_sink() {
        let text = daemon_config(&ClockSettings {
            rate_hz: 44_100,
            quantum_frames: 256,
            min_quantum_frames: 32,
            max_quantum_frames: 4096,
        });
        for needle in [
            "default.clock.rate        = 44100",
            "default.clock.quantum     = 256",
            "default.clock.min-quantum = 32",
            "default.clock.max-quantum = 4096",
            "vm.overrides = { default.clock.min-quantum = 32 }",
            "factory.name     = support.null-audio-sink",
            "node.name        = audiolat-sink",
            "node.description = \"audiolat-sink\"",
            "audio.position   = [ FL FR ]",
        ] {
            assert!(text.contains(needle), "missing `{needle}` in\n{text}");
        }
        // Balanced braces and brackets: a typo here is a daemon that will not start.
        let count = |c| text.chars().filter(|x| *x == c).count();
        assert_eq!(count('{'), count('}'));
        assert_eq!(count('['), count(']'));
    }
}
