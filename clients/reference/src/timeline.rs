//! The timeline model: one item per (sessionId, toolCallId), built from the *effective tool
//! call*, i.e. every announcement for that id merged in arrival order:
//!
//! * `session/update` `tool_call` and `tool_call_update`, and the `toolCall` of a
//!   `session/request_permission` (a `ToolCallUpdate`): fields present replace, `content` and
//!   `locations` replace the whole collection (ACP schema), `null` changes nothing;
//! * except that a kind of `other` (or an unknown word) never overrides a specific kind announced
//!   earlier for the same id: codex-acp TS sends sparse requests, opencode sends `other` on the
//!   permission of an `edit`.
//!
//! An item is created by the first announcement of an unknown id, whichever it is: qwen-code
//! sends the permission request as the first and only announcement, codex Rust sends the request
//! before the `tool_call`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::decide::places_of;
use crate::mutation::Mutant;
use crate::subject::{Subject, classify, is_specific_kind};

/// What the client shows for one tool call (the control protocol `item` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    pub session_id: String,
    pub tool_call_id: String,
    pub item_type: Subject,
    pub status: String,
    pub title: String,
}

#[derive(Debug)]
struct Item {
    session_id: String,
    tool_call_id: String,
    /// The effective tool call.
    call: Map<String, Value>,
    /// The turn (per-session counter) during which the item was created.
    turn: u64,
    /// A status the client set itself (`cancelled`, spec #42) until the agent reports one.
    local_status: Option<&'static str>,
    /// Only set by the `flip-on-approval` mutant: the type shown while the call runs.
    retyped: Option<Subject>,
    /// The view last reported, to report changes only.
    shown: Option<ItemView>,
    /// Every specific kind and every place any announcement named: what the client decides
    /// on (`decide.rs`), since the merged call keeps only the latest of each.
    kinds: Vec<String>,
    places: Vec<String>,
}

impl Item {
    /// What the view shows that can change: its type, status and title, borrowed from the call.
    fn shown_parts(&self) -> (Subject, &str, &str) {
        let status = match self.local_status {
            Some(local) => local,
            None => self
                .call
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("pending"),
        };
        let title = match self.call.get("title").and_then(Value::as_str) {
            Some(title) => title,
            // Announced without a title (sparse update or request first): show the id.
            None => &self.tool_call_id,
        };
        let item_type = self.retyped.unwrap_or_else(|| classify(&self.call));
        (item_type, status, title)
    }

    /// Recompute the view; `Some` if it differs from the last one reported. Compared before
    /// anything is copied: most updates of a streaming tool call change nothing shown.
    fn refresh(&mut self) -> Option<ItemView> {
        let (item_type, status, title) = self.shown_parts();
        if let Some(shown) = &self.shown
            && (shown.item_type, shown.status.as_str(), shown.title.as_str())
                == (item_type, status, title)
        {
            return None;
        }
        let view = ItemView {
            session_id: self.session_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            item_type,
            status: status.to_owned(),
            title: title.to_owned(),
        };
        self.shown = Some(view.clone());
        Some(view)
    }

    fn is_finished(&self) -> bool {
        matches!(
            self.call.get("status").and_then(Value::as_str),
            Some("completed" | "failed")
        )
    }
}

/// Merge one announcement into an effective tool call (its fields are moved in).
fn merge(call: &mut Map<String, Value>, update: Map<String, Value>) {
    for (key, value) in update {
        if value.is_null() || key == "sessionUpdate" {
            continue;
        }
        if key == "kind"
            && !is_specific_kind(&value)
            && call.get("kind").is_some_and(is_specific_kind)
        {
            continue;
        }
        call.insert(key, value);
    }
}

#[derive(Debug, Default)]
pub struct Timeline {
    /// Items in creation order (events about several items come out in a stable order).
    items: Vec<Item>,
    /// sessionId → toolCallId → position in `items`. Nested so that a lookup borrows the ids
    /// instead of building an owned key (every announcement looks its item up).
    index: HashMap<String, HashMap<String, usize>>,
    mutant: Option<Mutant>,
}

impl Timeline {
    pub fn new(mutant: Option<Mutant>) -> Self {
        Timeline {
            mutant,
            ..Default::default()
        }
    }

    fn position(&self, session_id: &str, tool_call_id: &str) -> Option<usize> {
        // MUTANT tool-calls-keyed-by-id (pingdotgg/t3code#304): a row is found by its toolCallId
        // alone, so a second session's tool call with the same id lands on the first one's row.
        if self.mutant == Some(Mutant::ToolCallsKeyedById) {
            return self
                .items
                .iter()
                .position(|item| item.tool_call_id == tool_call_id);
        }
        self.index.get(session_id)?.get(tool_call_id).copied()
    }

    /// Merge an announcement of `tool_call_id` in `session_id`, created during `turn`.
    /// Returns the item's view if it was created or its type, status or title changed.
    pub fn announce(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        update: &Map<String, Value>,
        turn: u64,
    ) -> Option<ItemView> {
        self.announce_moved(session_id, tool_call_id, update.clone(), turn)
    }

    /// [`Self::announce`] with the update's fields moved into the item instead of copied (the
    /// client's `session/update`s: a streaming tool call's content comes with every update).
    pub fn announce_moved(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        update: Map<String, Value>,
        turn: u64,
    ) -> Option<ItemView> {
        let position = match self.position(session_id, tool_call_id) {
            Some(position) => position,
            None => {
                let mut call = Map::new();
                call.insert("toolCallId".into(), Value::String(tool_call_id.into()));
                self.index
                    .entry(session_id.into())
                    .or_default()
                    .insert(tool_call_id.into(), self.items.len());
                self.items.push(Item {
                    session_id: session_id.into(),
                    tool_call_id: tool_call_id.into(),
                    call,
                    turn,
                    local_status: None,
                    retyped: None,
                    shown: None,
                    kinds: Vec::new(),
                    places: Vec::new(),
                });
                self.items.len() - 1
            }
        };
        let item = &mut self.items[position];
        if let Some(kind) = update.get("kind").filter(|k| is_specific_kind(k)) {
            let kind = kind.as_str().unwrap_or_default().to_owned();
            if !item.kinds.contains(&kind) {
                item.kinds.push(kind);
            }
        }
        for place in places_of(&update) {
            if !item.places.contains(&place) {
                item.places.push(place);
            }
        }
        if update.get("status").is_some_and(|s| !s.is_null()) {
            // The agent's own status replaces any status the client set itself.
            item.local_status = None;
        }
        merge(&mut item.call, update);
        if item.is_finished() {
            // flip-on-approval: the retype lasts while the call runs (no-op for the reference).
            item.retyped = None;
        }
        item.refresh()
    }

    /// The effective tool call, if the id was announced.
    pub fn call(&self, session_id: &str, tool_call_id: &str) -> Option<&Map<String, Value>> {
        self.position(session_id, tool_call_id)
            .map(|position| &self.items[position].call)
    }

    /// Every specific kind and place announced for the tool call (empty if unknown).
    pub fn facts(&self, session_id: &str, tool_call_id: &str) -> (&[String], &[String]) {
        match self.position(session_id, tool_call_id) {
            Some(position) => (&self.items[position].kinds, &self.items[position].places),
            None => (&[], &[]),
        }
    }

    /// Show the item as `subject` until the agent reports it finished (`flip-on-approval` only).
    pub fn retype_while_running(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        subject: Subject,
    ) -> Option<ItemView> {
        let position = self.position(session_id, tool_call_id)?;
        let item = &mut self.items[position];
        if item.is_finished() {
            return None;
        }
        item.retyped = Some(subject);
        item.refresh()
    }

    /// Spec #42: on cancel, mark every unfinished tool call of the session's current turn as
    /// `cancelled` (a client-side status: v1 `ToolCallStatus` has none, gotcha G4). Returns the
    /// changed views. Later updates from the agent are still applied (R50).
    pub fn cancel_unfinished(&mut self, session_id: &str, turn: u64) -> Vec<ItemView> {
        self.items
            .iter_mut()
            .filter(|item| item.session_id == session_id && item.turn == turn)
            .filter(|item| !item.is_finished())
            .filter_map(|item| {
                item.local_status = Some("cancelled");
                item.refresh()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().expect("object").clone()
    }

    #[test]
    fn created_by_any_first_announcement_and_changes_reported_once() {
        let mut t = Timeline::default();
        // qwen: the permission request's toolCall is the first announcement.
        let v = t
            .announce(
                "s",
                "c1",
                &obj(json!({"toolCallId": "c1", "kind": "edit", "title": "Write a"})),
                1,
            )
            .expect("created");
        assert_eq!(v.item_type, Subject::FileChange);
        assert_eq!(v.status, "pending");
        // Nothing visible changes: no event.
        assert_eq!(
            t.announce(
                "s",
                "c1",
                &obj(json!({"toolCallId": "c1", "rawOutput": {}})),
                1
            ),
            None
        );
        let v = t
            .announce(
                "s",
                "c1",
                &obj(json!({"toolCallId": "c1", "status": "completed"})),
                1,
            )
            .expect("status change");
        assert_eq!(
            (v.item_type, v.status.as_str()),
            (Subject::FileChange, "completed")
        );
    }

    #[test]
    fn other_never_overrides_a_specific_kind_but_a_specific_one_does() {
        let mut t = Timeline::default();
        t.announce(
            "s",
            "c",
            &obj(json!({"toolCallId": "c", "title": "/w", "kind": "edit"})),
            1,
        );
        t.announce(
            "s",
            "c",
            &obj(json!({"toolCallId": "c", "kind": "other"})),
            1,
        );
        t.announce("s", "c", &obj(json!({"toolCallId": "c", "kind": null})), 1);
        assert_eq!(
            t.call("s", "c").and_then(|c| c.get("kind")),
            Some(&json!("edit"))
        );
        let v = t
            .announce(
                "s",
                "c",
                &obj(json!({"toolCallId": "c", "kind": "execute"})),
                1,
            )
            .expect("agent re-kinded the call");
        assert_eq!(v.item_type, Subject::Command);
    }

    #[test]
    fn collections_replace_and_sessions_are_separate() {
        let mut t = Timeline::default();
        t.announce(
            "s1",
            "c",
            &obj(json!({"toolCallId": "c", "title": "t", "locations": [{"path": "/a"}]})),
            1,
        );
        t.announce(
            "s1",
            "c",
            &obj(json!({"toolCallId": "c", "locations": []})),
            1,
        );
        assert_eq!(
            t.call("s1", "c").and_then(|c| c.get("locations")),
            Some(&json!([]))
        );
        assert!(t.call("s2", "c").is_none());
    }

    #[test]
    fn cancel_marks_unfinished_items_of_the_turn_and_updates_still_apply() {
        let mut t = Timeline::default();
        t.announce(
            "s",
            "old",
            &obj(json!({"toolCallId": "old", "title": "o"})),
            1,
        );
        t.announce("s", "a", &obj(json!({"toolCallId": "a", "title": "a"})), 2);
        t.announce(
            "s",
            "b",
            &obj(json!({"toolCallId": "b", "title": "b", "status": "completed"})),
            2,
        );
        let views = t.cancel_unfinished("s", 2);
        assert_eq!(views.len(), 1);
        assert_eq!(
            (views[0].tool_call_id.as_str(), views[0].status.as_str()),
            ("a", "cancelled")
        );
        let v = t
            .announce(
                "s",
                "a",
                &obj(json!({"toolCallId": "a", "status": "failed"})),
                2,
            )
            .expect("accepted after cancel");
        assert_eq!(v.status, "failed");
    }

    #[test]
    fn retype_lasts_until_finished() {
        let mut t = Timeline::default();
        t.announce(
            "s",
            "c",
            &obj(json!({"toolCallId": "c", "title": "e", "kind": "edit"})),
            1,
        );
        let v = t
            .retype_while_running("s", "c", Subject::Command)
            .expect("retyped");
        assert_eq!(v.item_type, Subject::Command);
        let v = t
            .announce(
                "s",
                "c",
                &obj(json!({"toolCallId": "c", "status": "in_progress"})),
                1,
            )
            .expect("status");
        assert_eq!(v.item_type, Subject::Command);
        let v = t
            .announce(
                "s",
                "c",
                &obj(json!({"toolCallId": "c", "status": "completed"})),
                1,
            )
            .expect("back");
        assert_eq!(v.item_type, Subject::FileChange);
    }
}
