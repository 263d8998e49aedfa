//! What a client may decide without its user: the declared auto-approval policy. The types are
//! the shared vocabulary's ([`acp_vocab::policy`]): the harness writes them into transcripts and
//! run.json, the `auto-approval` check reads them back.

pub use acp_vocab::policy::*;
