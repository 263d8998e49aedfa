//! The agent's plan as this client shows it: one plan per session, which every `plan` update
//! replaces whole (ACP: the agent sends the complete list each time and the client replaces the
//! current plan; agentclientprotocol.com/protocol/agent-plan). An update with no entries (the
//! agent cleared its todos) shows no plan. Each change is reported as a `plan` event.

use serde_json::{Map, Value};

use super::Client;
use crate::mutation::Mutant;
use acp_vocab::control::Event;
use acp_vocab::plan::{PlanEntryShown, PlanShown};

impl Client {
    /// A `plan` session update of session `session_id`.
    pub(super) fn on_plan_update(&mut self, session_id: &str, update: &Map<String, Value>) {
        let Some(entries) = PlanEntryShown::all_from_wire(update.get("entries")) else {
            log!("ignoring a plan update whose entries are not a list");
            return;
        };
        let mutant = self.mutant;
        let Some(session) = self.session_by_id_mut(session_id) else {
            return;
        };
        // MUTANT append-plan (LodyAI/Lody#264, hardbeat920/monocode#10): the new entries are
        // added after the ones shown, so the obsolete plan stays on screen.
        if mutant == Some(Mutant::AppendPlan) {
            session.plan.extend(entries);
        } else {
            session.plan = entries;
        }
        let shown = PlanShown {
            session_id: session_id.to_owned(),
            entries: session.plan.clone(),
        };
        self.events.push(Event::Plan(shown));
    }
}
