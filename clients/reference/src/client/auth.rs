//! Authentication: an agent that answers `session/new` with `auth_required` (-32000) is
//! authenticated once, with the first method it advertised in `initialize` that the agent itself
//! carries out (an `authMethods` entry without a `type`; never a `terminal` method, spec
//! authentication.mdx), and the session is then opened again. Without such a method, or when the
//! agent still refuses after authenticating, the session fails with the agent's reason: no
//! session is used before a required `authenticate` succeeded. The mutant's decision point is
//! marked `MUTANT`.

use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::*;

/// JSON-RPC error code of ACP's `auth_required`.
pub const AUTH_REQUIRED: i64 = -32000;

/// What the agent advertised, and whether `authenticate` already succeeded.
#[derive(Debug, Default)]
pub struct Auth {
    methods: Vec<Value>,
    authenticated: bool,
}

impl Auth {
    /// The first advertised method the agent carries out itself (no `type`, or `"agent"`).
    fn agent_method(&self) -> Option<String> {
        self.methods
            .iter()
            .find(|m| matches!(m.get("type").and_then(Value::as_str), None | Some("agent")))
            .and_then(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_owned)
    }
}

impl Client {
    /// `initialize` answered: keep its `authMethods`.
    pub(super) fn remember_auth_methods(&mut self, result: &Value) {
        self.auth.methods = result
            .get("authMethods")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
    }

    /// `session/new` for `handle` failed with `auth_required`. True if the client authenticates
    /// (or, as a mutant, retries) and the session stays opening; false if it fails.
    pub(super) fn on_auth_required(&mut self, handle: &str) -> bool {
        // MUTANT retry-without-authenticate (omnigent-ai/omnigent#7282: the generic executor
        // "never sent that call", so every turn opened a session the agent had refused): the
        // session is opened again without authenticating, once.
        if self.mutant == Some(Mutant::RetryWithoutAuthenticate) && !self.auth.authenticated {
            self.auth.authenticated = true;
            self.send_session_new(handle);
            return true;
        }
        if self.auth.authenticated {
            return false;
        }
        // MUTANT authenticate-unadvertised (getpaseo/paseo#4775: the method id comes from the
        // client's own settings): a fixed id, whatever the agent advertised.
        let method_id = if self.mutant == Some(Mutant::AuthenticateUnadvertised) {
            Some("api-key".to_owned())
        } else {
            self.auth.agent_method()
        };
        let Some(method_id) = method_id else {
            return false;
        };
        log!("the agent requires authentication: authenticate with {method_id:?}");
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::Authenticate,
                json!({"methodId": method_id}),
                Purpose::Authenticate {
                    handle: handle.to_owned(),
                },
            );
        }
        true
    }

    /// The agent answered `authenticate`: open the session again, or fail it.
    pub(super) fn on_authenticate_answer(&mut self, handle: &str, result: Result<Value, RpcError>) {
        match result {
            Ok(_) => {
                self.auth.authenticated = true;
                self.send_session_new(handle);
            }
            Err(e) => {
                let seq = self.session_by_handle(handle).map(|s| s.seq);
                self.sessions.retain(|s| s.handle != handle);
                self.report_error(
                    seq,
                    format!("authentication failed: {} ({})", e.message, e.code),
                );
            }
        }
    }
}
