//! The judge: grades what an ACP client did, from a recorded case alone.
//!
//! Input is a [`record::CaseRecord`] (the transcript plus the facts of the run that are not
//! frames); output is one graded [`checks::Trial`] per check. Nothing here launches a process or
//! waits: the judge can grade a transcript recorded anywhere.
//!
//! Module map: [`wire_model`] (what each frame is and what the agent told the client) ·
//! [`acp_schema`] (the pinned ACP schema) · [`policy`] (a client's declared decisions) ·
//! [`checks`] (one module per check) · [`record`] (the case as the checks see it) ·
//! [`rules`] (the rule catalogue the checks cite).
pub mod acp_schema;
pub mod checks;
pub mod policy;
pub mod record;
pub mod rules;
pub mod surface;
pub mod wire_model;
