//! The agent's `fs/*` requests: which paths the client serves by itself (`fs_scope.rs`), and the
//! approvals that open a path outside the workspace.

use serde_json::Value;

use super::*;

impl Client {
    /// `fs/read_text_file` or `fs/write_text_file` (`write`), after the scope check.
    pub(super) async fn on_fs(
        &mut self,
        mut params: Value,
        write: bool,
    ) -> Result<Value, RpcError> {
        let path = fs::absolute_path(&params)?;
        let session_id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`sessionId` (string) is required"))?;
        let cwd = self
            .session_by_id(session_id)
            .map(|s| s.cwd.clone())
            .ok_or_else(|| RpcError::invalid_params(format!("unknown sessionId {session_id:?}")))?;
        self.fs_grants
            .check(session_id, Path::new(&cwd), &path, write, self.mutant)?;
        if !write {
            return fs::read_text_file(&params, self.mutant).await;
        }
        // MUTANT editor-save-hooks (Zed ensure_final_newline_on_save and
        // remove_trailing_whitespace_on_save, on by default): the write goes through the editor
        // buffer's save hooks, which rewrite the content.
        if self.mutant == Some(Mutant::EditorSaveHooks) {
            if let Some(text) = params.get("content").and_then(Value::as_str) {
                let mut saved: String = text
                    .split_inclusive('\n')
                    .map(|line| {
                        let body = line.strip_suffix('\n').unwrap_or(line);
                        let ending = &line[body.len()..];
                        format!("{}{ending}", body.trim_end_matches([' ', '\t']))
                    })
                    .collect();
                if !saved.ends_with('\n') {
                    saved.push('\n');
                }
                params["content"] = Value::String(saved);
            }
        }
        fs::write_text_file(&params).await
    }

    /// An allow answer (the user's or the policy's) to a request for this tool call opens the
    /// places it names to the agent's fs calls in that session.
    pub(super) fn grant_fs(&mut self, session_id: &str, tool_call_id: &str) {
        let Some(cwd) = self.session_by_id(session_id).map(|s| s.cwd.clone()) else {
            return;
        };
        let (kinds, places) = self.timeline.facts(session_id, tool_call_id);
        let call = self
            .timeline
            .call(session_id, tool_call_id)
            .cloned()
            .unwrap_or_default();
        let kinds = decide::effective_kinds(kinds, &call);
        let places = places.to_vec();
        self.fs_grants
            .grant(session_id, &places, &kinds, Path::new(&cwd));
    }
}
