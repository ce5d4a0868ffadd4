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
}

impl std::fmt::Display for BackendKind {
    /// The backend's name ([`BackendKind::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
