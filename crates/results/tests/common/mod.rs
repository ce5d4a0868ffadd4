//! What the results crate's integration tests share.

pub mod pg;
