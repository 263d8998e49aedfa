//! acp-record: records real ACP agents against a scripted model server (docs/recording.md).

pub mod case;
pub mod check;
pub mod layout;
pub mod normalise;
pub mod recipe;
pub mod recording;
pub mod run;
pub mod scenario;
pub mod script;
pub mod server;
pub mod template;
