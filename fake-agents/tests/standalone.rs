//! The built `acp-fake-agent` binary: standalone mode against a small scripted client, and relay
//! mode against a Unix socket listener.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use acp_vocab::transcript::{Direction, Entry};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_acp-fake-agent");
/// Bound for every wait of the test itself (a hang fails instead of blocking CI).
const WAIT: Duration = Duration::from_secs(20);

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Agent {
    fn spawn(args: &[&str]) -> Agent {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn acp-fake-agent");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Agent {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{v}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("a frame within the test bound")
            .unwrap()
            .expect("stdout still open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// Closes stdin and returns (exit code, stderr).
    async fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let mut stderr = String::new();
        let mut err = self.child.stderr.take().expect("stderr");
        tokio::time::timeout(WAIT, err.read_to_string(&mut stderr))
            .await
            .expect("stderr closes")
            .unwrap();
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("process exits")
            .unwrap();
        (status.code().unwrap_or(-1), stderr)
    }
}

#[tokio::test]
async fn standalone_plays_a_shipped_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let scenario = scenarios().join("opencode/1.18/cancel-pending-permission.toml");
    let cwd = dir.path().join("ws");
    std::fs::create_dir(&cwd).unwrap();
    let mut agent = Agent::spawn(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--transcript",
        transcript.to_str().unwrap(),
        "--cwd",
        cwd.to_str().unwrap(),
        "--step-timeout-ms",
        "20000",
    ]);

    agent
        .send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}))
        .await;
    let init = agent.recv().await;
    assert_eq!(init["id"], 0);
    assert_eq!(init["result"]["agentInfo"]["name"], "OpenCode");
    agent
        .send(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":cwd,"mcpServers":[]}}))
        .await;
    let session = agent.recv().await["result"]["sessionId"].clone();
    assert_eq!(session, "ses_3f9a1c0e7ffeKq2ZbX81LmNo4R");
    agent
        .send(json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":session,"prompt":[{"type":"text","text":"Run the test suite"}]}}))
        .await;
    // opencode 1.18.33 as recorded: the commands first, then the call, its update, the request.
    assert_eq!(
        agent.recv().await["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    let tool_call = agent.recv().await;
    assert_eq!(tool_call["params"]["update"]["sessionUpdate"], "tool_call");
    // ${cwd} is the --cwd directory.
    assert_eq!(
        tool_call["params"]["update"]["locations"][0]["path"],
        json!(cwd)
    );
    agent.recv().await;
    let perm = agent.recv().await;
    assert_eq!(perm["method"], "session/request_permission");
    assert_eq!(perm["id"], 0);
    assert_eq!(perm["params"]["options"][2]["optionId"], "reject");

    // The user pressed Stop: opencode does not wait for the pending answer; it fails the call
    // and ends the turn, and the client's `cancelled` answer comes after.
    agent
        .send(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":session}}))
        .await;
    assert_eq!(agent.recv().await["params"]["update"]["status"], "failed");
    let done = agent.recv().await;
    assert_eq!(done["id"], 2);
    assert_eq!(done["result"]["stopReason"], "cancelled");
    agent
        .send(json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}))
        .await;

    let (code, stderr) = agent.finish().await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("YOU: open a new session in"), "{stderr}");
    assert!(
        stderr.contains("YOU: while the approval for request 0 is shown, press Stop"),
        "{stderr}"
    );

    let entries: Vec<Entry> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let c2a = entries
        .iter()
        .filter(|e| e.direction == Direction::ClientToAgent)
        .count();
    let a2c = entries
        .iter()
        .filter(|e| e.direction == Direction::AgentToClient)
        .count();
    assert_eq!((c2a, a2c), (5, 8));
    // opencode does not wait for the answer (recorded): the scenario takes it after the turn.
    assert!(entries.iter().any(|e| matches!(
        e.note(),
        Some(acp_vocab::note::Note::Branch {
            request: Some(request),
            case: None,
            ..
        }) if request == "perm"
    )));
}

#[tokio::test]
async fn standalone_reports_parse_errors_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(
        &file,
        "[scenario]\nid = \"x\"\ntitle = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"p\"]\n\n[[step]]\nsend = '{\"jsonrpc\":\"2.0\",}'\n",
    )
    .unwrap();
    let agent = Agent::spawn(&["--scenario", file.to_str().unwrap()]);
    let (code, stderr) = agent.finish().await;
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "{}:9:26: invalid JSON in `send`: trailing comma",
            file.display()
        )
    );
}

#[tokio::test]
async fn standalone_client_that_hangs_up_is_incomplete() {
    let scenario = scenarios().join("opencode/1.18/edit-permission.toml");
    let agent = Agent::spawn(&["--scenario", scenario.to_str().unwrap()]);
    // Closing stdin at once: the handshake cannot happen.
    let (code, stderr) = agent.finish().await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("incomplete: client closed the agent connection at step 2"),
        "{stderr}"
    );
}

/// `${cwd}` is the person's own project in standalone mode: a scenario's [[setup]] is described
/// on stderr, never created there.
#[tokio::test]
async fn standalone_describes_a_setup_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let scenario = scenarios().join("opencode/1.18/deceptive-sibling-prefix.toml");
    let agent = Agent::spawn(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--cwd",
        project.to_str().unwrap(),
    ]);
    let (_, stderr) = agent.finish().await;
    assert!(
        stderr.contains("standalone mode does not create them")
            && stderr.contains(&format!("file {}-evil/config.json", project.display())),
        "{stderr}"
    );
    assert!(!home.path().join("proj-evil").exists());
    assert_eq!(std::fs::read_dir(&project).unwrap().count(), 0);
}

#[tokio::test]
async fn relay_copies_both_ways_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let mut agent = Agent::spawn(&["--connect", sock.to_str().unwrap()]);
    let (mut conn, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .expect("the relay connects")
        .unwrap();

    // harness → client, including bytes that are not JSON and a CRLF.
    conn.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\nnot json\r\n")
        .await
        .unwrap();
    assert_eq!(agent.recv().await["method"], "x");
    // Raw bytes: `lines()` would hide the `\r`.
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, agent.stdout.get_mut().read_until(b'\n', &mut raw))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw, b"not json\r\n");

    // client → harness.
    agent
        .send(json!({"jsonrpc":"2.0","id":0,"result":{}}))
        .await;
    let mut lines = BufReader::new(&mut conn).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(line, r#"{"jsonrpc":"2.0","id":0,"result":{}}"#);

    // The client closes the agent's stdin: the harness sees EOF, the relay exits 0.
    let (code, stderr) = agent.finish().await;
    assert_eq!(code, 0, "{stderr}");
    let eof = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(eof, None);
}

#[tokio::test]
async fn relay_exits_when_the_harness_closes_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let mut agent = Agent::spawn(&["--connect", sock.to_str().unwrap()]);
    let (conn, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .unwrap()
        .unwrap();
    drop(conn);
    // stdin stays open: the socket closing alone must end the relay.
    let status = tokio::time::timeout(WAIT, agent.child.wait())
        .await
        .expect("relay exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn relay_to_a_missing_socket_fails_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("missing.sock");
    let agent = Agent::spawn(&["--connect", sock.to_str().unwrap()]);
    let (code, stderr) = agent.finish().await;
    assert_eq!(code, 1);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("acp-fake-agent: cannot connect to the harness socket"));
}
