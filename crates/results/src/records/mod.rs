//! Each probe's configuration and result as Rust types: what a probe writes into a run's
//! `config` and `result` and what `report`, the gates, `compare` and the exports read back;
//! and the JSON printed outside a run (`devices --json`, `bench --json`).
//!
//! A record is serialised with serde into the JSON the store keeps, under the keys the
//! runs of earlier releases have: a field an older run lacks is an `Option` (or has a
//! `#[serde(default)]`), so a database written by an earlier release reads back as the
//! same types. A reader asks a [`RunView`](crate::RunView) for its record
//! ([`RunView::config_as`](crate::RunView::config_as),
//! [`RunView::result_as`](crate::RunView::result_as)) and reads fields, never keys.
//!
//! Every record has a round-trip test: the JSON a probe writes reads back as the record
//! and serialises to the same JSON, so no stored key is dropped on the way.

pub mod bench;
pub mod devices;
pub mod flags;
pub mod load;
pub mod qos;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A key that is absent (`None`), written `null` (`Some(None)`) or has a value: a
/// field of a record some writers leave out and others write `null`.
pub type Nullable<T> = Option<Option<T>>;

/// Reads a present key, `null` too, as `Some` (with `#[serde(default)]`, an absent one
/// stays `None`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Nullable<T>, D::Error> {
    Ok(Some(Option::<T>::deserialize(d)?))
}

/// A probe's configuration or result, stored as JSON.
pub trait Record: Serialize + DeserializeOwned {
    /// The JSON stored for it.
    fn to_json(&self) -> Value {
        // A record is plain data (numbers, strings, options, vectors, maps with string
        // keys): serde_json cannot fail on it.
        serde_json::to_value(self).expect("a record serialises to JSON")
    }

    /// The record in `json`, or `None` when nothing was stored (`null`, `{}` of a run that
    /// ended before it measured) or what was stored is not this record.
    fn from_json(json: &Value) -> Option<Self> {
        match json {
            Value::Null => None,
            Value::Object(map) if map.is_empty() => None,
            _ => serde_json::from_value(json.clone()).ok(),
        }
    }
}

/// Writes the keys of the object `set` into `json` (an object, made one if it was
/// `null`), each over the key of the same name; the others are left as they are. How a
/// record of some keys (the runner's flags, the cells' settings) is added to a probe's.
pub(crate) fn add_keys(set: Value, json: &mut Value) {
    if let Value::Object(set) = set {
        for (key, value) in set {
            json[key] = value;
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::Record;
    use serde_json::Value;

    /// Asserts that `json` reads back as `R` and writes back unchanged.
    pub fn round_trips<R: Record + std::fmt::Debug>(json: Value) -> R {
        let record = R::from_json(&json).unwrap_or_else(|| panic!("does not read: {json}"));
        assert_eq!(record.to_json(), json, "{record:?}");
        record
    }
}
