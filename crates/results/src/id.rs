//! Typed row ids: [`RunId`], [`GroupId`] and [`PlanCellId`].
//!
//! Each is the store's row id (an `i64`) under a type of its own, so a run id cannot be
//! passed where a group id is meant. Promises:
//!
//! - Serialised as the bare number (`#[serde(transparent)]`) and displayed as the bare
//!   number: JSON and text outputs are the same as with a plain `i64`.
//! - [`FromStr`](std::str::FromStr) accepts a whole number above 0 (row ids start at 1)
//!   and names the kind of id in its error.
//! - With the `sqlite` feature, each binds and reads as an SQLite integer.

use serde::{Deserialize, Serialize};

/// A text that is not an id of the kind asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is no {kind} id: give a whole number above 0")]
pub struct ParseIdError {
    /// The kind of id: `run`, `group` or `plan cell`.
    pub kind: &'static str,
    /// The text as given.
    pub text: String,
}

macro_rules! row_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl $name {
            /// The row id as stored.
            pub fn get(self) -> i64 {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = ParseIdError;

            fn from_str(s: &str) -> Result<$name, ParseIdError> {
                s.parse::<i64>()
                    .ok()
                    .filter(|v| *v > 0)
                    .map($name)
                    .ok_or_else(|| ParseIdError {
                        kind: $kind,
                        text: s.to_string(),
                    })
            }
        }

        #[cfg(feature = "sqlite")]
        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                self.0.to_sql()
            }
        }

        #[cfg(feature = "sqlite")]
        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<$name> {
                i64::column_result(value).map($name)
            }
        }
    };
}

row_id!(
    /// A run's id (`audiolat show N`).
    RunId,
    "run"
);
row_id!(
    /// A group's id: one suite, sweep, experiment or plan run (`audiolat report group:N`).
    GroupId,
    "group"
);
row_id!(
    /// A plan cell's id, within the store (not its position in the plan).
    PlanCellId,
    "plan cell"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_serialise_as_bare_numbers() {
        assert_eq!(RunId(42).to_string(), "42");
        assert_eq!(serde_json::to_string(&GroupId(7)).unwrap(), "7");
        assert_eq!(
            serde_json::from_str::<PlanCellId>("3").unwrap(),
            PlanCellId(3)
        );
    }

    #[test]
    fn ids_parse_positive_numbers_only() {
        assert_eq!("12".parse::<RunId>(), Ok(RunId(12)));
        let e = "0".parse::<GroupId>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "'0' is no group id: give a whole number above 0"
        );
        assert!("x".parse::<PlanCellId>().is_err());
    }
}
