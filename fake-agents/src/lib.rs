//! Scriptable fake ACP agents.
//!
//! This crate plays the *agent* side of ACP from a scenario file; you provide the transport and
//! the user. [`scenario::load_dir`] parses scenario files (every error as `file:line:col`),
//! [`scenario::Scenario::cases`] expands them into runs, and [`engine::run`] plays one run
//! against whatever client connects through an [`engine::Connector`], recording every frame in a
//! [`transcript::Recorder`]. Agent versions' shared shapes live in [`profile`]s compiled into
//! the crate. The `acp-fake-agent` binary is the relay ([`relay`]) the client spawns, or the same
//! engine on stdio ([`standalone`]).
//!
//! Module map: [`wire`] framing · [`template`] `${…}` · [`source`] positions · [`profile`] ·
//! [`scenario`] · [`vars`] · [`matching`] patterns and answers · [`mailbox`] · [`link`] one
//! agent connection · [`machine_time`] how long waits last on a busy machine · [`engine`] · [`relay`] · [`standalone`]; the transcript types are
//! `acp_vocab::transcript`.
pub mod engine;
pub mod link;
pub mod machine_time;
pub mod mailbox;
pub mod matching;
pub mod profile;
pub mod relay;
pub mod scenario;
pub mod source;
pub mod standalone;
pub mod template;
pub mod vars;
pub mod wire;

mod de;
mod error;
