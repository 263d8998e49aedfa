//! Which control messages are well formed: `control-v1.schema.json`, the published schema of
//! the control protocol (harness/CONTROL.md), against which every message in both directions
//! is validated — by the control plane (`control`) and by the observer (`observe`), which makes
//! the same events for a client without an adapter.

use std::sync::OnceLock;

use serde_json::Value;

/// The published control protocol schema.
pub const CONTROL_SCHEMA: &str = include_str!("../control-v1.schema.json");

fn control_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(CONTROL_SCHEMA).expect("control-v1.schema.json is valid JSON");
        jsonschema::validator_for(&schema).expect("control-v1.schema.json is a valid schema")
    })
}

/// Validates one control message; the error names the first violation.
pub fn validate_control(message: &Value) -> Result<(), String> {
    let validator = control_validator();
    match validator.iter_errors(message).next() {
        None => Ok(()),
        Some(err) => Err(format!("{err} (at {})", err.instance_path())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_accepts_the_documented_example_messages() {
        let doc = include_str!("../CONTROL.md");
        let mut seen = 0;
        for line in doc.lines() {
            let Some(pos) = line.find("{\"type\"") else {
                continue;
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line[pos..]) else {
                continue;
            };
            validate_control(&msg).unwrap_or_else(|e| panic!("{line}: {e}"));
            seen += 1;
        }
        assert!(
            seen >= 12,
            "only {seen} example messages found in CONTROL.md"
        );
    }

    #[test]
    fn schema_rejects_unknown_fields_and_types() {
        assert!(validate_control(&json!({"type":"hello"})).is_err());
        assert!(
            validate_control(&json!({"type":"turn","sessionId":"s","state":"exploded"})).is_err()
        );
        assert!(
            validate_control(
                &json!({"type":"item","sessionId":"s","toolCallId":"t","itemType":"file_change","status":"x","title":"t","extra":1})
            )
            .is_err()
        );
    }
}
