//! The client's file system methods (`clientCapabilities.fs`, both advertised):
//! `fs/read_text_file` and `fs/write_text_file`.
//!
//! Spec rules: paths MUST be absolute (R8), `line` is 1-based and `limit` the maximum number of
//! lines (R66), the client MUST create the file if it doesn't exist (R65).

use std::path::{Path, PathBuf};

use acp_vocab::method::Method;
use serde_json::{Value, json};

use crate::mutation::Mutant;
use crate::rpc::RpcError;

pub fn absolute_path(params: &Value) -> Result<PathBuf, RpcError> {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`path` (string) is required"))?;
    if !Path::new(path).is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "`path` must be absolute, got {path:?}"
        )));
    }
    Ok(PathBuf::from(path))
}

/// An optional positive integer parameter.
fn positive(params: &Value, key: &str, min: u64) -> Result<Option<u64>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n >= min => Ok(Some(n)),
            _ => Err(RpcError::invalid_params(format!(
                "`{key}` must be an integer >= {min}, got {value}"
            ))),
        },
    }
}

/// The lines `line..line+limit` (1-based) of `text`, line endings kept verbatim.
pub fn select_lines(text: &str, line: Option<u64>, limit: Option<u64>) -> String {
    let skip = line.map_or(0, |l| l.saturating_sub(1));
    let take = limit.unwrap_or(u64::MAX);
    text.split_inclusive('\n')
        .skip(usize::try_from(skip).unwrap_or(usize::MAX))
        .take(usize::try_from(take).unwrap_or(usize::MAX))
        .collect()
}

/// `fs/read_text_file {sessionId, path, line?, limit?}` → `{content}`.
pub async fn read_text_file(params: &Value, mutant: Option<Mutant>) -> Result<Value, RpcError> {
    // MUTANT refuse-reads (formulahendry/acp-ui#14): fs.readTextFile is advertised, but every
    // read is answered "Method not found".
    if mutant == Some(Mutant::RefuseReads) {
        return Err(RpcError::method_not_found(Method::FsReadTextFile.as_str()));
    }
    let path = absolute_path(params)?;
    let mut line = positive(params, "line", 1)?;
    // MUTANT read-line-zero-based (QwenLM/qwen-code vscode-ide-companion acpFileHandler.ts
    // before 13e242dd): `line` is used as a 0-based index, one line too far.
    if mutant == Some(Mutant::ReadLineZeroBased) {
        line = line.map(|l| l + 1);
    }
    let limit = positive(params, "limit", 0)?;
    let bytes = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RpcError::resource_not_found(&path.to_string_lossy()));
        }
        Err(e) => {
            return Err(RpcError::internal(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(json!({ "content": select_lines(&text, line, limit) }))
}

/// `fs/write_text_file {sessionId, path, content}` → `{}`. Creates the file (and its missing
/// parent directories) and writes exactly the given text.
pub async fn write_text_file(params: &Value) -> Result<Value, RpcError> {
    let path = absolute_path(params)?;
    let content = params
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`content` (string) is required"))?;
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| RpcError::internal(format!("cannot create {}: {e}", parent.display())))?;
    }
    tokio::fs::write(&path, content.as_bytes())
        .await
        .map_err(|e| RpcError::internal(format!("cannot write {}: {e}", path.display())))?;
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_limit_are_one_based_lines() {
        let text = "a\r\nb\nc\nd";
        assert_eq!(select_lines(text, None, None), text);
        assert_eq!(select_lines(text, Some(1), Some(1)), "a\r\n");
        assert_eq!(select_lines(text, Some(2), Some(2)), "b\nc\n");
        assert_eq!(select_lines(text, Some(3), None), "c\nd");
        assert_eq!(select_lines(text, Some(9), None), "");
        assert_eq!(select_lines(text, None, Some(0)), "");
    }

    #[tokio::test]
    async fn bad_params_are_invalid_params() {
        for params in [
            json!({"path": "rel/a.txt"}),
            json!({}),
            json!({"path": "/x", "line": 0}),
            json!({"path": "/x", "limit": -1}),
        ] {
            let err = read_text_file(&params, None).await.expect_err("invalid");
            assert_eq!(err.code, -32602, "{params}");
        }
        let err = write_text_file(&json!({"path": "/tmp/x"}))
            .await
            .expect_err("no content");
        assert_eq!(err.code, -32602);
    }
}
