//! Pending approvals: the `session/request_permission` requests the client has shown and not yet
//! answered, with the options exactly as offered.

use serde_json::Value;

/// One offered `PermissionOption`, verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    /// `allow_once | allow_always | reject_once | reject_always` (kept as sent).
    pub kind: String,
}

impl PermissionOption {
    pub fn is_allow(&self) -> bool {
        self.kind.starts_with("allow")
    }

    pub fn is_reject(&self) -> bool {
        self.kind.starts_with("reject")
    }
}

/// Parse `options` of a permission request. Options without a string `optionId` cannot be
/// answered and are skipped (returned separately, for the log); a missing or non-string `name`
/// is shown as the optionId.
pub fn parse_options(options: &[Value]) -> (Vec<PermissionOption>, Vec<Value>) {
    let mut parsed = Vec::new();
    let mut skipped = Vec::new();
    for option in options {
        let Some(option_id) = option.get("optionId").and_then(Value::as_str) else {
            skipped.push(option.clone());
            continue;
        };
        parsed.push(PermissionOption {
            option_id: option_id.to_owned(),
            name: option
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| !name.trim().is_empty())
                .unwrap_or(option_id)
                .to_owned(),
            kind: option
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }
    (parsed, skipped)
}

/// Button labels, one per option in offer order. A careful editor never shows two buttons a
/// person cannot tell apart (same text up to case and surrounding spaces): a name shared by
/// several options gets its kind appended ("Allow (allow always)"), then its optionId, then its
/// position, until every label is distinct.
pub fn labels(options: &[PermissionOption]) -> Vec<String> {
    let mut labels: Vec<String> = options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            if o.name.trim().is_empty() {
                format!("Option {}", i + 1)
            } else {
                o.name.clone()
            }
        })
        .collect();
    // Labels a person cannot tell apart collide: "Allow", "allow " and "ALLOW" are one label.
    // Position suffixes repeat until every label is distinct (bounded: each round makes the
    // colliding labels differ in one more place).
    // Each label's key is computed once and again only when a suffix changed the label.
    let key = |label: &str| label.trim().to_lowercase();
    let mut keys: Vec<String> = labels.iter().map(|l| key(l)).collect();
    for round in 0..labels.len() + 3 {
        let colliding: Vec<usize> = (0..keys.len())
            .filter(|&i| keys.iter().filter(|k| **k == keys[i]).count() > 1)
            .collect();
        if colliding.is_empty() {
            break;
        }
        for i in colliding {
            let o = &options[i];
            let suffix = match round {
                0 => format!(" ({})", o.kind.replace('_', " ")),
                1 => format!(" [{}]", o.option_id),
                _ => format!(" #{}", i + 1),
            };
            labels[i].push_str(&suffix);
            keys[i] = key(&labels[i]);
        }
    }
    labels
}

/// An approval card on screen.
#[derive(Debug, Clone)]
pub struct Approval {
    /// The JSON-RPC id of the request, verbatim (string, number or null).
    pub request_id: Value,
    pub session_id: String,
    pub tool_call_id: String,
    pub options: Vec<PermissionOption>,
}

impl Approval {
    pub fn option(&self, option_id: &str) -> Option<&PermissionOption> {
        self.options.iter().find(|o| o.option_id == option_id)
    }
}

/// The approvals waiting for the user, in arrival order.
#[derive(Debug, Default)]
pub struct Approvals {
    pending: Vec<Approval>,
}

impl Approvals {
    pub fn add(&mut self, approval: Approval) {
        self.pending.push(approval);
    }

    /// The pending approval whose request id equals `request_id` exactly (`1` ≠ `"1"` ≠ `1.0`).
    pub fn get(&self, request_id: &Value) -> Option<&Approval> {
        self.pending.iter().find(|a| a.request_id == *request_id)
    }

    pub fn take(&mut self, request_id: &Value) -> Option<Approval> {
        let position = self
            .pending
            .iter()
            .position(|a| a.request_id == *request_id)?;
        Some(self.pending.remove(position))
    }

    /// Remove and return every pending approval.
    pub fn take_all(&mut self) -> Vec<Approval> {
        std::mem::take(&mut self.pending)
    }

    /// Remove and return every pending approval of one session, in arrival order.
    pub fn take_session(&mut self, session_id: &str) -> Vec<Approval> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|a| a.session_id == session_id);
        self.pending = kept;
        taken
    }

    /// Remove and return the pending approvals of one tool call (only the
    /// `overwrite-same-tool-call` mutant keys approvals this way).
    pub fn take_tool_call(&mut self, session_id: &str, tool_call_id: &str) -> Vec<Approval> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|a| a.session_id == session_id && a.tool_call_id == tool_call_id);
        self.pending = kept;
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: Value) -> Vec<PermissionOption> {
        parse_options(v.as_array().expect("array")).0
    }

    #[test]
    fn distinct_names_are_kept() {
        let o = opts(json!([
            {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]));
        assert_eq!(labels(&o), ["Allow once", "Always allow", "Reject"]);
    }

    #[test]
    fn colliding_names_are_made_distinguishable() {
        let o = opts(json!([
            {"optionId": "a1", "name": "Allow", "kind": "allow_once"},
            {"optionId": "a2", "name": "Allow", "kind": "allow_always"},
            {"optionId": "r1", "name": "Reject", "kind": "reject_once"},
            {"optionId": "r2", "name": "Reject", "kind": "reject_once"},
            {"optionId": "r2", "name": "Reject", "kind": "reject_once"},
        ]));
        let l = labels(&o);
        assert_eq!(l[0], "Allow (allow once)");
        assert_eq!(l[1], "Allow (allow always)");
        assert_eq!(l[2], "Reject (reject once) [r1]");
        assert_eq!(l[3], "Reject (reject once) [r2] #4");
        assert_eq!(l[4], "Reject (reject once) [r2] #5");
    }

    #[test]
    fn labels_differing_only_in_case_or_spaces_are_made_distinguishable() {
        let o = opts(json!([
            {"optionId": "a", "name": "Allow", "kind": "allow_once"},
            {"optionId": "b", "name": "allow ", "kind": "allow_once"},
            {"optionId": "c", "name": "ALLOW", "kind": "reject_once"},
        ]));
        let l = labels(&o);
        let keys: std::collections::BTreeSet<String> =
            l.iter().map(|l| l.trim().to_lowercase()).collect();
        assert_eq!(keys.len(), 3, "{l:?}");
        assert_eq!(l[2], "ALLOW (reject once)");
    }

    #[test]
    fn invalid_options_are_skipped_and_nameless_ones_show_their_id() {
        let (o, skipped) = parse_options(&[
            json!({"optionId": 3, "name": "x", "kind": "allow_once"}),
            json!({"optionId": "cancel", "kind": "reject_once"}),
        ]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(labels(&o), ["cancel"]);
        assert!(o[0].is_reject());
        let (o, _) = parse_options(&[json!({"optionId": "", "name": " ", "kind": "allow_once"})]);
        assert_eq!(labels(&o), ["Option 1"]);
    }

    #[test]
    fn request_ids_compare_exactly() {
        let mut a = Approvals::default();
        for id in [json!(1), json!("1"), Value::Null] {
            a.add(Approval {
                request_id: id,
                session_id: "s".into(),
                tool_call_id: "c".into(),
                options: Vec::new(),
            });
        }
        assert!(a.get(&json!(1.0)).is_none());
        assert_eq!(a.take(&json!("1")).map(|x| x.request_id), Some(json!("1")));
        assert_eq!(a.take_session("s").len(), 2);
        assert!(a.take_session("s").is_empty());
    }
}
