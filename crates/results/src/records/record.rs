//! The [`Record`] trait, a leaf the records and their readers use.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

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
