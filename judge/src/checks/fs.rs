//! `fs` — file-system requests really happen, byte for byte (R64–R66).
//!
//! Requirement: an `fs/write_text_file` the client answers with success leaves exactly the
//! requested bytes in that file; a client that advertised `fs.writeTextFile` does not refuse a
//! write inside the workspace (it must create the file, #65); and an `fs/read_text_file` answered
//! with success returns the file's lines from `line` (1-based) for at most `limit` lines (R66).
//!
//! Reading:
//! * Only paths inside the case's workspace or its `${outside}` directory are compared: the harness
//!   snapshots nothing else (`files_after`). A verifiable path with no snapshot at all is a harness
//!   `error`.
//! * Per path, the last write answered with success is compared with the file after the run;
//!   a later write the client never answered makes the path unverifiable.
//! * A read is compared only if no write to that path follows it. With `line`/`limit` the
//!   expected text is the selected lines with their line terminators; the final terminator may be
//!   left out (a CRLF whole, or only its LF: splitting lines on LF keeps the CR). Without them
//!   the whole file must come back exactly.
//! * #64 binds the agent (our fake agent); here it decides applicability: a request whose
//!   capability (`fs.readTextFile`, `fs.writeTextFile`) the client did not advertise is not graded,
//!   and a case with only such requests is `not_applicable`, with the reason.
//! * What a read must return comes from the harness's snapshot of the file after the run
//!   (`files_after`, read from the disk before the tempdir goes), not from the scenario's
//!   `[[setup]]`: the snapshot also holds files the client or an earlier write changed, and a
//!   read is only compared when no write to that path follows it, so the snapshot is the file
//!   the read saw. A read of a path that does not exist must be answered with an error (#66; the
//!   spec's code is -32002 resource not found, any error passes here).
//! * A read of an existing file inside the workspace (symlinks resolved), answered with an
//!   error, fails R66 as a refused write fails R65: advertising `fs.readTextFile` and opening the
//!   session there is the grant. Not judged: a read the agent withdrew (`-32800`), a file that is
//!   not UTF-8, a `line` past the end of the file (an error is a fair answer, as Zed gives one).
//! * Whether the client may serve a path outside the workspace at all is `auto-approval`'s
//!   question (R120, R121), not this check's.

use crate::rules::{RuleId, id::*};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use acp_vocab::method::Method;
use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::acp_schema::truncate_chars;
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel, WireMsg};

pub struct Fs;

impl Check for Fs {
    fn id(&self) -> &'static str {
        "fs"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R64, R65, R66]
    }

    fn requirement(&self) -> &'static str {
        "A successful fs/write_text_file leaves exactly the requested bytes on disk, and a successful fs/read_text_file returns the requested lines."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let requests: Vec<FsRequest<'_, '_>> = model
            .msgs
            .iter()
            .filter(|m| m.from == Side::Agent)
            .filter_map(|m| FsRequest::of(model, m))
            .collect();
        if requests.is_empty() {
            return Finding::not_applicable("scenario sends no fs request");
        }
        // Capabilities decide applicability: a request of a kind the client did not advertise
        // is not graded (R64 binds the agent), whatever the client did with it.
        let (requests, unadvertised): (Vec<_>, Vec<_>) = requests
            .into_iter()
            .partition(|r| model.client_fs_capability(r.msg.conn, r.capability()));
        if requests.is_empty() {
            let mut missing: Vec<&str> = unadvertised.iter().map(|r| r.capability()).collect();
            missing.dedup();
            return Finding::not_applicable(format!(
                "the client did not advertise fs.{}, so its {} fs request(s) are not graded",
                missing.join(" or fs."),
                unadvertised.len()
            ));
        }
        let mut problems = Problems::new();
        check_writes(case, &requests, &mut problems);
        check_reads(case, &requests, &mut problems);
        problems.finish("")
    }
}

/// An agent fs request with its path, params and the client's first answer.
struct FsRequest<'m, 'a> {
    msg: &'m WireMsg<'a>,
    write: bool,
    path: PathBuf,
    params: &'a Value,
    /// (index, result) of the first answer; result `None` for an error response.
    answer: Option<(usize, Option<&'a Value>)>,
    /// The first answer's `error`, when it is an error response.
    error: Option<&'a Value>,
}

impl<'m, 'a> FsRequest<'m, 'a> {
    /// The `clientCapabilities.fs` field that allows this method.
    fn capability(&self) -> &'static str {
        if self.write {
            "writeTextFile"
        } else {
            "readTextFile"
        }
    }

    fn of(model: &WireModel<'a>, msg: &'m WireMsg<'a>) -> Option<Self> {
        let write = match Method::parse(msg.method()?) {
            Some(Method::FsWriteTextFile) => true,
            Some(Method::FsReadTextFile) => false,
            _ => return None,
        };
        if !msg.is_request() {
            return None;
        }
        let params = msg.params()?;
        let path = PathBuf::from(params.get("path")?.as_str()?);
        let first = model.answers_to(msg.index).first().copied();
        let answer = first.map(|a| {
            let result = model.msg(a).and_then(|r| r.result());
            (a, result)
        });
        let error = first
            .and_then(|a| model.msg(a)?.json()?.get("error"))
            .filter(|e| !e.is_null());
        Some(FsRequest {
            msg,
            write,
            path,
            params,
            answer,
            error,
        })
    }
}

/// A path the harness snapshots: absolute, no `..`, inside the workspace or `${outside}`.
fn verifiable(case: &CaseRecord, path: &Path) -> bool {
    path.is_absolute()
        && !path.components().any(|c| matches!(c, Component::ParentDir))
        && (path.starts_with(&case.workspace) || path.starts_with(&case.outside))
        && !case.workspace.as_os_str().is_empty()
}

fn check_writes(case: &CaseRecord, requests: &[FsRequest<'_, '_>], problems: &mut Problems) {
    // Per path: the last write answered with success, unless a later write is unanswered.
    let mut last_success: BTreeMap<&Path, Option<&FsRequest<'_, '_>>> = BTreeMap::new();
    for w in requests.iter().filter(|r| r.write) {
        match w.answer {
            Some((_, Some(_))) => {
                last_success.insert(&w.path, Some(w));
            }
            Some((answer, None)) => {
                let inside = w.path.starts_with(&case.workspace) && verifiable(case, &w.path);
                if inside {
                    problems.fail(
                        R65,
                        format!(
                            "fs/write_text_file #{} for \"{}\" inside the workspace was refused with error #{answer}, although the client advertised fs.writeTextFile. Expected the file to be written (created if missing, #65).",
                            w.msg.index,
                            w.path.display()
                        ),
                        &[w.msg.index, answer],
                    );
                }
            }
            None => {
                last_success.insert(&w.path, None);
            }
        }
    }
    for (path, write) in last_success {
        let Some(w) = write else { continue };
        let Some(content) = w.params.get("content").and_then(Value::as_str) else {
            continue;
        };
        if !verifiable(case, path) {
            continue;
        }
        let frames = [w.msg.index, w.answer.map_or(w.msg.index, |(a, _)| a)];
        match case.files_after.get(path) {
            None => problems.error(
                format!(
                    "harness bug: no snapshot of \"{}\" after the run, so write #{} cannot be verified.",
                    path.display(),
                    w.msg.index
                ),
                &frames,
            ),
            Some(None) => problems.fail(
                R65,
                format!(
                    "fs/write_text_file #{} was answered with success but \"{}\" does not exist after the run. Expected {} bytes.",
                    w.msg.index,
                    path.display(),
                    content.len()
                ),
                &frames,
            ),
            Some(Some(bytes)) if bytes.as_slice() != content.as_bytes() => problems.fail(
                R65,
                format!(
                    "fs/write_text_file #{} was answered with success but \"{}\" does not hold the requested bytes: {}.",
                    w.msg.index,
                    path.display(),
                    describe_diff(content.as_bytes(), bytes)
                ),
                &frames,
            ),
            Some(Some(_)) => {}
        }
    }
}

fn check_reads(case: &CaseRecord, requests: &[FsRequest<'_, '_>], problems: &mut Problems) {
    let mut last_write: BTreeMap<&Path, usize> = BTreeMap::new();
    for w in requests.iter().filter(|r| r.write) {
        last_write.insert(&w.path, w.msg.index);
    }
    for r in requests.iter().filter(|r| !r.write) {
        let written_later = last_write
            .get(r.path.as_path())
            .is_some_and(|&w| w > r.msg.index);
        let (answer, result) = match r.answer {
            Some((answer, Some(result))) => (answer, result),
            Some((answer, None)) if !written_later => {
                refused_read(case, r, answer, problems);
                continue;
            }
            _ => continue,
        };
        let Some(returned) = result.get("content").and_then(Value::as_str) else {
            continue; // the schema check reports a result without content
        };
        if !verifiable(case, &r.path) || written_later {
            continue;
        }
        let frames = [r.msg.index, answer];
        let bytes = match case.files_after.get(&r.path) {
            None => {
                problems.error(
                    format!(
                        "harness bug: no snapshot of \"{}\" after the run, so read #{} cannot be verified.",
                        r.path.display(),
                        r.msg.index
                    ),
                    &frames,
                );
                continue;
            }
            Some(None) => {
                problems.fail(
                    R66,
                    format!(
                        "fs/read_text_file #{} returned content for \"{}\", which does not exist. Expected an error.",
                        r.msg.index,
                        r.path.display()
                    ),
                    &frames,
                );
                continue;
            }
            Some(Some(bytes)) => bytes,
        };
        let text = String::from_utf8_lossy(bytes);
        let line = r.params.get("line").filter(|v| !v.is_null());
        let limit = r.params.get("limit").filter(|v| !v.is_null());
        let (line, limit) = match (line.map(Value::as_u64), limit.map(Value::as_u64)) {
            (Some(None), _) | (_, Some(None)) | (Some(Some(0)), _) => continue, // not a valid request
            (line, limit) => (line.flatten(), limit.flatten()),
        };
        let window = line.is_some() || limit.is_some();
        let expected = select_lines(&text, line.unwrap_or(1), limit);
        let accepted = returned == expected
            || (window && without_final_terminator(&expected).contains(&returned));
        if !accepted {
            let what = match (line, limit) {
                (None, None) => "the whole file".to_owned(),
                (l, m) => format!(
                    "line {} for {}",
                    l.unwrap_or(1),
                    m.map_or("all remaining lines".to_owned(), |m| format!(
                        "at most {m} lines"
                    ))
                ),
            };
            problems.fail(
                R66,
                format!(
                    "fs/read_text_file #{} of \"{}\" asked for {what} (R66) and got different text: {}.",
                    r.msg.index,
                    r.path.display(),
                    describe_diff(expected.as_bytes(), returned.as_bytes())
                ),
                &frames,
            );
        }
    }
}

/// A read answered with an error. Inside the workspace, of a file that existed (and was not
/// written after the read, so the snapshot is the file the read saw), with a valid window that
/// starts inside the file, a client that advertised `fs.readTextFile` serves it (R66), as it
/// serves a write (R65): opening the session there and advertising the capability is the grant.
/// Not judged: a read the agent withdrew (`-32800`), a file that is not UTF-8 text, a `line`
/// past the end (an error is a fair answer there), and paths outside the workspace (refusing
/// those is the client's right; `auto-approval` judges serving them).
fn refused_read(case: &CaseRecord, r: &FsRequest<'_, '_>, answer: usize, problems: &mut Problems) {
    let code = r.error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    let inside = r.path.to_str().is_some_and(|p| {
        super::auto_approval::outside_reason(p, &case.workspace, &case.symlinks).is_none()
    });
    if code == Some(-32800) || !inside || !verifiable(case, &r.path) {
        return;
    }
    let Some(Some(bytes)) = case.files_after.get(&r.path) else {
        return; // missing: an error is right; no snapshot: nothing to compare
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let number = |name: &str| {
        r.params
            .get(name)
            .filter(|v| !v.is_null())
            .map(Value::as_u64)
    };
    let line = match (number("line"), number("limit")) {
        (Some(None) | Some(Some(0)), _) | (_, Some(None)) => return, // not a valid request
        (line, _) => line.flatten().unwrap_or(1),
    };
    let lines = text.split_inclusive('\n').count().max(1) as u64;
    if line > lines {
        return;
    }
    let what = match r.error {
        Some(e) => truncate_chars(&e.to_string(), 160),
        None => "an error".to_owned(),
    };
    problems.fail(
        R66,
        format!(
            "fs/read_text_file #{} of \"{}\", an existing file inside the workspace, was refused (#{answer}: {what}), although the client advertised fs.readTextFile. Expected the file's text: inside the workspace the client serves reads as it serves writes (R66, R65).",
            r.msg.index,
            r.path.display()
        ),
        &[r.msg.index, answer],
    );
}

/// Lines `line..line+limit` (1-based) of `text`, each with its terminator.
fn select_lines(text: &str, line: u64, limit: Option<u64>) -> String {
    let skip = usize::try_from(line.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// The text with its final line terminator left out: `\r\n` whole, or only its `\n` (a client
/// that splits lines on `\n` keeps the `\r` as part of the line), or a bare `\n`.
fn without_final_terminator(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    if let Some(t) = s.strip_suffix("\r\n") {
        out.push(t);
    }
    if let Some(t) = s.strip_suffix('\n') {
        out.push(t);
    }
    out
}

/// "expected N bytes, got M; first difference at byte K: expected "…" / actual "…"".
pub(super) fn describe_diff(expected: &[u8], actual: &[u8]) -> String {
    let at = expected
        .iter()
        .zip(actual)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let snippet = |b: &[u8]| {
        let tail = b.get(at..).unwrap_or(&[]);
        let s = String::from_utf8_lossy(&tail[..tail.len().min(120)]).into_owned();
        format!("{:?}", truncate_chars(&s, 40))
    };
    format!(
        "expected {} bytes, got {}; first difference at byte {at}: expected {} / actual {}",
        expected.len(),
        actual.len(),
        snippet(expected),
        snippet(actual)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, WS, assert_grade};
    use serde_json::json;

    fn write(c: &Case, id: u64, path: &str, content: &str) -> usize {
        c.a2c(
            json!({"jsonrpc":"2.0","id":id,"method":"fs/write_text_file",
            "params":{"sessionId":SID,"path":path,"content":content}}),
        )
    }

    fn read(c: &Case, id: u64, path: &str, line: Option<u64>, limit: Option<u64>) -> usize {
        let mut params = json!({"sessionId":SID,"path":path});
        if let Some(l) = line {
            params["line"] = json!(l);
        }
        if let Some(l) = limit {
            params["limit"] = json!(l);
        }
        c.a2c(json!({"jsonrpc":"2.0","id":id,"method":"fs/read_text_file","params":params}))
    }

    fn ok(c: &Case, id: u64, result: Value) -> usize {
        c.c2a(json!({"jsonrpc":"2.0","id":id,"result":result}))
    }

    fn file(c: &mut Case, path: &str, bytes: Option<&str>) {
        c.files_after
            .insert(PathBuf::from(path), bytes.map(|b| b.as_bytes().to_vec()));
    }

    #[test]
    fn write_landing_exactly_passes() {
        let mut c = Case::wire_only();
        c.handshake();
        let p = format!("{WS}/notes.md");
        write(&c, 10, &p, "hello\nworld\n");
        ok(&c, 10, json!(null));
        file(&mut c, &p, Some("hello\nworld\n"));
        assert_eq!(c.grade(&Fs), Finding::pass());
    }

    #[test]
    fn wrong_bytes_or_missing_file_fails() {
        let mut c = Case::wire_only();
        c.handshake();
        let p = format!("{WS}/notes.md");
        write(&c, 10, &p, "hello\nworld\n");
        ok(&c, 10, json!({}));
        file(&mut c, &p, Some("hello\r\nworld\r\n"));
        assert_grade(
            &c.grade(&Fs),
            Grade::Fail,
            "expected 12 bytes, got 14; first difference at byte 5",
        );
        file(&mut c, &p, None);
        assert_grade(&c.grade(&Fs), Grade::Fail, "does not exist after the run");
    }

    #[test]
    fn last_successful_write_counts() {
        let mut c = Case::wire_only();
        c.handshake();
        let p = format!("{WS}/a");
        write(&c, 10, &p, "one");
        ok(&c, 10, json!({}));
        write(&c, 11, &p, "two");
        ok(&c, 11, json!({}));
        file(&mut c, &p, Some("two"));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);
        file(&mut c, &p, Some("one"));
        assert_eq!(c.grade(&Fs).grade, Grade::Fail);
    }

    #[test]
    fn refusing_a_workspace_write_fails_only_when_advertised() {
        let mut c = Case::wire_only();
        c.handshake(); // advertises fs.writeTextFile
        let p = format!("{WS}/new/file.txt");
        write(&c, 10, &p, "x");
        c.c2a(json!({"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"ENOENT"}}));
        file(&mut c, &p, None);
        assert_grade(
            &c.grade(&Fs),
            Grade::Fail,
            "Expected the file to be written (created if missing, #65)",
        );

        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}));
        write(&c, 10, &p, "x");
        c.c2a(
            json!({"jsonrpc":"2.0","id":10,"error":{"code":-32601,"message":"Method not found"}}),
        );
        assert_grade(
            &c.grade(&Fs),
            Grade::NotApplicable,
            "did not advertise fs.writeTextFile",
        );

        // Outside the workspace a refusal is the client's right.
        let c = Case::wire_only();
        c.handshake();
        write(&c, 10, "/tmp/case/outside/x", "x");
        c.c2a(json!({"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"outside"}}));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);
    }

    /// formulahendry/acp-ui#14: fs requests answered -32601 although `fs.*` was advertised.
    #[test]
    fn refusing_a_workspace_read_fails_like_a_refused_write() {
        let refused =
            json!({"jsonrpc":"2.0","id":10,"error":{"code":-32601,"message":"Method not found"}});
        let p = format!("{WS}/src/main.rs");
        let mut c = Case::wire_only();
        c.handshake(); // advertises fs.readTextFile
        read(&c, 10, &p, Some(2), Some(1));
        c.c2a(refused.clone());
        file(&mut c, &p, Some("a\nb\n"));
        let f = c.grade(&Fs);
        assert_grade(
            &f,
            Grade::Fail,
            "an existing file inside the workspace, was refused (#",
        );
        assert!(f.message.contains("-32601"), "{}", f.message);

        // Not judged: a missing file, a line past the end, a withdrawn read, a path outside,
        // a file written after the read, an unadvertised capability.
        let cases: [(&str, Option<&str>, Option<u64>, Value); 4] = [
            (&p, None, None, refused.clone()),
            (&p, Some("a\n"), Some(5), refused.clone()),
            (
                &p,
                Some("a\n"),
                None,
                json!({"jsonrpc":"2.0","id":10,"error":{"code":-32800,"message":"cancelled"}}),
            ),
            ("/tmp/case/outside/x", Some("a\n"), None, refused.clone()),
        ];
        for (path, bytes, line, answer) in cases {
            let mut c = Case::wire_only();
            c.handshake();
            read(&c, 10, path, line, None);
            c.c2a(answer);
            file(&mut c, path, bytes);
            assert_eq!(c.grade(&Fs).grade, Grade::Pass, "{path} {bytes:?} {line:?}");
        }
        // Through a symlink out of the workspace: outside.
        let mut c = Case::wire_only();
        c.handshake();
        let link = format!("{WS}/docs/.aws");
        c.symlinks
            .insert(PathBuf::from(&link), PathBuf::from("/tmp/case/outside/aws"));
        let through = format!("{link}/credentials");
        read(&c, 10, &through, None, None);
        c.c2a(refused.clone());
        file(&mut c, &through, Some("secret\n"));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);

        let mut c = Case::wire_only();
        c.handshake();
        read(&c, 10, &p, None, None);
        c.c2a(refused.clone());
        write(&c, 11, &p, "new");
        ok(&c, 11, json!({}));
        file(&mut c, &p, Some("new"));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);

        let mut c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"writeTextFile":true}}}}));
        read(&c, 10, &p, None, None);
        c.c2a(refused);
        file(&mut c, &p, Some("a\n"));
        assert_eq!(c.grade(&Fs).grade, Grade::NotApplicable);
    }

    #[test]
    fn missing_snapshot_is_a_harness_error() {
        let c = Case::wire_only();
        c.handshake();
        write(&c, 10, &format!("{WS}/a"), "x");
        ok(&c, 10, json!({}));
        assert_grade(&c.grade(&Fs), Grade::Error, "harness bug: no snapshot");
    }

    #[test]
    fn reads_honour_line_and_limit() {
        let p = format!("{WS}/src.txt");
        let body = "l1\nl2\nl3\nl4\n";
        let run = |line: Option<u64>, limit: Option<u64>, returned: &str| {
            let mut c = Case::wire_only();
            c.handshake();
            read(&c, 10, &p, line, limit);
            ok(&c, 10, json!({"content":returned}));
            file(&mut c, &p, Some(body));
            c.grade(&Fs)
        };
        assert_eq!(run(None, None, body).grade, Grade::Pass);
        assert_eq!(run(Some(2), Some(2), "l2\nl3\n").grade, Grade::Pass);
        assert_eq!(run(Some(2), Some(2), "l2\nl3").grade, Grade::Pass);
        assert_eq!(run(Some(4), None, "l4\n").grade, Grade::Pass);
        assert_eq!(run(Some(9), Some(1), "").grade, Grade::Pass);
        // 0-based slip: line 2 read as the third line.
        assert_grade(
            &run(Some(2), Some(1), "l3\n"),
            Grade::Fail,
            "asked for line 2 for at most 1 lines",
        );
        // limit ignored.
        assert_eq!(run(Some(1), Some(1), body).grade, Grade::Fail);
        // Whole file must be exact.
        assert_eq!(run(None, None, "l1\nl2\nl3\nl4").grade, Grade::Fail);
    }

    #[test]
    fn read_followed_by_write_is_not_compared() {
        let mut c = Case::wire_only();
        c.handshake();
        let p = format!("{WS}/a");
        read(&c, 10, &p, None, None);
        ok(&c, 10, json!({"content":"old"}));
        write(&c, 11, &p, "new");
        ok(&c, 11, json!({}));
        file(&mut c, &p, Some("new"));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);
    }

    #[test]
    fn a_missing_file_must_be_an_error() {
        let p = format!("{WS}/missing.txt");
        let run = |answer: Value| {
            let mut c = Case::wire_only();
            c.handshake();
            read(&c, 10, &p, None, None);
            c.c2a(answer);
            file(&mut c, &p, None);
            c.grade(&Fs)
        };
        let not_found = json!({"jsonrpc":"2.0","id":10,"error":{"code":-32002,"message":"Resource not found","data":{"uri":p}}});
        assert_eq!(run(not_found).grade, Grade::Pass);
        // Empty content for a file that is not there (a client that maps ENOENT to "").
        assert_grade(
            &run(json!({"jsonrpc":"2.0","id":10,"result":{"content":""}})),
            Grade::Fail,
            "which does not exist. Expected an error",
        );
    }

    #[test]
    fn multibyte_lines_and_window_edges() {
        let p = format!("{WS}/i18n.txt");
        let body = "héllo\n日本語\n🙂 end\nlast";
        let run = |line: Option<u64>, limit: Option<u64>, returned: &str| {
            let mut c = Case::wire_only();
            c.handshake();
            read(&c, 10, &p, line, limit);
            ok(&c, 10, json!({"content":returned}));
            file(&mut c, &p, Some(body));
            c.grade(&Fs).grade
        };
        assert_eq!(run(Some(2), Some(2), "日本語\n🙂 end\n"), Grade::Pass);
        assert_eq!(run(Some(4), Some(1), "last"), Grade::Pass);
        assert_eq!(run(Some(1), Some(4), body), Grade::Pass);
        assert_eq!(run(Some(5), Some(1), ""), Grade::Pass);
        // One line too many at the end edge, one byte short inside a multi-byte character.
        assert_eq!(run(Some(3), Some(1), "🙂 end\nlast"), Grade::Fail);
        assert_eq!(run(Some(2), Some(1), "日本\n"), Grade::Fail);
        // A CRLF line at the window's end: with its terminator, without it, or without the LF.
        let crlf = "a\r\nb\r\n";
        let run_crlf = |returned: &str| {
            let mut c = Case::wire_only();
            c.handshake();
            read(&c, 10, &p, Some(1), Some(1));
            ok(&c, 10, json!({"content":returned}));
            file(&mut c, &p, Some(crlf));
            c.grade(&Fs).grade
        };
        assert_eq!(run_crlf("a\r\n"), Grade::Pass);
        assert_eq!(run_crlf("a"), Grade::Pass);
        assert_eq!(run_crlf("a\r"), Grade::Pass);
        assert_eq!(run_crlf("a\n"), Grade::Fail);
    }

    #[test]
    fn a_huge_answer_fails_with_a_bounded_message() {
        let p = format!("{WS}/small.txt");
        let mut c = Case::wire_only();
        c.handshake();
        read(&c, 10, &p, None, None);
        let huge = "x".repeat(8 << 20);
        ok(&c, 10, json!({ "content": huge }));
        file(&mut c, &p, Some("small\n"));
        let finding = c.grade(&Fs);
        assert_grade(&finding, Grade::Fail, "expected 6 bytes, got 8388608");
        assert!(finding.message.len() < 1000, "{}", finding.message.len());
    }

    #[test]
    fn a_non_utf8_answer_is_no_answer_here() {
        // Bytes that are not UTF-8 are not a JSON-RPC response: `jsonrpc` reports the request
        // unanswered; the fs check has no content to compare and does not panic.
        let p = format!("{WS}/a.txt");
        let mut c = Case::wire_only();
        c.handshake();
        read(&c, 10, &p, None, None);
        c.c2a_raw(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{\"content\":\"\xff\xfe\"}}");
        file(&mut c, &p, Some("right\n"));
        assert_eq!(c.grade(&Fs).grade, Grade::Pass);
    }

    #[test]
    fn unadvertised_capability_is_not_applicable_never_pass_or_fail() {
        let p = format!("{WS}/a.txt");
        let mut c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"writeTextFile":true}}}}));
        read(&c, 10, &p, Some(1), Some(1));
        // Served anyway, and wrongly: still not graded (the agent broke R64, not the client).
        ok(&c, 10, json!({"content":"wrong"}));
        file(&mut c, &p, Some("right\n"));
        assert_grade(
            &c.grade(&Fs),
            Grade::NotApplicable,
            "did not advertise fs.readTextFile, so its 1 fs request(s) are not graded",
        );
    }

    #[test]
    fn no_fs_request_is_not_applicable() {
        let c = Case::wire_only();
        c.handshake();
        assert_grade(&c.grade(&Fs), Grade::NotApplicable, "no fs request");
    }

    #[test]
    fn select_lines_is_total() {
        assert_eq!(select_lines("", 1, None), "");
        assert_eq!(select_lines("a", 1, Some(0)), "");
        assert_eq!(select_lines("a\nb", 2, Some(u64::MAX)), "b");
        assert_eq!(select_lines("a\nb", u64::MAX, None), "");
        assert_eq!(
            describe_diff(b"ab", b"a"),
            "expected 2 bytes, got 1; first difference at byte 1: expected \"b\" / actual \"\""
        );
    }
}
