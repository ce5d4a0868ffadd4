//! The schema versions this build writes and reads (the migration itself is in `schema`).

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 8;

/// The oldest schema [`Store::open_read_only`] reads as it is: version 4 only made the
/// summary columns nullable, and the reader takes a row without samples (count 0) as no
/// summary whatever its columns hold.
pub(super) const OLDEST_READABLE: i64 = 3;
