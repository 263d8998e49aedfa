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
//!
//! An announcement comes as a parsed object ([`Timeline::announce_moved`]) or, for the bulk of
//! a streaming tool call, as a [`ToolUpdate`] read from its line ([`Timeline::announce_update`]):
//! then the call's `content` is kept as the agent's text and becomes a tree only when someone
//! asks for the merged call ([`Timeline::call`]). Both merge the same way.

use std::cell::OnceCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::decide::places_of;
use crate::mutation::Mutant;
use crate::subject::{self, Subject, classify_with, is_specific_kind, is_specific_kind_word};
use crate::tool_update::{Content, ToolUpdate};

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
    /// The effective tool call; without its `content` while that is kept as text (`content`).
    call: Map<String, Value>,
    /// The latest `content`, as the agent's text, when it came in a [`ToolUpdate`].
    content: Option<Content>,
    /// `call` with that `content` parsed in, built when asked for ([`Timeline::call`]) and
    /// dropped by the next announcement.
    merged: OnceCell<Map<String, Value>>,
    /// The turn (per-session counter) during which the item was created.
    turn: u64,
    /// A status the client set itself (`cancelled`, spec #42) until the agent reports one.
    local_status: Option<&'static str>,
    /// Only set by the `flip-on-approval` mutant: the type shown while the call runs.
    retyped: Option<Subject>,
    /// Only set by the `keep-first-title` mutant: the first title the call had.
    first_title: Option<String>,
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
        let item_type = self
            .retyped
            .unwrap_or_else(|| classify_with(&self.call, || self.has_diff()));
        (item_type, status, title)
    }

    fn has_diff(&self) -> bool {
        match &self.content {
            Some(content) => content.has_diff(),
            None => subject::has_diff(&self.call),
        }
    }

    /// The effective tool call as one tree.
    fn merged_call(&self) -> &Map<String, Value> {
        match &self.content {
            None => &self.call,
            Some(content) => self.merged.get_or_init(|| {
                let mut call = self.call.clone();
                call.insert("content".into(), content.to_value());
                call
            }),
        }
    }

    /// What every announcement notes before its fields are merged: a specific kind, the places
    /// it names, and whether it reports a status.
    fn note<'p>(
        &mut self,
        kind: Option<&str>,
        places: impl IntoIterator<Item = &'p str>,
        status: bool,
    ) {
        if let Some(kind) = kind.filter(|k| is_specific_kind_word(k))
            && !self.kinds.iter().any(|k| k == kind)
        {
            self.kinds.push(kind.to_owned());
        }
        for place in places {
            if !self.places.iter().any(|p| p == place) {
                self.places.push(place.to_owned());
            }
        }
        if status {
            // The agent's own status replaces any status the client set itself.
            self.local_status = None;
        }
        self.merged = OnceCell::new();
    }

    /// What every announcement does after its fields are merged: the view, if it changed.
    fn merged_in(&mut self, mutant: Option<Mutant>) -> Option<ItemView> {
        // MUTANT keep-first-title (zed-industries/zed#49456): the row keeps the first title
        // the call had; a later title in an update is dropped.
        if mutant == Some(Mutant::KeepFirstTitle) {
            match &self.first_title {
                Some(first) => {
                    self.call
                        .insert("title".into(), Value::String(first.clone()));
                }
                None => {
                    self.first_title = self
                        .call
                        .get("title")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
            }
        }
        if self.is_finished() {
            // flip-on-approval: the retype lasts while the call runs (no-op for the reference).
            self.retyped = None;
        }
        self.refresh()
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

/// Set `call[key]` to the string `value`, reusing the key's entry when there is one (as
/// `Map::insert` does, without allocating the key again).
fn set_string(call: &mut Map<String, Value>, key: &str, value: &str) {
    match call.get_mut(key) {
        Some(Value::String(old)) if old == value => {}
        Some(old) => *old = Value::String(value.to_owned()),
        None => {
            call.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
}

/// Whether an announcement's field `key` replaces the effective tool call's: `null` changes
/// nothing, and a kind of `other` (or an unknown word) never overrides a specific kind.
fn merges(call: &Map<String, Value>, key: &str, value: &Value) -> bool {
    !(value.is_null()
        || key == "sessionUpdate"
        || (key == "kind"
            && !is_specific_kind(value)
            && call.get("kind").is_some_and(is_specific_kind)))
}

/// Merge one announcement into an effective tool call (its fields are moved in).
fn merge(call: &mut Map<String, Value>, update: Map<String, Value>) {
    for (key, value) in update {
        if merges(call, &key, &value) {
            call.insert(key, value);
        }
    }
}

/// [`merge`] of a borrowed announcement: only the fields merged are copied, not the whole map
/// first (the in-process fuzz target announces every frame through [`Timeline::announce`]).
fn merge_copied(call: &mut Map<String, Value>, update: &Map<String, Value>) {
    for (key, value) in update {
        if merges(call, key, value) {
            match call.get_mut(key.as_str()) {
                Some(slot) => *slot = value.clone(),
                None => {
                    call.insert(key.clone(), value.clone());
                }
            }
        }
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
        let mutant = self.mutant;
        let item = self.noted(session_id, tool_call_id, update, turn);
        merge_copied(&mut item.call, update);
        item.merged_in(mutant)
    }

    /// [`Self::announce`] with the update's fields moved into the item instead of copied (the
    /// client's `session/update`s that are not read as a [`ToolUpdate`]).
    pub fn announce_moved(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        update: Map<String, Value>,
        turn: u64,
    ) -> Option<ItemView> {
        let mutant = self.mutant;
        let item = self.noted(session_id, tool_call_id, &update, turn);
        merge(&mut item.call, update);
        item.merged_in(mutant)
    }

    /// The item an announcement is about (created if new), with what the announcement names
    /// noted before its fields are merged.
    fn noted(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        update: &Map<String, Value>,
        turn: u64,
    ) -> &mut Item {
        let item = self.item(session_id, tool_call_id, turn);
        item.note(
            update.get("kind").and_then(Value::as_str),
            places_of(update),
            update.get("status").is_some_and(|s| !s.is_null()),
        );
        if update.get("content").is_some_and(|c| !c.is_null()) {
            // A parsed `content` replaces one kept as text.
            item.content = None;
        }
        item
    }

    /// [`Self::announce_moved`] of a tool call's `session/update` read from its line: the same
    /// fields merged the same way (`merge`), its `content` kept as text.
    pub fn announce_update(&mut self, update: ToolUpdate, turn: u64) -> Option<ItemView> {
        let mutant = self.mutant;
        let item = self.item(update.session_id(), update.tool_call_id(), turn);
        item.note(
            update.kind(),
            update.diff_paths().iter().map(String::as_str),
            update.status().is_some(),
        );
        let call = &mut item.call;
        // `merge`'s rules for the fields a `ToolUpdate` has (every one a string, none null).
        set_string(call, "toolCallId", update.tool_call_id());
        if let Some(title) = update.title() {
            set_string(call, "title", title);
        }
        if let Some(kind) = update.kind()
            && (is_specific_kind_word(kind) || !call.get("kind").is_some_and(is_specific_kind))
        {
            set_string(call, "kind", kind);
        }
        if let Some(status) = update.status() {
            set_string(call, "status", status);
        }
        if update.has_content() {
            call.remove("content");
            item.content = update.into_content();
        }
        item.merged_in(mutant)
    }

    /// The item of `tool_call_id` in `session_id`, created (during `turn`) if it is new.
    fn item(&mut self, session_id: &str, tool_call_id: &str, turn: u64) -> &mut Item {
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
                    content: None,
                    merged: OnceCell::new(),
                    turn,
                    local_status: None,
                    retyped: None,
                    first_title: None,
                    shown: None,
                    kinds: Vec::new(),
                    places: Vec::new(),
                });
                self.items.len() - 1
            }
        };
        &mut self.items[position]
    }

    /// Whether the id was announced in the session.
    pub fn knows(&self, session_id: &str, tool_call_id: &str) -> bool {
        self.position(session_id, tool_call_id).is_some()
    }

    /// The effective tool call, if the id was announced.
    pub fn call(&self, session_id: &str, tool_call_id: &str) -> Option<&Map<String, Value>> {
        self.position(session_id, tool_call_id)
            .map(|position| self.items[position].merged_call())
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
        // MUTANT cancel-marks-finished (zed-industries/zed#30021): the finished calls of the
        // turn are marked cancelled too.
        let finished_too = self.mutant == Some(Mutant::CancelMarksFinished);
        self.items
            .iter_mut()
            .filter(|item| item.session_id == session_id && item.turn == turn)
            .filter(|item| finished_too || !item.is_finished())
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

    /// A `session/update` line announced both ways: read as a `ToolUpdate` when it fits, and
    /// parsed as a tree (what `on_session_update` hands the timeline).
    fn announce_both(typed: &mut Timeline, tree: &mut Timeline, line: &str) -> bool {
        let frame: Value = serde_json::from_str(line).expect("JSON");
        let params = &frame["params"];
        let session_id = params["sessionId"].as_str().expect("sessionId");
        let update = params["update"].as_object().expect("update").clone();
        let id = update["toolCallId"]
            .as_str()
            .expect("toolCallId")
            .to_owned();
        let by_tree = tree.announce_moved(session_id, &id, update, 1);
        let (by_line, read) = match ToolUpdate::read(line.as_bytes().to_vec()) {
            Ok(read) => (typed.announce_update(read, 1), true),
            Err(_) => {
                let update = params["update"].as_object().expect("update").clone();
                (typed.announce_moved(session_id, &id, update, 1), false)
            }
        };
        assert_eq!(by_line, by_tree, "{line}");
        assert_eq!(
            typed.call(session_id, &id),
            tree.call(session_id, &id),
            "{line}"
        );
        assert_eq!(
            typed.facts(session_id, &id),
            tree.facts(session_id, &id),
            "{line}"
        );
        read
    }

    #[test]
    fn an_update_read_from_its_line_merges_as_its_tree_does() {
        let frame = |update: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{update}}}}}"#
            )
        };
        let (mut typed, mut tree) = (Timeline::default(), Timeline::default());
        let mut read = Vec::new();
        for update in [
            // A sparse first announcement: the title is the id, the type from nothing.
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"in_progress"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"a"}}]}"#,
            // A diff in the content makes it a file change, and its path a place.
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"diff","path":"/w/a","oldText":null,"newText":"x"}]}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"b"}}],"content":null}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":null}"#,
            // Read as a tree (rawInput): its content replaces the one kept as text.
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","rawInput":{"path":"/w/b"},"content":[]}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","title":"Edit","kind":"edit"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"other","status":"completed"}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"d","title":"ls","kind":"other","status":"pending","content":[]}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"d","kind":"execute"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"d","kind":"bogus","title":"ls -l"}"#,
        ] {
            read.push(announce_both(&mut typed, &mut tree, &frame(update)));
        }
        // Every update but the ones with a repeated key and a rawInput took the line's way.
        assert_eq!(
            read,
            [
                true, true, true, false, true, false, true, true, true, true, true
            ]
        );
        assert_eq!(
            typed.call("s", "c").and_then(|c| c.get("kind")),
            Some(&json!("edit"))
        );
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
