//! `agent-death` — a client whose agent process died tells its user or exits; it does not wait
//! for ever (R200).
//!
//! Requirement: after the harness killed the agent process (a scenario's `fault = "crash"`,
//! note `agent_killed`) and the client did not start the agent again, the client reports it
//! (an `error` or `turn` event, from its adapter or its profile's observer) or exits by itself.
//! A client that does neither is still waiting on a dead agent when the harness kills it at the
//! end of the case: its user sees a spinner for ever. This holds for wire-only clients too, which
//! tell their user by how they exit (issue 42 item 11: a notebook-kernel client whose SDK never
//! failed its pending requests at EOF passed all four agent-dies cases).
//!
//! Reading: judged on a completed run (the harness waits for a wire-only client to exit for a
//! step timeout after the scenario, then kills it). Reported: any `error` or `turn` event after
//! the kill. Exited by itself: the `client_exited` note has an exit code. How long the client
//! outlived its agent is the time from the kill to that note. `warn` (R200 is a SHOULD: ACP says
//! nothing of a dead agent; the user is the one left waiting).

use super::{Check, Finding, Problems, client_exit};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use crate::wire_model::{WireModel, note_of};
use acp_vocab::control::Event;
use acp_vocab::note::Note;

pub struct AgentDeath;

impl Check for AgentDeath {
    fn id(&self) -> &'static str {
        "agent-death"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R200]
    }

    fn requirement(&self) -> &'static str {
        "When its agent process dies, the client tells the user (an error, a failed turn) or exits; it does not wait for ever on a dead agent."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let Some((killed_at, conn, signal)) = model.notes.iter().find_map(|(i, n)| {
            let killed = n.get("type")?.as_str()? == "agent_killed";
            let conn = n.get("conn")?.as_u64()?;
            killed.then(|| {
                (
                    *i,
                    conn,
                    n.get("signal").and_then(|s| s.as_str()).unwrap_or("?"),
                )
            })
        }) else {
            return Finding::not_applicable("the agent process never died during the case");
        };
        if case.end != RunEnd::Completed {
            return Finding::not_applicable(
                "the run did not complete: its end (crash, timeout) is the verdict",
            );
        }
        // Started the agent again: a later connection.
        if model
            .msgs_from(killed_at)
            .iter()
            .any(|m| u64::from(m.conn) > conn)
        {
            return Finding::pass();
        }
        let reported = model
            .controls_from(killed_at + 1)
            .iter()
            .any(|c| matches!(c.event(), Some(Event::Error { .. } | Event::Turn(_))));
        if reported {
            return Finding::pass();
        }
        let Some((status, code)) = client_exit(model) else {
            return Finding::not_applicable("the transcript does not say how the client exited");
        };
        // A client without an adapter tells its user by how it exits: an exit of its own is
        // its report. One with an adapter exits when the harness closes it, and a full-screen
        // one (a `screen` note) when the harness types its quit keys: only their events say.
        let full_screen = model
            .notes
            .iter()
            .any(|(_, n)| matches!(note_of(n), Some(Note::Screen { .. })));
        if code.is_some() && !case.control_plane && !full_screen {
            return Finding::pass();
        }
        let exited_at = model
            .notes
            .iter()
            .rev()
            .find(|(_, n)| matches!(note_of(n), Some(Note::ClientExited { .. })))
            .map(|(i, _)| *i);
        let at = |i: usize| model.entry(i).map_or(0, |e| e.at_us);
        let outlived = exited_at.map_or(0, |e| at(e).saturating_sub(at(killed_at)));
        let mut problems = Problems::new();
        problems.warn(
            R200,
            format!(
                "the agent process died at #{killed_at} ({signal}), and the client outlived it by {:.1} s without reporting it (no error or turn event){}, until the harness stopped it ({status}). Expected the client to tell the user or exit: a client waiting on a dead agent shows a spinner for ever.",
                outlived as f64 / 1e6,
                if case.control_plane || full_screen { "" } else { " or exiting" }
            ),
            &[killed_at],
        );
        problems.finish("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade};
    use serde_json::json;

    fn died(c: &Case) -> usize {
        c.handshake();
        c.prompt();
        c.note(Note::AgentKilled {
            conn: 1,
            signal: "SIGKILL".into(),
            step: Some("4".into()),
        })
    }

    fn exited(c: &Case, status: &str, exit_code: Option<i32>) {
        c.note(Note::ClientExited {
            status: status.into(),
            exit_code,
        });
    }

    #[test]
    fn a_client_that_neither_reports_nor_exits_is_named() {
        let c = Case::wire_only();
        let at = died(&c);
        exited(&c, "killed by SIGKILL", None);
        let f = c.grade(&AgentDeath);
        assert_grade(
            &f,
            Grade::Warn,
            "without reporting it (no error or turn event) or exiting, until the harness stopped it (killed by SIGKILL)",
        );
        assert_eq!(f.frames, vec![at]);
        // With an adapter, exiting when the harness closes it is no report.
        let c = Case::new();
        died(&c);
        exited(&c, "exit code 0", Some(0));
        assert_grade(
            &c.grade(&AgentDeath),
            Grade::Warn,
            "without reporting it (no error or turn event), until the harness stopped it (exit code 0)",
        );
    }

    /// A full-screen client exits when the harness types its quit keys: that exit is no
    /// report; what its screen showed is.
    #[test]
    fn a_full_screen_client_reports_by_its_screen_only() {
        let c = Case::wire_only();
        died(&c);
        c.note(Note::Screen {
            text: "Working…".into(),
        });
        exited(&c, "exit code 0", Some(0));
        assert_grade(
            &c.grade(&AgentDeath),
            Grade::Warn,
            "without reporting it (no error or turn event), until the harness stopped it (exit code 0)",
        );
        let c = Case::wire_only();
        died(&c);
        c.ev(json!({"type":"turn","sessionId":SID,"state":"failed"}));
        c.note(Note::Screen {
            text: "Failed: the agent exited".into(),
        });
        exited(&c, "exit code 0", Some(0));
        assert_eq!(c.grade(&AgentDeath).grade, Grade::Pass);
    }

    #[test]
    fn reporting_or_exiting_passes() {
        let c = Case::new();
        died(&c);
        c.ev(json!({"type":"turn","sessionId":SID,"state":"failed"}));
        exited(&c, "killed by SIGKILL", None);
        assert_eq!(c.grade(&AgentDeath).grade, Grade::Pass);

        let c = Case::wire_only();
        died(&c);
        exited(&c, "exit code 1", Some(1));
        assert_eq!(c.grade(&AgentDeath).grade, Grade::Pass);

        // Nothing died: nothing to judge.
        let c = Case::wire_only();
        c.handshake();
        exited(&c, "killed by SIGKILL", None);
        assert_eq!(c.grade(&AgentDeath).grade, Grade::NotApplicable);
    }
}
