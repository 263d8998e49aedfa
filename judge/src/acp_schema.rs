//! ACP v1 JSON Schema validation of message payloads (docs/architecture.md §3).
//!
//! The schemas are generated at run time with `schemars` from the official
//! `agent-client-protocol-schema` crate the harness links ([`SCHEMA_VERSION`]), one per method and
//! direction, with the generator settings of the spec repository's own schema generator (draft
//! 2020-12, untagged variant titles, `RemoveRefSiblings`, `ReplaceBoolSchemas`). Each validator is
//! compiled lazily, once per process.
//!
//! Only payloads are validated here (`params` of requests and notifications, `result` of
//! responses); the JSON-RPC envelope (`jsonrpc`, ids, `result` xor `error`) is checked by hand in
//! [`crate::wire_model`], so that an envelope error is reported once and precisely.
//!
//! Tolerated on purpose: a `null` result is accepted for the responses whose
//! type is an empty object that the official crate itself deserializes with `#[serde(default)]`
//! (`fs/write_text_file`, `session/load`, `authenticate`, …). Methods whose name starts with `_`
//! are extensions: only their envelope is checked.

use std::collections::HashMap;
use std::sync::OnceLock;

use agent_client_protocol_schema::v1 as acp;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use serde_json::Value;

/// Who sent a payload: the envelope's notion, re-exported here because every function of this
/// module is keyed by it.
pub use crate::wire_model::Side;

/// Which schema the harness validates against; recorded in `run.json`.
pub const SCHEMA_VERSION: &str =
    "agent-client-protocol-schema 1.20.0 via schemars, JSON Schema draft 2020-12";

/// Longest schema error message kept (characters), and how many errors one message reports.
const MAX_ERROR_CHARS: usize = 240;
const MAX_ERRORS: usize = 3;

/// What a payload is, for the lookup of its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadKind {
    /// `params` of a request.
    RequestParams,
    /// `params` of a notification.
    NotificationParams,
    /// `result` of a successful response to a request of the given method.
    Result,
}

/// The outcome of validating one payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validation {
    /// The payload validates against its method's schema.
    Valid,
    /// A `_`-prefixed extension method: only the envelope is checked.
    Extension,
    /// No ACP v1 method of that name exists for this sender and message kind.
    UnknownMethod,
    /// Schema violations: `<instance path>: <message>`, bounded in number and length.
    Invalid(Vec<String>),
}

impl Validation {
    pub fn is_ok(&self) -> bool {
        matches!(self, Validation::Valid | Validation::Extension)
    }
}

/// One entry of the method table: which type's schema applies and whether `null` is tolerated.
struct Entry {
    /// Name of the Rust type in `agent_client_protocol_schema::v1` (for messages and tests).
    type_name: &'static str,
    generate: fn() -> Value,
    /// G3: the official crate accepts `null` for this (empty-object) result.
    null_ok: bool,
    /// The compiled validator, built on first use.
    compiled: OnceLock<Result<Validator, String>>,
}

impl Entry {
    fn validator(&self) -> &Result<Validator, String> {
        self.compiled.get_or_init(|| {
            let schema = (self.generate)();
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&schema)
                .map_err(|e| format!("schema for {} does not compile: {e}", self.type_name))
        })
    }
}

fn schema_of<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.untagged_enum_variant_titles = true;
    });
    let mut replace_bools = ReplaceBoolSchemas::default();
    replace_bools.skip_additional_properties = true;
    let generator = settings
        .with_transform(RemoveRefSiblings::default())
        .with_transform(replace_bools)
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

macro_rules! entry {
    ($ty:ident) => {
        entry!($ty, false)
    };
    ($ty:ident, $null_ok:expr) => {
        Entry {
            type_name: stringify!($ty),
            generate: schema_of::<acp::$ty>,
            null_ok: $null_ok,
            compiled: OnceLock::new(),
        }
    };
}

/// The method table: (sender, payload kind, method) → schema type.
type Table = HashMap<(Side, PayloadKind), HashMap<&'static str, Entry>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        use PayloadKind::*;
        use Side::*;
        use acp_vocab::method::Method as M;
        let mut t: Table = HashMap::new();
        let mut put = |side: Side, kind: PayloadKind, method: M, entry: Entry| {
            t.entry((side, kind))
                .or_default()
                .insert(method.as_str(), entry);
        };
        // Client → agent requests, and the agent's results for them.
        let client_requests: [(M, Entry, Entry); 12] = [
            (
                M::Initialize,
                entry!(InitializeRequest),
                entry!(InitializeResponse),
            ),
            (
                M::Authenticate,
                entry!(AuthenticateRequest),
                entry!(AuthenticateResponse, true),
            ),
            (
                M::Logout,
                entry!(LogoutRequest),
                entry!(LogoutResponse, true),
            ),
            (
                M::SessionNew,
                entry!(NewSessionRequest),
                entry!(NewSessionResponse),
            ),
            (
                M::SessionLoad,
                entry!(LoadSessionRequest),
                entry!(LoadSessionResponse, true),
            ),
            (
                M::SessionList,
                entry!(ListSessionsRequest),
                entry!(ListSessionsResponse),
            ),
            (
                M::SessionDelete,
                entry!(DeleteSessionRequest),
                entry!(DeleteSessionResponse, true),
            ),
            (
                M::SessionResume,
                entry!(ResumeSessionRequest),
                entry!(ResumeSessionResponse, true),
            ),
            (
                M::SessionClose,
                entry!(CloseSessionRequest),
                entry!(CloseSessionResponse, true),
            ),
            (
                M::SessionSetMode,
                entry!(SetSessionModeRequest),
                entry!(SetSessionModeResponse, true),
            ),
            (
                M::SessionSetConfigOption,
                entry!(SetSessionConfigOptionRequest),
                entry!(SetSessionConfigOptionResponse),
            ),
            (
                M::SessionPrompt,
                entry!(PromptRequest),
                entry!(PromptResponse),
            ),
        ];
        for (method, req, res) in client_requests {
            put(Client, RequestParams, method, req);
            put(Agent, Result, method, res);
        }
        // Agent → client requests, and the client's results for them.
        let agent_requests: [(M, Entry, Entry); 9] = [
            (
                M::SessionRequestPermission,
                entry!(RequestPermissionRequest),
                entry!(RequestPermissionResponse),
            ),
            (
                M::FsReadTextFile,
                entry!(ReadTextFileRequest),
                entry!(ReadTextFileResponse),
            ),
            (
                M::FsWriteTextFile,
                entry!(WriteTextFileRequest),
                entry!(WriteTextFileResponse, true),
            ),
            (
                M::TerminalCreate,
                entry!(CreateTerminalRequest),
                entry!(CreateTerminalResponse),
            ),
            (
                M::TerminalOutput,
                entry!(TerminalOutputRequest),
                entry!(TerminalOutputResponse),
            ),
            (
                M::TerminalRelease,
                entry!(ReleaseTerminalRequest),
                entry!(ReleaseTerminalResponse, true),
            ),
            (
                M::TerminalWaitForExit,
                entry!(WaitForTerminalExitRequest),
                entry!(WaitForTerminalExitResponse),
            ),
            (
                M::TerminalKill,
                entry!(KillTerminalRequest),
                entry!(KillTerminalResponse, true),
            ),
            (
                M::ElicitationCreate,
                entry!(CreateElicitationRequest),
                entry!(CreateElicitationResponse),
            ),
        ];
        for (method, req, res) in agent_requests {
            put(Agent, RequestParams, method, req);
            put(Client, Result, method, res);
        }
        // Notifications.
        put(
            Client,
            NotificationParams,
            M::SessionCancel,
            entry!(CancelNotification),
        );
        put(
            Agent,
            NotificationParams,
            M::SessionUpdate,
            entry!(SessionNotification),
        );
        put(
            Agent,
            NotificationParams,
            M::ElicitationComplete,
            entry!(CompleteElicitationNotification),
        );
        for side in [Client, Agent] {
            put(
                side,
                NotificationParams,
                M::CancelRequest,
                entry!(CancelRequestNotification),
            );
        }
        t
    })
}

fn lookup(from: Side, kind: PayloadKind, method: &str) -> Option<&'static Entry> {
    table().get(&(from, kind))?.get(method)
}

/// The name of the official type whose schema applies, if the method is known.
pub fn schema_type_name(from: Side, kind: PayloadKind, method: &str) -> Option<&'static str> {
    lookup(from, kind, method).map(|entry| entry.type_name)
}

/// For a request or notification whose method ACP v1 defines only as the other kind of message
/// (in that direction): "sent as a request, but `session/cancel` is a notification" (or the
/// converse). `None` when the kind is right or the method unknown.
pub fn wrong_message_kind(from: Side, kind: PayloadKind, method: &str) -> Option<String> {
    let (sent, other, is) = match kind {
        PayloadKind::RequestParams => ("request", PayloadKind::NotificationParams, "notification"),
        PayloadKind::NotificationParams => ("notification", PayloadKind::RequestParams, "request"),
        PayloadKind::Result => return None,
    };
    (lookup(from, kind, method).is_none() && lookup(from, other, method).is_some())
        .then(|| format!("sent as a {sent}, but `{method}` is a {is}"))
}

/// The generated JSON Schema for a method's payload (for reports and debugging).
pub fn schema_json(from: Side, kind: PayloadKind, method: &str) -> Option<Value> {
    lookup(from, kind, method).map(|entry| (entry.generate)())
}

/// Validates a payload sent by `from`.
///
/// * `RequestParams` / `NotificationParams`: `method` is the message's own method and `payload`
///   its `params` (`None` when absent, validated as `null`).
/// * `Result`: `method` is the method of the request being answered and `payload` the `result`.
pub fn validate(
    from: Side,
    kind: PayloadKind,
    method: &str,
    payload: Option<&Value>,
) -> Validation {
    if method.starts_with('_') {
        return Validation::Extension;
    }
    let Some(entry) = lookup(from, kind, method) else {
        return Validation::UnknownMethod;
    };
    let null = Value::Null;
    let payload = payload.unwrap_or(&null);
    if entry.null_ok && kind == PayloadKind::Result && payload.is_null() {
        return Validation::Valid;
    }
    let compiled = match entry.validator() {
        Ok(v) => v,
        Err(e) => return Validation::Invalid(vec![bounded(e)]),
    };
    let errors: Vec<String> = compiled
        .iter_errors(payload)
        .take(MAX_ERRORS)
        .map(|e| bounded(&explain(&e)))
        .collect();
    if errors.is_empty() {
        Validation::Valid
    } else {
        Validation::Invalid(errors)
    }
}

/// `<instance path>: <message>` for one validation error. For a failed `oneOf`/`anyOf` (how
/// schemars renders tagged enums) it descends into the branch that matched the discriminator, or,
/// when every branch failed on a constant at the same place (an unknown tag or enum word), lists
/// the allowed values, so that the message names the real problem.
fn explain(error: &ValidationError<'_>) -> String {
    let context = match error.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            context
        }
        _ => return format!("{}: {error}", path_of(error.instance_path().as_str())),
    };
    let is_const = |e: &ValidationError<'_>| {
        matches!(
            e.kind(),
            ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. }
        )
    };
    // A branch that did not fail on a constant is the one the sender meant: explain its first
    // error (the branch with the fewest errors wins).
    if let Some(branch) = context
        .iter()
        .filter(|branch| !branch.is_empty() && !branch.iter().any(is_const))
        .min_by_key(|branch| branch.len())
    {
        return explain(&branch[0]);
    }
    // Every branch failed on a constant: if they all failed at one place, list what is allowed.
    let mut place: Option<(&str, &Value)> = None;
    let mut allowed: Vec<String> = Vec::new();
    for branch in context {
        let Some(c) = branch.iter().find(|e| is_const(e)) else {
            continue;
        };
        let here = c.instance_path().as_str();
        match place {
            None => place = Some((here, c.instance().as_ref())),
            Some((p, _)) if p == here => {}
            Some(_) => {
                place = None;
                allowed.clear();
                break;
            }
        }
        match c.kind() {
            ValidationErrorKind::Constant { expected_value } => {
                allowed.push(short_value(expected_value))
            }
            ValidationErrorKind::Enum { options } => match options.as_array() {
                Some(items) => allowed.extend(items.iter().map(short_value)),
                None => allowed.push(short_value(options)),
            },
            _ => {}
        }
    }
    match place {
        Some((path, actual)) if !allowed.is_empty() => format!(
            "{}: {} is not one of {}",
            path_of(path),
            short_value(actual),
            allowed.join(", ")
        ),
        _ => format!("{}: {error}", path_of(error.instance_path().as_str())),
    }
}

fn path_of(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

fn short_value(value: &Value) -> String {
    truncate_chars(&value.to_string(), 60)
}

/// Truncates a message to [`MAX_ERROR_CHARS`] characters (on a character boundary).
fn bounded(message: &str) -> String {
    truncate_chars(message, MAX_ERROR_CHARS)
}

/// Truncates `s` to at most `max` characters, marking the cut with `…`.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(from: Side, kind: PayloadKind, method: &str, payload: Value) -> Validation {
        validate(from, kind, method, Some(&payload))
    }

    #[test]
    fn every_table_schema_compiles() {
        let mut n = 0;
        for entries in table().values() {
            for entry in entries.values() {
                if let Err(e) = entry.validator() {
                    panic!("{e}");
                }
                n += 1;
            }
        }
        assert_eq!(n, 12 * 2 + 9 * 2 + 3 + 2);
    }

    #[test]
    fn permission_response_valid_and_invalid() {
        let ok = json!({"outcome":{"outcome":"selected","optionId":"once"}});
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::Result,
                "session/request_permission",
                ok
            ),
            Validation::Valid
        );
        let cancelled = json!({"outcome":{"outcome":"cancelled"}});
        assert!(
            v(
                Side::Client,
                PayloadKind::Result,
                "session/request_permission",
                cancelled
            )
            .is_ok()
        );
        // `optionId` missing from a `selected` outcome.
        let bad = json!({"outcome":{"outcome":"selected"}});
        match v(
            Side::Client,
            PayloadKind::Result,
            "session/request_permission",
            bad,
        ) {
            Validation::Invalid(errors) => {
                assert!(!errors.is_empty());
                assert!(errors[0].starts_with("/outcome"), "{errors:?}");
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
        let bad = json!({"outcome":{"outcome":"selected"}});
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::Result,
                "session/request_permission",
                bad
            ),
            Validation::Invalid(vec![
                "/outcome: \"optionId\" is a required property".to_owned()
            ])
        );
        // An unknown outcome word.
        let bad = json!({"outcome":{"outcome":"approved","optionId":"once"}});
        assert!(matches!(
            v(
                Side::Client,
                PayloadKind::Result,
                "session/request_permission",
                bad
            ),
            Validation::Invalid(_)
        ));
    }

    #[test]
    fn g3_null_write_result_is_tolerated_but_not_for_read() {
        assert_eq!(
            validate(
                Side::Client,
                PayloadKind::Result,
                "fs/write_text_file",
                Some(&Value::Null)
            ),
            Validation::Valid
        );
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::Result,
                "fs/write_text_file",
                json!({})
            ),
            Validation::Valid
        );
        assert!(matches!(
            validate(
                Side::Client,
                PayloadKind::Result,
                "fs/read_text_file",
                Some(&Value::Null)
            ),
            Validation::Invalid(_)
        ));
    }

    #[test]
    fn requests_and_notifications_by_direction() {
        let new_session = json!({"cwd":"/tmp/w","mcpServers":[]});
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::RequestParams,
                "session/new",
                new_session.clone()
            ),
            Validation::Valid
        );
        // The agent never sends session/new.
        assert_eq!(
            v(
                Side::Agent,
                PayloadKind::RequestParams,
                "session/new",
                new_session
            ),
            Validation::UnknownMethod
        );
        assert!(matches!(
            v(
                Side::Client,
                PayloadKind::RequestParams,
                "session/new",
                json!({"cwd":"/tmp/w"})
            ),
            Validation::Invalid(_)
        ));
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::NotificationParams,
                "session/cancel",
                json!({"sessionId":"s"})
            ),
            Validation::Valid
        );
        assert_eq!(
            validate(
                Side::Client,
                PayloadKind::NotificationParams,
                "session/cancel",
                None
            ),
            Validation::Invalid(vec!["/: null is not of type \"object\"".to_owned()])
        );
        assert_eq!(
            v(
                Side::Client,
                PayloadKind::RequestParams,
                "_zed/anything",
                json!(42)
            ),
            Validation::Extension
        );
    }

    #[test]
    fn session_update_tool_call_and_unknown_update() {
        let update = json!({"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"edit","kind":"edit","status":"pending"}});
        assert_eq!(
            v(
                Side::Agent,
                PayloadKind::NotificationParams,
                "session/update",
                update
            ),
            Validation::Valid
        );
        let unknown = json!({"sessionId":"s","update":{"sessionUpdate":"telepathy"}});
        assert!(matches!(
            v(
                Side::Agent,
                PayloadKind::NotificationParams,
                "session/update",
                unknown
            ),
            Validation::Invalid(_)
        ));
        let unknown = json!({"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"x","kind":"frob"}});
        match v(
            Side::Agent,
            PayloadKind::NotificationParams,
            "session/update",
            unknown,
        ) {
            Validation::Invalid(errors) => assert!(
                errors[0].starts_with("/update/kind: \"frob\" is not one of \"read\", \"edit\""),
                "{errors:?}"
            ),
            other => panic!("expected Invalid, got {other:?}"),
        }
        let bad_kind = json!({"sessionId":"s","toolCall":{"toolCallId":"c1","kind":"edit"},
            "options":[{"optionId":"a","name":"A","kind":"allow_sometimes"}]});
        assert!(matches!(
            v(
                Side::Agent,
                PayloadKind::RequestParams,
                "session/request_permission",
                bad_kind
            ),
            Validation::Invalid(_)
        ));
    }

    #[test]
    fn errors_are_bounded() {
        let long = "x".repeat(10_000);
        let bad = json!({"outcome":{"outcome": long}});
        if let Validation::Invalid(errors) = v(
            Side::Client,
            PayloadKind::Result,
            "session/request_permission",
            bad,
        ) {
            assert!(errors.len() <= MAX_ERRORS);
            assert!(
                errors
                    .iter()
                    .all(|e| e.chars().count() <= MAX_ERROR_CHARS + 1)
            );
        } else {
            panic!("expected Invalid");
        }
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("hé", 2), "hé");
    }
}
