//! How a case's run ended, as far as the harness could tell: what the scenario engine returns,
//! what the runner settles on (adding what only it sees: a crash, the case budget, a broken
//! adapter), and what run.json and the checks read. One type for all three.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEnd {
    /// Every step ran.
    Completed,
    /// A step waited for the client and gave up (per-step timeout), or the user could not do
    /// what the scenario asked (no approval card, option not presented).
    Incomplete { step: usize, reason: String },
    /// The whole case exceeded its time budget.
    Timeout { after_ms: u64, reason: String },
    /// The client process died before the scenario ended.
    Crash {
        exit_code: Option<i32>,
        signal: Option<String>,
        reason: String,
    },
    /// The scenario does not apply (a required capability was not advertised).
    NotApplicable { reason: String },
    /// The harness itself failed (our bug or environment), never the client's fault.
    HarnessError { reason: String },
    /// The client's control-plane adapter broke control protocol v1 (harness/CONTROL.md): an
    /// invalid message, or an unsupported protocol version. Nothing it reported can be trusted,
    /// so the case cannot be judged; the fault is the client's test integration, not ours.
    AdapterError { reason: String },
}
