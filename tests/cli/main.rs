//! The audiolat command line, end to end: the binary cargo built, real tools
//! (cyclictest, stress-ng, jackd2), a real SQLite file per test. One test binary, `cli`
//! (`cargo test --test cli <filter>`), with a module per area; the fixtures every area
//! uses (running the binary on a database, a private `jackd -d dummy`, the machine lock,
//! clean-up guards) are in `util.rs`, a helper only one area needs stays in its module.
//!
//! A new test goes into the module of its area; a new area is a new module here (kept
//! under 600 lines: split an area that outgrows it, as `event` and `jack` are).

mod cdp;
mod util;

mod bench;
mod bounds;
mod cells;
mod clamped;
mod counts;
mod devices;
mod docs;
mod doctor;
mod errors;
mod event;
mod farm;
mod gates;
mod hangups;
mod jack;
mod jitter;
mod loads;
mod messages;
mod net;
mod old_db;
mod outputs;
mod phases;
mod pipewire;
mod pipewire_doctor;
mod pipewire_event;
mod pipewire_min_buffer;
mod pipewire_native;
mod pipewire_running;
mod plan;
mod plan_checks;
mod postgres;
mod report_browser;
mod reports;
mod roundtrip;
mod show;
mod signals;
mod store;
mod suite;
mod temporary;
mod why;
