//! What records of a run's shared parts (flags, QoS) need beside [`Record`]: a key some
//! writers leave out and others write `null`, and adding a record's keys to a probe's.
//! A leaf the records use.
//!
//! [`Record`]: super::record::Record

use serde::{Deserialize, Deserializer};
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

/// Reads a figure written `null` (serde_json writes a NaN or an infinity so) as NaN: a
/// figure that could not be computed does not make its whole record unreadable.
pub(crate) fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
