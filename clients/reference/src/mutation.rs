//! Field-bug mutants: each reproduces one real client bug so that a harness check can prove it
//! fails. The reference behaviour is `None` (no `--mutant`).
//!
//! Adding a mutant = one variant here (with its name, the bug it reproduces and the check it
//! must fail) + one decision point in the module whose behaviour it changes. Every decision point
//! is a single `if self.mutant == Some(Mutant::…)` with a comment naming the bug, so the
//! reference logic around it stays readable. Decision points today:
//!
//! | mutant | where |
//! |---|---|
//! | `always-command` | `client.rs`, `on_permission_request` (approval subject) |
//! | `unoffered-option` | `client.rs`, `choose` (optionId sent) |
//! | `cancel-as-reject` | `client.rs`, `cancel` (its behaviour: `reject_pending`) |
//! | `flip-on-approval` | `client.rs`, `choose` (item retyped while running; `timeline.rs` ends the retype) |

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// Every approval is a command approval (get-bb/bb#1719 before its fix in bb#1803).
    AlwaysCommand,
    /// The answer is built against a fixed default option list, not the offered one (ZERO #915).
    UnofferedOption,
    /// Ctrl-C at the approval prompt answers "reject" and never sends `session/cancel` (acpx).
    CancelAsReject,
    /// Approving retypes the timeline row to a command while it runs (bb #1719, timeline side).
    FlipOnApproval,
}

impl Mutant {
    pub const ALL: [Mutant; 4] = [
        Mutant::AlwaysCommand,
        Mutant::UnofferedOption,
        Mutant::CancelAsReject,
        Mutant::FlipOnApproval,
    ];

    /// The `--mutant` name.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::AlwaysCommand => "always-command",
            Mutant::UnofferedOption => "unoffered-option",
            Mutant::CancelAsReject => "cancel-as-reject",
            Mutant::FlipOnApproval => "flip-on-approval",
        }
    }

    /// The real-world bug this mutant reproduces.
    pub fn bug(self) -> &'static str {
        match self {
            Mutant::AlwaysCommand => {
                "get-bb/bb#1719 (before #1803): every permission request is shown as a command \
                 approval, whose command is rawInput.command, else the title, else the kind"
            }
            Mutant::UnofferedOption => {
                "ZERO #915: the answer is built from a fixed default list, so it sends optionId \
                 \"allow\" or \"reject\" whatever the agent offered"
            }
            Mutant::CancelAsReject => {
                "acpx Ctrl-C at its y/N prompt: a user cancel answers pending approvals with the \
                 first offered reject option and never sends session/cancel"
            }
            Mutant::FlipOnApproval => {
                "get-bb/bb#1719 (timeline): approving a file change turns its row into a command \
                 row while it runs, and back when it completes"
            }
        }
    }

    /// The harness check this mutant must fail.
    pub fn check(self) -> &'static str {
        match self {
            Mutant::AlwaysCommand => "subject-kind",
            Mutant::UnofferedOption => "offered-options",
            Mutant::CancelAsReject => "cancel-stop",
            Mutant::FlipOnApproval => "stable-item-type",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant `{s}`; known mutants: {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mutant::ALL {
            assert_eq!(m.name().parse::<Mutant>(), Ok(m));
        }
        assert!("nope".parse::<Mutant>().is_err());
    }
}
