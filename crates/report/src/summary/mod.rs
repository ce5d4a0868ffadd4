//! The answer on top: what a report's stored runs say about the machine they ran on, in
//! the words a musician or an engineer came for. Per audio backend and load, the
//! smallest buffer that held with no under-run and the latency it gives (from event and
//! round-trip runs, and so from a `--find-min-buffer` search's runs); the wake-up latency
//! of each jitter run (p99, p99.9, max); every deadline judged and its misses; why the
//! misses of a run that asked were late (`audiolat jitter --why`: its culprits); one
//! verdict line per run ("holds 128-frame periods at 44.1 kHz idle on JACK: 2.90 ms round
//! trip"); and the caveats that apply, each once (not real-time, host steal, a virtual
//! machine or an emulator, a software clock, interrupted runs).
//!
//! [`answer`] computes it from the stored runs only; [`html`] and [`text`] say the same
//! thing, the one as the report's first section, the other at the end of `audiolat
//! suite` and `audiolat run`. A value nobody measured is absent, never 0; a probe that
//! did not run is not in the answer.
//!
//! Layout: `model` holds what the answer is made of, `words` the readings and wording
//! every part shares (both leaves), `buffers`, `verdicts` and `caveats` each part,
//! `answer` puts them together and `render` says it; this file only names them.

mod answer;
mod buffers;
mod caveats;
mod model;
mod render;
mod verdicts;
mod words;

#[cfg(test)]
mod tests;

pub use answer::answer;
pub(crate) use buffers::stream_buffer;
pub use model::{
    Answer, BackendAnswer, Buffer, DeadlineAnswer, FailedBuffer, Mark, VerdictLine, WakeupAnswer,
    WhyAnswer,
};
pub use render::{html, text};
