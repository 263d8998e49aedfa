//! "Same shape": two frames agree when they have the same key sets at every level, the same JSON
//! types everywhere, arrays of the same length, and equal values wherever the value is part of
//! the protocol rather than data — `sessionUpdate`, `kind`, `status`, `type`, `optionId`,
//! `stopReason`, `decision`, `phase`, and an option's `name`. Ids, titles, paths and texts are
//! templated per run, so only their type is compared.
//!
//! Four things are tolerated, each named here so nothing else slips through:
//! * `"<number>"` — the claude recorder's placeholder for a run-dependent number;
//! * `"_meta": "_meta"` — the codex-acp snapshot serializer's placeholder for a `_meta` object
//!   (the source sends an object there, e.g. `{"is_mcp_tool_approval": true}`);
//! * maps keyed by ids (`agentsStates`, keyed by thread id): their keys are data, so only the
//!   number of entries and the entries' shapes are compared;
//! * the `arguments` an MCP tool was called with are that tool's own parameters: only their type
//!   (an object) is compared.

use acp_judge::wire_model::json_type;
use serde_json::Value;

/// Keys whose values are protocol vocabulary and must be equal.
const EXACT: &[&str] = &[
    "sessionUpdate",
    "kind",
    "status",
    "type",
    "optionId",
    "stopReason",
    "decision",
    "phase",
];

/// Objects whose keys are ids rather than field names.
const ID_KEYED: &[&str] = &["agentsStates"];

/// Objects whose keys are a tool's own parameters (compared by type only).
const OPAQUE: &[&str] = &["arguments"];

/// Every difference between a recorded value and ours, as `path: what`. Empty means same shape.
pub fn diff(recorded: &Value, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(recorded, ours, "", "", "", &mut out);
    out
}

/// `key` is the object key this value sits under ("" for an array element); `array_key` is the
/// key of the array whose element holds this value (so an option's `name` is known to be one).
fn walk(r: &Value, o: &Value, path: &str, key: &str, array_key: &str, out: &mut Vec<String>) {
    let at = if path.is_empty() { "/" } else { path };
    if r.as_str() == Some("<number>") && o.is_number() {
        return;
    }
    if key == "_meta" && r.as_str() == Some("_meta") && o.is_object() {
        return;
    }
    match (r, o) {
        (Value::Object(_), Value::Object(_)) if OPAQUE.contains(&key) => {}
        (Value::Object(ro), Value::Object(oo)) if ID_KEYED.contains(&key) => {
            if ro.len() != oo.len() {
                out.push(format!(
                    "{at}: {} entries recorded, {} ours",
                    ro.len(),
                    oo.len()
                ));
                return;
            }
            for (i, (rv, ov)) in ro.values().zip(oo.values()).enumerate() {
                // Entries are compared as plain objects, not as elements of `key`.
                walk(rv, ov, &format!("{path}/<entry {i}>"), "", "", out);
            }
        }
        (Value::Object(ro), Value::Object(oo)) => {
            let missing: Vec<&str> = ro
                .keys()
                .filter(|k| !oo.contains_key(*k))
                .map(String::as_str)
                .collect();
            let extra: Vec<&str> = oo
                .keys()
                .filter(|k| !ro.contains_key(*k))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                out.push(format!(
                    "{at}: keys missing in ours: {}",
                    missing.join(", ")
                ));
            }
            if !extra.is_empty() {
                out.push(format!(
                    "{at}: keys not in the recording: {}",
                    extra.join(", ")
                ));
            }
            // The fields of an array element know which array they are in (an option's `name`).
            let element_of = if key.is_empty() { array_key } else { "" };
            for (k, rv) in ro {
                if let Some(ov) = oo.get(k) {
                    walk(rv, ov, &format!("{path}/{k}"), k, element_of, out);
                }
            }
        }
        (Value::Array(ra), Value::Array(oa)) => {
            if ra.len() != oa.len() {
                out.push(format!(
                    "{at}: {} elements recorded, {} ours",
                    ra.len(),
                    oa.len()
                ));
                return;
            }
            for (i, (rv, ov)) in ra.iter().zip(oa).enumerate() {
                walk(rv, ov, &format!("{path}/{i}"), "", key, out);
            }
        }
        _ if json_type(r) != json_type(o) => out.push(format!(
            "{at}: recorded {} {r}, ours {} {o}",
            json_type(r),
            json_type(o)
        )),
        _ => {
            let exact = EXACT.contains(&key) || (key == "name" && array_key == "options");
            if exact && r != o {
                out.push(format!("{at}: recorded {r}, ours {o}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::diff;
    use serde_json::json;

    #[test]
    fn templated_values_pass_and_vocabulary_must_be_equal() {
        let recorded = json!({"toolCallId":"item-1","title":"echo hi","kind":"execute","status":"in_progress"});
        let ours = json!({"toolCallId":"call_9","title":"npm test","kind":"execute","status":"in_progress"});
        assert!(diff(&recorded, &ours).is_empty());
        let ours =
            json!({"toolCallId":"call_9","title":"npm test","kind":"edit","status":"in_progress"});
        assert_eq!(
            diff(&recorded, &ours),
            ["/kind: recorded \"execute\", ours \"edit\""]
        );
    }

    #[test]
    fn key_sets_types_and_lengths_are_compared_at_every_level() {
        let recorded = json!({"a":{"b":1,"c":null},"l":[1,2]});
        let ours = json!({"a":{"b":"1","d":2},"l":[1]});
        let d = diff(&recorded, &ours);
        assert!(
            d.contains(&"/a: keys missing in ours: c".to_owned()),
            "{d:?}"
        );
        assert!(
            d.contains(&"/a: keys not in the recording: d".to_owned()),
            "{d:?}"
        );
        assert!(
            d.iter().any(|m| m.starts_with("/a/b: recorded number")),
            "{d:?}"
        );
        assert!(
            d.contains(&"/l: 2 elements recorded, 1 ours".to_owned()),
            "{d:?}"
        );
    }

    #[test]
    fn option_names_and_ids_are_exact_other_names_are_not() {
        let recorded = json!({"options":[{"optionId":"allow_once","name":"Allow Once","kind":"allow_once"}],"name":"Bash"});
        let ours = json!({"options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"}],"name":"Edit"});
        assert_eq!(
            diff(&recorded, &ours),
            ["/options/0/name: recorded \"Allow Once\", ours \"Allow\""]
        );
    }

    #[test]
    fn the_three_recording_artefacts_are_tolerated_and_nothing_else() {
        let recorded = json!({"used":"<number>","_meta":"_meta","agentsStates":{"thread-a":{"status":"running"}}});
        let ours = json!({"used":12,"_meta":{"is_mcp_tool_approval":true},"agentsStates":{"019a":{"status":"running"}}});
        assert!(diff(&recorded, &ours).is_empty());
        // A placeholder stands for its own type only, and id-keyed entries are still compared.
        let ours = json!({"used":true,"_meta":5,"agentsStates":{"019a":{"status":"done"}}});
        assert_eq!(
            diff(&recorded, &ours).len(),
            3,
            "{:?}",
            diff(&recorded, &ours)
        );
        // MCP arguments are the tool's own data; anything else keeps its key set.
        let recorded = json!({"arguments":{"argument":"example"},"rawInput":{"command":"x"}});
        let ours = json!({"arguments":{"query":"q"},"rawInput":{"cmd":"x"}});
        assert_eq!(
            diff(&recorded, &ours).len(),
            2,
            "{:?}",
            diff(&recorded, &ours)
        );
    }
}
