//! Transitional: the CLI fixtures are in `tests/cli/util.rs` now. This file only lets a
//! `tests/cli_<branch>.rs` written before the move (`#[path = "util/mod.rs"] mod util;`)
//! build until it is moved into a module of `tests/cli/`; delete it when none uses it.

#[path = "../cli/util.rs"]
mod fixtures;

#[allow(unused_imports)]
pub use fixtures::*;
