//! Stored JSON as SQL text, and back.

use serde_json::Value;

/// A JSON value as the text a row stores.
pub(super) fn json_text(v: &Value) -> String {
    serde_json::to_string(v).expect("JSON values always serialise")
}

/// A row's JSON text as its value (`null` when it is not JSON).
pub(super) fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}
