//! What a run's lifecycle adds to every probe's stored configuration ([`RunConfig`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::Record;

/// The lifecycle's part of a run's configuration, beside the probe's own keys: the load
/// it ran under and, in a plan or sweep with repeats, which repeat of its cell it was.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct RunConfig {
    /// The load's spec as given (`none`, `cpu`, `io`, ...).
    #[serde(default)]
    pub load: Option<String>,
    /// Which repeat of its cell (written only for a cell with repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

impl Record for RunConfig {}

impl RunConfig {
    /// The part in a stored configuration (empty when it has none of it).
    pub fn of(config: &Value) -> RunConfig {
        RunConfig::from_json(config).unwrap_or_default()
    }

    /// Writes this part into a probe's configuration `config` (a JSON object).
    pub fn add_to(&self, config: &mut Value) {
        if let (Value::Object(into), Value::Object(part)) = (config, self.to_json()) {
            into.extend(part);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The part is read from beside a probe's keys and written in beside them, `repeat`
    /// only when there is one.
    #[test]
    fn the_lifecycles_part_reads_and_writes_beside_the_probes() {
        let mut config = json!({"mode": "timer", "period_ns": 500000});
        RunConfig {
            load: Some("cpu".into()),
            repeat: None,
        }
        .add_to(&mut config);
        assert_eq!(
            config,
            json!({"mode": "timer", "period_ns": 500000, "load": "cpu"})
        );
        RunConfig {
            load: Some("io".into()),
            repeat: Some(2),
        }
        .add_to(&mut config);
        assert_eq!(config["repeat"], 2);
        assert_eq!(
            RunConfig::of(&config),
            RunConfig {
                load: Some("io".into()),
                repeat: Some(2)
            }
        );
        assert_eq!(
            RunConfig::of(&json!({"mode": "timer"})),
            RunConfig::default()
        );
        assert_eq!(RunConfig::of(&Value::Null), RunConfig::default());
    }
}
