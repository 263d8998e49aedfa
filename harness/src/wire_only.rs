//! The user, for clients without a control-plane adapter: the prompt was already given on the
//! command line (`{prompt}`), options are chosen by the client's own policy, and a cancel is a
//! SIGINT to the client process. Each action is noted in the transcript so checks know the user
//! acted.

use std::time::Duration;

use acp_fake_agents::engine::{UserAction, UserDriver};
use acp_fake_agents::transcript::Recorder;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::json;

pub struct WireOnlyUser {
    pub pid: i32,
    pub rec: Recorder,
    /// ACP session id per harness handle, as far as the scenario knows it.
    pub session_ids: Vec<(String, String)>,
}

impl UserDriver for WireOnlyUser {
    async fn act(&mut self, action: UserAction, _timeout: Duration) -> Result<(), String> {
        match action {
            UserAction::NewSession { .. } | UserAction::Prompt { .. } => Ok(()),
            UserAction::Choose { .. } => {
                // The client answers by its own policy; nothing to click.
                self.rec.note(json!({"type":"user_choose_skipped","reason":"client has no control plane; it answers by its own policy"}));
                Ok(())
            }
            UserAction::Cancel { session, .. } => {
                let session_id = self
                    .session_ids
                    .iter()
                    .find(|(h, _)| *h == session)
                    .map(|(_, id)| id.clone())
                    .unwrap_or_default();
                self.rec
                    .note(json!({"type":"user_cancel","sessionId":session_id,"by":"SIGINT"}));
                nix::sys::signal::kill(Pid::from_raw(self.pid), Signal::SIGINT)
                    .map_err(|e| format!("could not send SIGINT to the client: {e}"))
            }
        }
    }
}
