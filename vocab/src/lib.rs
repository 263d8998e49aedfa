//! The vocabulary acp-harness speaks with itself: every part (scenario engine, runner,
//! observers, fuzz driver, judge, reports) reads and writes these types and nothing hand-built.
//!
//! * [`transcript`] — one recorded frame ([`transcript::Entry`]) and the append-only
//!   [`transcript::Recorder`] that numbers them.
//!
//! The crate has no I/O and no policy: it says what the words are, not what to do with them.
pub mod transcript;
