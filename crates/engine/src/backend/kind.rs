//! Which backend a stream or a spec is for ([`BackendKind`]), its name written once: the
//! name a stream's facts and a run's record carry (its `Display`), and what a backend
//! does, asked of its kind rather than of its name. A leaf: a stream's facts
//! ([`StreamInfo::backend`](crate::audio::StreamInfo::backend)) carry a kind.

/// Which backend a spec or a stream is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// A JACK client.
    Jack,
    /// An ALSA device.
    Alsa,
    /// The virtual card.
    Virtual,
    /// Native PipeWire streams.
    Pipewire,
}

impl BackendKind {
    /// The backend's name, as a run stores it: `jack`, `alsa`, `virtual` or `pipewire`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Jack => "jack",
            BackendKind::Alsa => "alsa",
            BackendKind::Virtual => "virtual",
            BackendKind::Pipewire => "pipewire",
        }
    }

    /// Whether its streams are clients of an audio server (JACK, PipeWire), whose facts
    /// (name, command line, version) describe where they run; ALSA devices and the virtual
    /// card are opened by audiolat itself.
    pub fn is_server_client(self) -> bool {
        matches!(self, BackendKind::Jack | BackendKind::Pipewire)
    }

    /// Whether its streams open a device that grants its own settings (ALSA: format,
    /// buffer, period, link).
    pub fn has_device_grant(self) -> bool {
        matches!(self, BackendKind::Alsa)
    }

    /// Whether the backend pulls audio from audiolat (a server calls its process
    /// callback each cycle: JACK, PipeWire), rather than audiolat pushing it (its own
    /// thread writes into a device's buffer: ALSA, the virtual card).
    pub fn is_pull(self) -> bool {
        matches!(self, BackendKind::Jack | BackendKind::Pipewire)
    }

    /// Whether its streams connect to ports the user names (`--playback-port`,
    /// `--capture-port`, `--midi-port`): JACK's. PipeWire's native streams follow the
    /// session manager's links instead.
    pub fn has_ports(self) -> bool {
        matches!(self, BackendKind::Jack)
    }

    /// Whether its period is a server's cycle shared by every client of the graph (JACK's
    /// buffer size, PipeWire's quantum), asked of the server rather than opened by
    /// audiolat with its own count of periods.
    pub fn has_quantum(self) -> bool {
        matches!(self, BackendKind::Jack | BackendKind::Pipewire)
    }

    /// Whether its streams are timed by a sound card's clock that audiolat opens itself
    /// (ALSA). A server's clock is its driver's (a card or a timer, the server's facts
    /// say which); the virtual card runs on CLOCK_MONOTONIC.
    pub fn timed_by_card(self) -> bool {
        matches!(self, BackendKind::Alsa)
    }

    /// Every backend.
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Jack,
        BackendKind::Alsa,
        BackendKind::Virtual,
        BackendKind::Pipewire,
    ];
}

impl std::fmt::Display for BackendKind {
    /// The backend's name ([`BackendKind::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each capability as the backends have it: a pulled stream has a server's
    /// quantum and is a server's client; a pushed one owns its buffer; only ALSA opens a
    /// card and has a grant of its own; only JACK takes port names.
    #[test]
    fn each_backend_has_its_capabilities() {
        let table: Vec<(&str, [bool; 6])> = BackendKind::ALL
            .iter()
            .map(|k| {
                (
                    k.name(),
                    [
                        k.is_pull(),
                        k.has_quantum(),
                        k.is_server_client(),
                        k.has_ports(),
                        k.timed_by_card(),
                        k.has_device_grant(),
                    ],
                )
            })
            .collect();
        assert_eq!(
            table,
            [
                ("jack", [true, true, true, true, false, false]),
                ("alsa", [false, false, false, false, true, true]),
                ("virtual", [false, false, false, false, false, false]),
                ("pipewire", [true, true, true, false, false, false]),
            ]
        );
    }
}
