//! The vocabulary acp-harness speaks with itself: every part (scenario engine, runner,
//! observers, fuzz driver, judge, reports) reads and writes these types and nothing hand-built.
//!
//! * [`transcript`] — one recorded frame ([`transcript::Entry`]) and the append-only
//!   [`transcript::Recorder`] that numbers them.
//! * [`note`] — the harness's own notes between the frames ([`note::Note`]).
//! * [`control`] — the control plane's [`control::Command`]s and [`control::Event`]s
//!   (harness/CONTROL.md).
//! * [`method`] — the ACP methods by name ([`method::Method`]), tied to the pinned schema crate.
//! * [`envelope`] — what a JSON-RPC message is: by the rules ([`envelope::Envelope`]) or read
//!   tolerantly ([`envelope::Shape`]).
//! * [`family`] — what part of a client's job a scenario exercises ([`family::Family`]).
//! * [`modes`] — what a client shows of a session's modes and config options.
//! * [`policy`] — what a client declares it approves by itself.
//! * [`run_end`] — how a case's run ended ([`run_end::RunEnd`]).
//! * [`split_work`] — one way every stage splits a long input over scoped threads
//!   ([`split_work::alongside`]).
//!
//! The crate has no I/O and no policy: it says what the words are, not what to do with them
//! (and, in [`split_work`], how the stages that share it split work alike).
pub mod control;
pub mod envelope;
pub mod family;
pub mod grade;
pub mod method;
pub mod modes;
pub mod note;
pub mod plan;
pub mod policy;
pub mod run_end;
pub mod split_work;
pub mod transcript;
