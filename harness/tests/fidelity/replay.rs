//! A scripted client that replays the client side of a recording against a scenario played by the
//! engine, in process (a `tokio::io::duplex` pipe), and collects what the fake agent sent.
//!
//! The recording's client frames are sent in their recorded order. Client frame `k` goes out once
//! the fake agent has sent as many frames as the real agent had sent before it in the recording
//! (not counting [`TIMED`] updates)
//! (so a `session/cancel` recorded while a permission request was pending is sent while ours is
//! pending); a wait that times out is reported, and the frame is sent anyway so that the
//! comparison shows what differs. Placeholders the recorder wrote are filled in on the way out:
//! `<proj>`, `<outside>`, `<home>` with the case's folders, `<session-N>` with the N-th session id
//! our agent answered, and the id of a reply to an agent request with the id our agent gave the
//! same request (the N-th agent request of the recording is answered as our N-th).

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use acp_fake_agents::engine::{
    self, AgentConn, Connector, EngineConfig, RunEnd, UserAction, UserDriver, UserFailure,
};
use acp_fake_agents::machine_time::{self, Deadline};
use acp_fake_agents::scenario::Case;
use acp_fake_agents::wire::{self, FrameReader};
use acp_vocab::transcript::Recorder;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// How long the client waits for the agent frames a client frame followed in the recording.
const FRAME_WAIT: Duration = Duration::from_secs(5);
/// The same wait once one has timed out: the run already differs, so it only has to finish.
const FRAME_WAIT_AFTER_MISS: Duration = Duration::from_millis(300);
/// How long the engine may take to finish after the last client frame.
const END_WAIT: Duration = Duration::from_secs(15);

/// One line of a recording (the harness transcript format).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The recorded `i`.
    pub index: u64,
    pub from_client: bool,
    pub json: Value,
}

/// Reads a recording; `Err` names the line and what is wrong with it.
pub fn load(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |what: &str| format!("line {}: {what}", n + 1);
        let record: Value =
            serde_json::from_str(line).map_err(|e| at(&format!("not JSON: {e}")))?;
        let dir = record
            .get("dir")
            .and_then(Value::as_str)
            .ok_or_else(|| at("no \"dir\""))?;
        let from_client = match dir {
            "c2a" => true,
            "a2c" => false,
            "note" => continue,
            other => return Err(at(&format!("unknown dir {other:?}"))),
        };
        if record.get("conn").and_then(Value::as_u64) != Some(1) {
            return Err(at("not on agent connection 1: replay knows one connection"));
        }
        let json = record
            .get("json")
            .filter(|j| j.is_object())
            .cloned()
            .ok_or_else(|| at("no JSON object in \"json\""))?;
        out.push(Entry {
            index: record.get("i").and_then(Value::as_u64).unwrap_or(n as u64),
            from_client,
            json,
        });
    }
    if !out.iter().any(|e| !e.from_client) {
        return Err("no agent frame in it".into());
    }
    Ok(out)
}

/// The recording as the session of a scenario that starts in `mode` (its `[vars] mode`) would
/// have gone: the recorder's client switched modes with `session/set_mode` right after
/// `session/new`, where such a scenario starts the session in the mode the user chose. When the
/// first client frame after the `session/new` result is a `session/set_mode` to `mode`, that request
/// and the agent frames up to and including its result are taken out, and the `session/new`
/// result says `mode` is current (`modes.currentModeId`, and the `currentValue` of the config
/// option with id `mode`). Nothing else changes; any other recording is returned as it is.
/// `Err` when the exchange is not that shape (an agent request before the answer, no answer).
pub fn starting_in_mode(recording: &[Entry], mode: &str) -> Result<Vec<Entry>, String> {
    let mut out = recording.to_vec();
    let Some(new_at) = out
        .iter()
        .position(|e| e.from_client && method(e) == Some("session/new"))
    else {
        return Ok(out);
    };
    let new_id = out[new_at].json.get("id").cloned();
    let Some(result_at) = out
        .iter()
        .skip(new_at + 1)
        .position(|e| !e.from_client && method(e).is_none() && e.json.get("id") == new_id.as_ref())
        .map(|k| k + new_at + 1)
    else {
        return Ok(out);
    };
    let Some(set_at) = out
        .iter()
        .skip(result_at + 1)
        .position(|e| e.from_client)
        .map(|k| k + result_at + 1)
    else {
        return Ok(out);
    };
    let set = &out[set_at].json;
    if method(&out[set_at]) != Some("session/set_mode")
        || set.pointer("/params/modeId").and_then(Value::as_str) != Some(mode)
    {
        return Ok(out);
    }
    let set_id = set.get("id").cloned();
    let Some(answer_at) = out
        .iter()
        .skip(set_at + 1)
        .position(|e| !e.from_client && method(e).is_none() && e.json.get("id") == set_id.as_ref())
        .map(|k| k + set_at + 1)
    else {
        return Err(format!(
            "the recorded session/set_mode (i={}) has no answer",
            out[set_at].index
        ));
    };
    if let Some(e) = out[set_at + 1..answer_at]
        .iter()
        .find(|e| e.from_client || e.json.get("id").is_some())
    {
        return Err(format!(
            "i={} comes between the recorded session/set_mode and its answer: only agent notifications may",
            e.index
        ));
    }
    // A frame sent from a timer (the command list) is not part of the exchange: it stays.
    let kept: Vec<Entry> = out[set_at + 1..answer_at]
        .iter()
        .filter(|e| timed(&e.json))
        .cloned()
        .collect();
    out.splice(set_at..=answer_at, kept);
    let result = &mut out[result_at].json["result"];
    if let Some(current) = result.pointer_mut("/modes/currentModeId") {
        *current = Value::String(mode.to_owned());
    }
    if let Some(Value::Array(options)) = result.get_mut("configOptions") {
        for option in options {
            if option.get("id").and_then(Value::as_str) == Some("mode") {
                option["currentValue"] = Value::String(mode.to_owned());
            }
        }
    }
    Ok(out)
}

fn method(e: &Entry) -> Option<&str> {
    e.json.get("method").and_then(Value::as_str)
}

/// What a replay produced.
pub struct Played {
    /// The fake agent's frames, as sent (not normalised).
    pub agent: Vec<Value>,
    /// Every agent frame that was not JSON, as text.
    pub not_json: Vec<String>,
    pub end: Option<RunEnd>,
    /// Where the replay could not follow the recording.
    pub notes: Vec<String>,
}

/// The folders of a case, laid out as the recorder lays out a recording run: `run/proj`,
/// `run/outside`, `run/home`.
pub struct Dirs<'a> {
    pub run: &'a Path,
    pub cwd: &'a Path,
    pub outside: &'a Path,
    pub home: &'a Path,
}

struct OneConn(Option<AgentConn>);

impl Connector for OneConn {
    fn accept(&mut self) -> impl Future<Output = std::io::Result<AgentConn>> + Send {
        let conn = self.0.take();
        async move {
            match conn {
                Some(c) => Ok(c),
                None => std::future::pending().await,
            }
        }
    }
}

/// The recording is the user: every action a `user` step asks for is already in the replayed
/// frames, so the driver only says yes.
struct RecordingIsTheUser;

impl UserDriver for RecordingIsTheUser {
    async fn act(&mut self, _action: UserAction, _timeout: Duration) -> Result<(), UserFailure> {
        Ok(())
    }
}

#[derive(Default, Clone)]
struct Seen {
    frames: Vec<Value>,
    not_json: Vec<String>,
    eof: bool,
}

/// Plays `case` against the recording's client side.
pub async fn replay(case: &Case, recording: &[Entry], dirs: &Dirs<'_>) -> Played {
    // One pipe per direction, so that either side closing its end is an EOF for the other.
    let (mut client_write, agent_read) = tokio::io::duplex(1 << 20);
    let (agent_write, client_read) = tokio::io::duplex(1 << 20);
    let conn = AgentConn {
        id: 1,
        reader: Box::new(agent_read),
        writer: Box::new(agent_write),
        pid: None,
    };
    let cfg = EngineConfig::new(dirs.cwd.to_path_buf(), dirs.outside.to_path_buf());
    let engine_case = case.clone();
    let engine = tokio::spawn(async move {
        let rec = Recorder::new();
        let mut connector = OneConn(Some(conn));
        let mut user = RecordingIsTheUser;
        engine::run(&engine_case, &cfg, &mut connector, &mut user, &rec).await
    });

    let (seen_tx, mut seen_rx) = watch::channel(Seen::default());
    let reader = tokio::spawn(async move {
        let mut frames = FrameReader::new(client_read, wire::DEFAULT_MAX_FRAME);
        loop {
            match frames.next_frame().await {
                Ok(Some(wire::Frame::Line(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    seen_tx.send_modify(|s| match serde_json::from_str::<Value>(&text) {
                        Ok(v) => s.frames.push(v),
                        Err(_) => s.not_json.push(text),
                    });
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    seen_tx.send_modify(|s| s.eof = true);
                    return;
                }
            }
        }
    });

    let mut notes = Vec::new();
    let mut missed = false;
    let mut agent_before = 0usize;
    // The ids of the recording's agent requests, in order.
    let mut recorded_requests: Vec<Value> = Vec::new();
    for entry in recording {
        if !entry.from_client {
            if entry.json.get("method").is_some() {
                if let Some(id) = entry.json.get("id") {
                    recorded_requests.push(id.clone());
                }
            }
            if !timed(&entry.json) {
                agent_before += 1;
            }
            continue;
        }
        // A reply to an agent request: which one (the latest recorded with that id).
        let answers = if entry.json.get("method").is_none() {
            entry
                .json
                .get("id")
                .and_then(|id| recorded_requests.iter().rposition(|r| r == id))
        } else {
            None
        };
        let wait = Deadline::after(if missed {
            FRAME_WAIT_AFTER_MISS
        } else {
            FRAME_WAIT
        });
        let ready = |s: &Seen| {
            s.eof
                || (s.frames.iter().filter(|f| !timed(f)).count() >= agent_before
                    && answers.is_none_or(|k| agent_requests(&s.frames).len() > k))
        };
        let got = matches!(
            machine_time::timeout(wait.remaining(), seen_rx.wait_for(ready)).await,
            Ok(Ok(_))
        );
        let seen = seen_rx.borrow().clone();
        if !got || !ready(&seen) {
            missed = true;
            notes.push(format!(
                "client frame i={} was due after {agent_before} agent frames (not counting {TIMED}); ours sent {} (sent anyway)",
                entry.index,
                seen.frames.iter().filter(|f| !timed(f)).count()
            ));
        }
        let sessions = session_ids(&seen.frames);
        let mut frame = fill(&entry.json, dirs, &sessions);
        if let Some(k) = answers {
            match agent_requests(&seen.frames).get(k) {
                Some(id) => frame["id"] = id.clone(),
                None => notes.push(format!(
                    "client frame i={} answers agent request {} of the recording, and ours sent only {}",
                    entry.index,
                    k + 1,
                    agent_requests(&seen.frames).len()
                )),
            }
        }
        let mut line = frame.to_string();
        line.push('\n');
        if client_write.write_all(line.as_bytes()).await.is_err() {
            notes.push(format!(
                "client frame i={}: the agent closed its input",
                entry.index
            ));
            break;
        }
    }

    let end = match machine_time::timeout(END_WAIT, engine).await {
        Ok(Ok(outcome)) => {
            // Closing the agent's output ends the reader at EOF, with every frame read.
            drop(outcome.keep_alive);
            Some(outcome.end)
        }
        Ok(Err(e)) => {
            notes.push(format!("the engine task failed: {e}"));
            None
        }
        Err(_) => {
            notes.push(format!(
                "the scenario did not finish within {END_WAIT:?} after the last client frame"
            ));
            None
        }
    };
    drop(client_write);
    if machine_time::timeout(Duration::from_secs(5), reader)
        .await
        .is_err()
    {
        notes.push("the agent's output did not end".into());
    }
    let seen = seen_rx.borrow().clone();
    Played {
        agent: seen.frames,
        not_json: seen.not_json,
        end,
        notes,
    }
}

/// The one update whose place in the turn is not compared: qwen-code and opencode send their
/// command list from a timer started by `session/new`, and two recordings of the same case put it
/// in different places (qwen-code 0.24.4 `edit` and `edit-reject`). The replay does not count it
/// when it waits for the agent, and the comparison compares it apart.
pub const TIMED: &str = "available_commands_update";

pub fn timed(frame: &Value) -> bool {
    frame
        .pointer("/params/update/sessionUpdate")
        .and_then(Value::as_str)
        == Some(TIMED)
}

/// The ids of the agent's requests, in order.
fn agent_requests(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f.get("method").is_some())
        .filter_map(|f| f.get("id").cloned())
        .collect()
}

/// The session ids the agent answered (`result.sessionId`), in order, without repeats.
pub fn session_ids(frames: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in frames {
        if let Some(id) = f.pointer("/result/sessionId").and_then(Value::as_str) {
            if !out.iter().any(|s| s == id) {
                out.push(id.to_owned());
            }
        }
    }
    out
}

/// A recorded client frame with the recorder's placeholders filled in for this run.
fn fill(v: &Value, dirs: &Dirs<'_>, sessions: &[String]) -> Value {
    match v {
        Value::String(s) => Value::String(fill_str(s, dirs, sessions)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| fill(i, dirs, sessions)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| (fill_str(k, dirs, sessions), fill(i, dirs, sessions)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill_str(s: &str, dirs: &Dirs<'_>, sessions: &[String]) -> String {
    if !s.contains('<') {
        return s.to_owned();
    }
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let noslash = |p: &Path| path(p).trim_start_matches('/').to_owned();
    let mut out = s
        .replace("<proj:noslash>", &noslash(dirs.cwd))
        .replace("<outside:noslash>", &noslash(dirs.outside))
        .replace("<run:noslash>", &noslash(dirs.run))
        .replace("<proj-dashed>", &path(dirs.cwd).replace(['/', '.'], "-"))
        .replace("<proj>", &path(dirs.cwd))
        .replace("<outside>", &path(dirs.outside))
        .replace("<home>", &path(dirs.home))
        .replace("<run>", &path(dirs.run));
    for (n, id) in sessions.iter().enumerate() {
        out = out.replace(&format!("<session-{}>", n + 1), id);
    }
    out
}
