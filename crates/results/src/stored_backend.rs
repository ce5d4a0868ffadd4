//! The backend a stored run names ([`StoredBackend`]): the model's parse of the
//! `backend` string an audio run's configuration and result hold, for the views that read
//! a run as stored (the report, `show`), which know no engine. The names and what each
//! backend does are engine's (`engine::backend::BackendKind`, which writes them);
//! `tests/structure.rs` holds the two to the same names and answers.

/// The backend a stored audio run used, parsed from its stored name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredBackend {
    /// A JACK client (`jack`).
    Jack,
    /// An ALSA device (`alsa`).
    Alsa,
    /// The virtual card (`virtual`).
    Virtual,
    /// Native PipeWire streams (`pipewire`).
    Pipewire,
    /// A name this release does not know (a newer release's), kept as stored.
    Other(String),
}

impl StoredBackend {
    /// The backend a stored name gives.
    pub fn parse(name: &str) -> StoredBackend {
        match name {
            "jack" => StoredBackend::Jack,
            "alsa" => StoredBackend::Alsa,
            "virtual" => StoredBackend::Virtual,
            "pipewire" => StoredBackend::Pipewire,
            other => StoredBackend::Other(other.to_string()),
        }
    }

    /// The backend of a run's stored parts: its result's `backend`, else its
    /// configuration's (`None`: the run names none, e.g. a jitter run).
    pub fn of(result: &serde_json::Value, config: &serde_json::Value) -> Option<StoredBackend> {
        result["backend"]
            .as_str()
            .or_else(|| config["backend"].as_str())
            .map(StoredBackend::parse)
    }

    /// Its name as stored.
    pub fn name(&self) -> &str {
        match self {
            StoredBackend::Jack => "jack",
            StoredBackend::Alsa => "alsa",
            StoredBackend::Virtual => "virtual",
            StoredBackend::Pipewire => "pipewire",
            StoredBackend::Other(name) => name,
        }
    }

    /// Its name for people: `JACK`, `ALSA`, `PipeWire`, `virtual` (an unknown one as
    /// stored).
    pub fn display_name(&self) -> &str {
        match self {
            StoredBackend::Jack => "JACK",
            StoredBackend::Alsa => "ALSA",
            StoredBackend::Pipewire => "PipeWire",
            other => other.name(),
        }
    }

    /// Whether its streams are clients of an audio server (JACK, PipeWire).
    pub fn is_server_client(&self) -> bool {
        matches!(self, StoredBackend::Jack | StoredBackend::Pipewire)
    }

    /// Whether its streams open a device that grants its own settings (ALSA).
    pub fn has_device_grant(&self) -> bool {
        matches!(self, StoredBackend::Alsa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_parse_back_and_an_unknown_one_is_kept() {
        for name in ["jack", "alsa", "virtual", "pipewire", "coreaudio"] {
            assert_eq!(StoredBackend::parse(name).name(), name);
        }
        assert_eq!(StoredBackend::parse("pipewire").display_name(), "PipeWire");
        let of = StoredBackend::of(
            &serde_json::json!({}),
            &serde_json::json!({"backend": "alsa"}),
        );
        assert_eq!(of, Some(StoredBackend::Alsa));
        assert_eq!(
            StoredBackend::of(&serde_json::json!({}), &serde_json::json!({})),
            None
        );
    }
}
