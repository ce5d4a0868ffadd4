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
    /// ended before it measured) or what was stored is not this record. A whole number
    /// stored as a float (`48000.0`, as a hand-edited or foreign database may hold) reads
    /// as the integer a field may want.
    fn from_json(json: &Value) -> Option<Self> {
        match json {
            Value::Null => None,
            Value::Object(map) if map.is_empty() => None,
            _ => serde_json::from_value(json.clone())
                .or_else(|_| serde_json::from_value(whole_floats_as_integers(json)))
                .ok(),
        }
    }
}

/// `json` with every float that holds a whole number in an integer's range made that
/// integer (a float field still reads an integer).
fn whole_floats_as_integers(json: &Value) -> Value {
    match json {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 => {
                Value::from(f as u64)
            }
            Some(f) if n.is_f64() && f.fract() == 0.0 && f < 0.0 && f >= i64::MIN as f64 => {
                Value::from(f as i64)
            }
            _ => json.clone(),
        },
        Value::Array(items) => items.iter().map(whole_floats_as_integers).collect(),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), whole_floats_as_integers(v)))
                .collect(),
        ),
        _ => json.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Sample {
        rate_hz: Option<u32>,
        offset: Option<i64>,
        seconds: Option<f64>,
        frames: Vec<u64>,
    }

    impl Record for Sample {}

    /// A whole number stored as a float reads as an integer field; a float field keeps
    /// its fraction; a fraction where an integer belongs is still no record.
    #[test]
    fn whole_numbers_stored_as_floats_read_as_integers() {
        let read = Sample::from_json(&serde_json::json!({
            "rate_hz": 48000.0, "offset": -3.0, "seconds": 1.5, "frames": [256.0, 512]
        }));
        assert_eq!(
            read,
            Some(Sample {
                rate_hz: Some(48000),
                offset: Some(-3),
                seconds: Some(1.5),
                frames: vec![256, 512],
            })
        );
        let fraction = serde_json::json!({"rate_hz": 48000.5, "frames": []});
        assert_eq!(Sample::from_json(&fraction), None);
        assert_eq!(Sample::from_json(&serde_json::json!({})), None);
        assert_eq!(Sample::from_json(&Value::Null), None);
    }
}
