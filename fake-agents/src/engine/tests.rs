//! The engine against an in-process scripted client over `tokio::io::duplex`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, watch};

use super::*;
use crate::profile::{Profile, Profiles};
use crate::scenario;
use crate::wire::{Frame, FrameReader};
use acp_vocab::transcript::{Direction, Entry, Recorder};

/// Generous bound for anything the test itself waits for; a hang fails instead of blocking CI.
const TEST_WAIT: Duration = Duration::from_secs(10);

fn profiles() -> Profiles {
    let mut set = Profiles::new();
    set.insert(
        Profile::parse(
            "tests/fixtures/test-agent@1.0.toml",
            include_str!("../../tests/fixtures/test-agent@1.0.toml"),
        )
        .unwrap(),
    );
    set
}

const HEAD: &str = r#"[scenario]
id = "t"
title = "T"
agent = "test-agent"
version = "1.0"
profile = "test-agent@1.0"
provenance = ["tests"]
"#;

/// A connector that yields one prepared connection (after a delay: the client starting), then
/// never another; the client is gone once the watch says so ([`Run::client_exits`]).
struct OneConn(Option<AgentConn>, Duration, watch::Receiver<bool>);

impl Connector for OneConn {
    fn accept(&mut self) -> impl Future<Output = std::io::Result<AgentConn>> + Send {
        let conn = self.0.take();
        let delay = self.1;
        async move {
            match conn {
                Some(c) => {
                    // In machine time, as the engine waits: a loaded machine delays both alike.
                    crate::machine_time::sleep(delay).await;
                    Ok(c)
                }
                None => std::future::pending().await,
            }
        }
    }

    fn client_gone(&self) -> impl Future<Output = ()> + Send {
        let mut gone = self.2.clone();
        async move {
            if gone.wait_for(|g| *g).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A user driver that reports each action to the test and fails on request.
struct TestUser {
    seen: mpsc::UnboundedSender<UserAction>,
    fail_with: Option<UserFailure>,
}

impl UserDriver for TestUser {
    fn act(
        &mut self,
        action: UserAction,
        _timeout: Duration,
    ) -> impl Future<Output = Result<(), UserFailure>> + Send {
        let _ = self.seen.send(action);
        let result = match &self.fail_with {
            Some(m) => Err(m.clone()),
            None => Ok(()),
        };
        async move { result }
    }
}

/// The client side of the wire.
struct Client {
    to_agent: WriteHalf<DuplexStream>,
    from_agent: FrameReader<ReadHalf<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, line: &str) {
        self.to_agent.write_all(line.as_bytes()).await.unwrap();
        self.to_agent.write_all(b"\n").await.unwrap();
    }

    async fn recv_raw(&mut self) -> String {
        match tokio::time::timeout(TEST_WAIT, self.from_agent.next_frame()).await {
            Ok(Ok(Some(Frame::Line(bytes)))) => String::from_utf8(bytes).unwrap(),
            other => panic!("expected a frame from the agent, got {other:?}"),
        }
    }

    async fn recv(&mut self) -> Value {
        let raw = self.recv_raw().await;
        serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }
}

struct Run {
    client: Client,
    actions: mpsc::UnboundedReceiver<UserAction>,
    rec: Recorder,
    engine: tokio::task::JoinHandle<Outcome>,
    /// Says the client process exited (the harness learns it from the process, not the pipe).
    gone: watch::Sender<bool>,
}

impl Run {
    async fn outcome(self) -> (Outcome, Client, Recorder) {
        let out = tokio::time::timeout(TEST_WAIT, self.engine)
            .await
            .expect("engine finished")
            .unwrap();
        (out, self.client, self.rec)
    }

    /// The client goes away (its end of the connection closes); the run's outcome.
    async fn client_leaves(self) -> (Outcome, Recorder) {
        drop(self.client);
        let out = tokio::time::timeout(TEST_WAIT, self.engine)
            .await
            .expect("engine finished")
            .unwrap();
        (out, self.rec)
    }

    async fn action(&mut self) -> UserAction {
        tokio::time::timeout(TEST_WAIT, self.actions.recv())
            .await
            .expect("a user action")
            .unwrap()
    }

    async fn handshake(&mut self) {
        self.client
            .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}"#)
            .await;
        assert_eq!(self.client.recv().await["id"], 0);
        self.client
            .send(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#)
            .await;
        let r = self.client.recv().await;
        assert_eq!(r["result"]["sessionId"], "ses_test");
    }
}

struct Opts {
    case: usize,
    step_timeout: Duration,
    fail_with: Option<UserFailure>,
    connect: bool,
    /// How long the client takes to start the agent.
    connect_after: Duration,
    /// `EngineConfig::startup`.
    startup: Duration,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            case: 0,
            step_timeout: TEST_WAIT,
            fail_with: None,
            connect: true,
            connect_after: Duration::ZERO,
            startup: Duration::ZERO,
        }
    }
}

fn start(body: &str, opts: Opts) -> Run {
    let text = format!("{HEAD}{body}");
    let scenario = scenario::parse("t.toml", &text, &profiles()).unwrap_or_else(|e| panic!("{e}"));
    let case = scenario.cases().swap_remove(opts.case);
    // One duplex pipe: what the client writes, the agent reads, and the other way round.
    let (agent_side, client_side) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let (client_read, client_write) = tokio::io::split(client_side);
    let conn = AgentConn {
        id: 1,
        reader: Box::new(agent_read),
        writer: Box::new(agent_write),
        pid: None,
    };
    let (gone, gone_rx) = watch::channel(false);
    let mut connector = OneConn(opts.connect.then_some(conn), opts.connect_after, gone_rx);
    let (seen, actions) = mpsc::unbounded_channel();
    let mut user = TestUser {
        seen,
        fail_with: opts.fail_with,
    };
    let rec = Recorder::new();
    let mut cfg = EngineConfig::new("/work/case/ws".into(), "/work/case/outside".into());
    cfg.step_timeout = opts.step_timeout;
    cfg.startup = opts.startup;
    let engine_rec = rec.clone();
    // Spawning proves `run` is Send + 'static-able, as the harness needs.
    let engine =
        tokio::spawn(async move { run(&case, &cfg, &mut connector, &mut user, &engine_rec).await });
    Run {
        client: Client {
            to_agent: client_write,
            from_agent: FrameReader::new(client_read, 1 << 20),
        },
        actions,
        rec,
        engine,
        gone,
    }
}

fn notes(rec: &Recorder, kind: &str) -> Vec<Entry> {
    rec.snapshot()
        .into_iter()
        .filter(|e| e.note().is_some_and(|n| n.type_name() == kind))
        .collect()
}

const PERM: &str = r#"
[[step]]
user = "new_session"

[[step]]
handshake = true

[[step]]
user = "prompt"
text = "edit ${file}"

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
send = '''{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission",
  "params":{"sessionId":"${sessionId}","options":"${profile.options}","toolCall":{"toolCallId":"${toolCallId}","kind":"edit"}}}'''
as = "perm"
"#;

fn branches(choose: &str) -> String {
    format!(
        r#"[vars]
file = "${{cwd}}/notes.md"
{PERM}
[[step]]
user = "choose"
request = "perm"
{choose}

[[step]]
await = "perm"

[[step.on]]
option = ["cancel"]
then = [{{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"option-cancel"}}}}' }}]

[[step.on]]
selected = ["allow_once", "allow_always"]
then = [{{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"selected"}}}}' }}]

[[step.on]]
cancelled = true
then = [
  {{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"cancelled"}}}}' }},
  {{ reply_to = "prompt", result = '{{"stopReason":"cancelled"}}' }},
]

[[step.on]]
unoffered = true
then = [{{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"unoffered"}}}}' }}]

[[step.on]]
error = true
then = [{{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"error"}}}}' }}]

[[step.on]]
otherwise = true
then = [{{ send = '{{"jsonrpc":"2.0","method":"branch","params":{{"b":"otherwise"}}}}' }}]

[[step]]
send = '{{"jsonrpc":"2.0","method":"end"}}'
"#
    )
}

#[tokio::test]
async fn full_permission_flow_and_transcript() {
    let mut run = start(&branches("kind = \"allow_always\""), Opts::default());
    run.handshake().await;
    assert_eq!(
        run.action().await,
        UserAction::NewSession {
            session: "s1".into(),
            cwd: "/work/case/ws".into()
        }
    );
    assert_eq!(
        run.action().await,
        UserAction::Prompt {
            session: "s1".into(),
            text: "edit /work/case/ws/notes.md".into(),
            agent_killed: false,
        }
    );
    run.client
        .send(r#"{"jsonrpc":"2.0","id":"p\u0041","method":"session/prompt","params":{"sessionId":"ses_test","prompt":[]}}"#)
        .await;
    let req = run.client.recv().await;
    assert_eq!(req["id"], 0, "fresh ids start at 0");
    assert_eq!(req["method"], "session/request_permission");
    assert_eq!(req["params"]["toolCall"]["toolCallId"], "tc_test");
    let offered = req["params"]["options"].clone();
    assert_eq!(
        offered.as_array().map(Vec::len),
        Some(4),
        "profile options spliced in as JSON"
    );
    // `kind = "allow_always"` resolves to the first offered option of that kind.
    assert_eq!(
        run.action().await,
        UserAction::Choose {
            request_id: json!(0),
            option_id: "always_project".into(),
            offered: offered.clone()
        }
    );
    // The client picks the *second* allow_always option: still the `selected` case.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"always_user"}}}"#)
        .await;
    assert_eq!(run.client.recv().await["params"]["b"], "selected");
    assert_eq!(run.client.recv().await["method"], "end");
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    assert_eq!(out.keep_alive.len(), 1);

    let entries = rec.snapshot();
    // Both directions are recorded on connection 1, in order.
    let wire: Vec<(Direction, Option<String>)> = entries
        .iter()
        .filter(|e| e.direction.is_wire())
        .map(|e| (e.direction, e.method().map(str::to_owned)))
        .collect();
    assert_eq!(
        wire[0],
        (Direction::ClientToAgent, Some("initialize".into()))
    );
    assert_eq!(wire[1], (Direction::AgentToClient, None));
    assert!(
        entries
            .iter()
            .filter(|e| e.direction.is_wire())
            .all(|e| e.conn == 1)
    );
    let branch = notes(&rec, "branch");
    assert_eq!(branch.len(), 1);
    assert_eq!(branch[0].json().unwrap()["case"], 2);
}

/// Plays the permission flow up to the answer and returns the branch the agent took.
async fn branch_for(answer: &str) -> (String, Recorder) {
    let mut run = start(&branches("kind = \"allow_once\""), Opts::default());
    prompt_sent(&mut run).await;
    let req = run.client.recv().await;
    run.client
        .send(&answer.replace("ID", &req["id"].to_string()))
        .await;
    let b = run.client.recv().await;
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed, "answer {answer}");
    (b["params"]["b"].as_str().unwrap_or("").to_owned(), rec)
}

#[tokio::test]
async fn await_branches_on_the_answer() {
    let sel = |id: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":ID,"result":{{"outcome":{{"outcome":"selected","optionId":"{id}"}}}}}}"#
        )
    };
    assert_eq!(branch_for(&sel("once")).await.0, "selected");
    // qwen's `cancel` option id is an option (kind reject_once), not the cancelled outcome.
    assert_eq!(branch_for(&sel("cancel")).await.0, "option-cancel");
    assert_eq!(branch_for(&sel("made_up")).await.0, "unoffered");
    assert_eq!(
        branch_for(r#"{"jsonrpc":"2.0","id":ID,"result":{"outcome":{"outcome":"cancelled"}}}"#)
            .await
            .0,
        "cancelled"
    );
    assert_eq!(
        branch_for(r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"x"}}"#)
            .await
            .0,
        "error"
    );
    assert_eq!(
        branch_for(
            r#"{"jsonrpc":"2.0","id":ID,"result":{"outcome":"selected","optionId":"once"}}"#
        )
        .await
        .0,
        "otherwise"
    );
}

#[tokio::test]
async fn mailbox_takes_the_first_fitting_message_in_arrival_order() {
    let body = r#"
[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"options":[]}}'
as = "perm"

[[step]]
expect = "note"
match = '{"params":{"n":2}}'
capture = { second = "/params/n" }

[[step]]
expect = "note"
capture = { first = "/params/n" }

[[step]]
expect = "session/cancel"

[[step]]
await = "perm"

[[step.on]]
cancelled = true
then = [{ send = '{"jsonrpc":"2.0","method":"order","params":{"first":"${first}","second":"${second}"}}' }]
"#;
    let mut run = start(body, Opts::default());
    // The agent writes first, so this is also the lazy accept.
    assert_eq!(run.client.recv().await["id"], 0);
    // The answer arrives before the cancel; notes arrive 1 then 2.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"note","params":{"n":1}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"note","params":{"n":2}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#)
        .await;
    let order = run.client.recv().await;
    assert_eq!(
        order["params"],
        json!({"first":1,"second":2}),
        "captured numbers stay numbers"
    );
    let (out, _, _) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
}

#[tokio::test]
async fn a_step_timeout_makes_the_run_incomplete() {
    let body = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
timeout_ms = 50
"#;
    let mut run = start(body, Opts::default());
    run.handshake().await;
    let (out, _client, rec) = run.outcome().await;
    match &out.end {
        RunEnd::Incomplete { step, reason } => {
            assert_eq!(*step, 2);
            // "within 50 ms", and on a loaded machine "… of machine time (… on the wall clock …)".
            assert!(
                reason
                    .starts_with("step 2 (t.toml:12): client sent no session/prompt within 50 ms"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let timeouts = notes(&rec, "step_timeout");
    assert_eq!(timeouts.len(), 1);
    assert_eq!(timeouts[0].json().unwrap()["step"], 2);
}

#[tokio::test]
async fn eof_ends_a_waiting_step_at_once() {
    let body = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
timeout_ms = 3600000
"#;
    let mut run = start(body, Opts::default());
    run.handshake().await;
    run.client.to_agent.shutdown().await.unwrap();
    // `outcome` gives up after TEST_WAIT, far less than the step's hour.
    let (out, _, _) = run.outcome().await;
    match &out.end {
        RunEnd::Incomplete { step, reason } => {
            assert_eq!(*step, 2);
            assert!(
                reason.starts_with("client closed the agent connection at step 2 (t.toml:12)"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The reader task ends at EOF.
    for r in out.readers {
        tokio::time::timeout(TEST_WAIT, r).await.unwrap().unwrap();
    }
}

/// A client slower to start than a step's timeout (ralph-any imports for about two seconds before
/// it spawns the agent) gets its profile's startup time on top, for the first connection only.
#[tokio::test]
async fn the_startup_time_extends_the_waits_until_the_agent_connection() {
    let slow = |startup| Opts {
        step_timeout: Duration::from_millis(100),
        connect_after: Duration::from_millis(300),
        startup,
        ..Opts::default()
    };
    let run = start("[[step]]\nhandshake = true\n", slow(Duration::ZERO));
    let (out, _, _) = run.outcome().await;
    assert!(
        matches!(&out.end, RunEnd::Incomplete { reason, .. } if reason.contains("did not start the agent")),
        "{:?}",
        out.end
    );
    let mut run = start("[[step]]\nhandshake = true\n", slow(Duration::from_secs(5)));
    run.handshake().await;
    let (out, _, _) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
}

#[tokio::test]
async fn a_client_that_never_starts_the_agent_is_incomplete() {
    let run = start(
        "[[step]]\nhandshake = true\n",
        Opts {
            connect: false,
            step_timeout: Duration::from_millis(50),
            ..Opts::default()
        },
    );
    let (out, _, _) = run.outcome().await;
    match &out.end {
        RunEnd::Incomplete { step: 1, reason } => {
            assert!(reason.contains("did not start the agent"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(out.keep_alive.is_empty());
}

#[tokio::test]
async fn missing_required_capability_is_not_applicable() {
    let body = "[[step]]\nhandshake = true\n";
    let head = HEAD.replace("provenance", "requires = [\"terminal\"]\nprovenance");
    let text = format!("{head}{body}");
    let scenario = scenario::parse("t.toml", &text, &profiles()).unwrap();
    assert_eq!(scenario.meta.requires, ["terminal"]);
    // Reuse `start` by passing the header change through the body is not possible; run by hand.
    let case = scenario.cases().swap_remove(0);
    let (agent_in, mut client_out) = tokio::io::duplex(4096);
    let (client_in, agent_out) = tokio::io::duplex(4096);
    let mut connector = OneConn(
        Some(AgentConn {
            id: 1,
            reader: Box::new(agent_in),
            writer: Box::new(agent_out),
            pid: None,
        }),
        Duration::ZERO,
        watch::channel(false).1,
    );
    let (seen, _actions) = mpsc::unbounded_channel();
    let mut user = TestUser {
        seen,
        fail_with: None,
    };
    let rec = Recorder::new();
    let cfg = EngineConfig::new("/w".into(), "/o".into());
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"clientCapabilities\":{\"terminal\":false}}}\n")
        .await
        .unwrap();
    let out = tokio::time::timeout(TEST_WAIT, run(&case, &cfg, &mut connector, &mut user, &rec))
        .await
        .unwrap();
    assert_eq!(
        out.end,
        RunEnd::NotApplicable {
            reason: "the client does not advertise clientCapabilities.terminal in initialize (the scenario requires it)".into()
        }
    );
    // Nothing was answered.
    assert!(
        rec.snapshot()
            .iter()
            .all(|e| e.direction != Direction::AgentToClient)
    );
    drop(client_in);
}

#[tokio::test]
async fn bad_lines_are_recorded_and_never_matched() {
    let body = "[[step]]\nexpect = \"ping\"\nreply = '{}'\n";
    let mut run = start(body, Opts::default());
    run.client.send("garbage {").await;
    run.client.send(r#"["not","an","object"]"#).await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":"p\u0041","method":"ping"}"#)
        .await;
    // Replies echo the id byte for byte (here a string with an escape).
    assert_eq!(
        run.client.recv_raw().await,
        r#"{"jsonrpc":"2.0","id":"p\u0041","result":{}}"#
    );
    let (out, _, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let entries = rec.snapshot();
    assert_eq!(entries[0].raw, "garbage {");
    assert!(entries[0].json().is_none());
    assert_eq!(entries[1].direction, Direction::ClientToAgent);
}

#[tokio::test]
async fn a_failing_user_action_makes_the_run_incomplete() {
    let run = start(
        &format!("[vars]\nfile = \"x\"\n{PERM}"),
        Opts {
            fail_with: Some("the adapter has no approval card for request 0".into()),
            ..Opts::default()
        },
    );
    // user = "new_session" is step 1 and fails; the handshake that waits is interrupted.
    let (out, _, _) = run.outcome().await;
    match &out.end {
        RunEnd::Incomplete { step: 1, reason } => assert_eq!(
            reason,
            "step 1 (t.toml:11): the adapter has no approval card for request 0"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_user_action_whose_premise_does_not_hold_makes_the_run_not_applicable() {
    let run = start(
        &format!("[vars]\nfile = \"x\"\n{PERM}"),
        Opts {
            fail_with: Some(UserFailure::NotApplicable(
                "the client answered request 0 by itself before the user could cancel".into(),
            )),
            ..Opts::default()
        },
    );
    let (out, _, _) = run.outcome().await;
    match &out.end {
        RunEnd::NotApplicable { reason } => assert_eq!(
            reason,
            "the client answered request 0 by itself before the user could cancel"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn faults_ids_and_notifications() {
    let body = r#"
[[step]]
fault = "split"
frame = '{"jsonrpc":"2.0","method":"a"}'
at = 5

[[step]]
fault = "duplicate"
frame = '{"jsonrpc":"2.0","method":"b"}'

[[step]]
fault = "raw"
line = 'not json ${x}'

[[step]]
fault = "invalid"
frame = '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"bogus"}}}'

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"x"}'

[[step]]
send = '{"jsonrpc":"2.0","id":"fixed","method":"x"}'

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"x"}'

[[step]]
expect = "session/prompt"
reply = '{"stopReason":"end_turn"}'
"#;
    let mut run = start(body, Opts::default());
    assert_eq!(
        run.client.recv_raw().await,
        r#"{"jsonrpc":"2.0","method":"a"}"#
    );
    assert_eq!(
        run.client.recv_raw().await,
        r#"{"jsonrpc":"2.0","method":"b"}"#
    );
    assert_eq!(
        run.client.recv_raw().await,
        r#"{"jsonrpc":"2.0","method":"b"}"#
    );
    assert_eq!(run.client.recv_raw().await, "not json ${x}");
    assert_eq!(
        run.client.recv().await["params"]["update"]["sessionUpdate"],
        "bogus"
    );
    assert_eq!(run.client.recv().await["id"], 0);
    assert_eq!(run.client.recv().await["id"], "fixed");
    assert_eq!(run.client.recv().await["id"], 1);
    // A request sent as a notification cannot be answered.
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"session/prompt","params":{}}"#)
        .await;
    let (out, _, rec) = run.outcome().await;
    match &out.end {
        RunEnd::Incomplete { step: 8, reason } => {
            assert!(reason.contains("as a notification"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // Each fault note comes right before its frame(s).
    let entries = rec.snapshot();
    let kinds: Vec<String> = entries
        .iter()
        .map(|e| match e.direction {
            Direction::Note => format!("note:{}", e.json().unwrap()["kind"].as_str().unwrap_or("")),
            _ => e.method().unwrap_or(&e.raw).to_owned(),
        })
        .collect();
    assert_eq!(
        &kinds[..8],
        [
            "note:split",
            "a",
            "note:duplicate",
            "b",
            "b",
            "note:raw",
            "not json ${x}",
            "note:invalid"
        ]
    );
}

#[tokio::test]
async fn each_case_chooses_its_option() {
    let body = format!(
        "[vars]\nfile = \"x\"\n{PERM}\n[[step]]\nuser = \"choose\"\nrequest = \"perm\"\neach = true\n"
    );
    let mut run = start(
        &body,
        Opts {
            case: 3,
            ..Opts::default()
        },
    );
    run.handshake().await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#)
        .await;
    run.client.recv().await;
    let mut chosen = None;
    for _ in 0..3 {
        if let UserAction::Choose { option_id, .. } = run.action().await {
            chosen = Some(option_id);
        }
    }
    assert_eq!(chosen.as_deref(), Some("cancel"));
    let (out, _, _) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
}

#[tokio::test]
async fn readers_keep_recording_after_the_run_until_eof() {
    let mut run = start("[[step]]\nexpect = \"a\"\n", Opts::default());
    run.client.send(r#"{"jsonrpc":"2.0","method":"a"}"#).await;
    let engine = tokio::time::timeout(TEST_WAIT, &mut run.engine)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(engine.end, RunEnd::Completed);
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"late"}"#)
        .await;
    run.client.to_agent.shutdown().await.unwrap();
    for r in engine.readers {
        tokio::time::timeout(TEST_WAIT, r).await.unwrap().unwrap();
    }
    let methods: Vec<Option<String>> = run
        .rec
        .snapshot()
        .iter()
        .map(|e| e.method().map(str::to_owned))
        .collect();
    assert_eq!(methods, [Some("a".to_owned()), Some("late".to_owned())]);
}

const CANCEL_OR_FINISH: &str = r#"
[[step]]
user = "new_session"

[[step]]
handshake = true

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
expect = "session/cancel"
timeout_ms = 200
on_timeout = [
  { send = '{"jsonrpc":"2.0","method":"branch","params":{"b":"no-cancel"}}' },
  { reply_to = "prompt", result = '{"stopReason":"end_turn"}' },
]

[[step]]
send = '{"jsonrpc":"2.0","method":"end"}'
"#;

async fn prompt_started(run: &mut Run) {
    assert!(matches!(run.action().await, UserAction::NewSession { .. }));
    prompt_sent(run).await;
}

/// The handshake, then the client's `session/prompt` (id 2).
async fn prompt_sent(run: &mut Run) {
    run.handshake().await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"ses_test","prompt":[]}}"#)
        .await;
}

#[tokio::test]
async fn on_timeout_runs_when_the_message_never_comes() {
    let mut run = start(CANCEL_OR_FINISH, Opts::default());
    prompt_started(&mut run).await;
    assert_eq!(run.client.recv().await["params"]["b"], "no-cancel");
    assert_eq!(run.client.recv().await["result"]["stopReason"], "end_turn");
    // The scenario ends after the on_timeout steps: the last step (which assumes the cancel
    // arrived) is not played.
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    assert!(
        !rec.snapshot()
            .iter()
            .any(|e| e.direction == Direction::AgentToClient
                && e.json().is_some_and(|j| j["method"] == "end")),
        "steps after an on_timeout branch must not run"
    );
    let branch = notes(&rec, "branch");
    assert_eq!(branch.len(), 1);
    let note = branch[0].json().unwrap();
    assert_eq!(note["case"], "on_timeout");
    assert_eq!(note["step"], "4");
    assert!(notes(&rec, "step_timeout").is_empty());
}

#[tokio::test]
async fn on_timeout_runs_when_the_client_closes_the_connection_instead() {
    // A client that gives up (a one-shot CLI exiting on auth_required) has not sent the message
    // either: the branch for "it did not come" applies, and the run is complete, not a crash.
    let body = r#"
[[step]]
handshake = true

[[step]]
expect = "authenticate"
timeout_ms = 3600000
on_timeout = []

[[step]]
send = '{"jsonrpc":"2.0","method":"end"}'
"#;
    let mut run = start(body, Opts::default());
    run.handshake().await;
    run.client.to_agent.shutdown().await.unwrap();
    let (out, _, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let branch = notes(&rec, "branch");
    assert_eq!(branch.len(), 1);
    let note = branch[0].json().unwrap();
    assert_eq!(note["case"], "on_timeout");
    assert_eq!(
        note["answer"],
        "the client closed the agent connection instead of sending authenticate"
    );
    assert_eq!(notes(&rec, "connection_closed").len(), 1);
    assert!(notes(&rec, "step_timeout").is_empty());
}

#[tokio::test]
async fn on_timeout_is_skipped_when_the_message_comes() {
    let mut run = start(CANCEL_OR_FINISH, Opts::default());
    prompt_started(&mut run).await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"ses_test"}}"#)
        .await;
    // The prompt is never answered by the on_timeout steps: the next frame is the last step's.
    assert_eq!(run.client.recv().await["method"], "end");
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    assert!(notes(&rec, "branch").is_empty());
}

/// opencode's fire-and-forget `fs/write_text_file`: the turn goes on after a while without the
/// answer.
const WRITE_UNAWAITED: &str = r#"
[[step]]
handshake = true

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"fs/write_text_file","params":{"sessionId":"${sessionId}","path":"/p","content":""}}'
as = "write"

[[step]]
await = "write"
timeout_ms = 200
go_on = true

[[step]]
send = '{"jsonrpc":"2.0","method":"end"}'
"#;

#[tokio::test]
async fn await_with_go_on_goes_on_when_the_answer_never_comes() {
    let mut run = start(WRITE_UNAWAITED, Opts::default());
    run.handshake().await;
    assert_eq!(run.client.recv().await["method"], "fs/write_text_file");
    assert_eq!(run.client.recv().await["method"], "end");
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let branch = notes(&rec, "branch");
    assert_eq!(branch.len(), 1);
    let note = branch[0].json().unwrap();
    assert_eq!(note["case"], "go_on");
    assert_eq!(note["request"], "write");
    assert_eq!(note["step"], "3");
    assert!(notes(&rec, "step_timeout").is_empty());
}

#[tokio::test]
async fn await_with_go_on_takes_the_answer_that_comes() {
    let mut run = start(WRITE_UNAWAITED, Opts::default());
    run.handshake().await;
    let write = run.client.recv().await;
    run.client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":null}}"#,
            write["id"]
        ))
        .await;
    assert_eq!(run.client.recv().await["method"], "end");
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let branch = notes(&rec, "branch");
    assert_eq!(branch.len(), 1);
    assert_eq!(branch[0].json().unwrap()["case"], serde_json::Value::Null);
}

/// A rejected tool ends the turn inside its `on` case (`end = true`); an approved one goes on.
const END_IN_CASE: &str = r#"
[[step]]
handshake = true

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"sessionId":"${sessionId}","toolCall":{"toolCallId":"t"},"options":[{"optionId":"y","name":"Yes","kind":"allow_once"},{"optionId":"n","name":"No","kind":"reject_once"}]}}'
as = "perm"

[[step]]
await = "perm"

[[step.on]]
selected = ["allow_once"]
then = []

[[step.on]]
otherwise = true
end = true
then = [ { send = '{"jsonrpc":"2.0","method":"rejected"}' } ]

[[step]]
send = '{"jsonrpc":"2.0","method":"approved"}'
"#;

async fn answer_end_in_case(option: &str) -> (String, RunEnd, bool) {
    let mut run = start(END_IN_CASE, Opts::default());
    run.handshake().await;
    let perm = run.client.recv().await;
    run.client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"{option}"}}}}}}"#,
            perm["id"]
        ))
        .await;
    let next = run.client.recv().await["method"]
        .as_str()
        .unwrap()
        .to_owned();
    let (out, _client, rec) = run.outcome().await;
    let approved_sent = rec.snapshot().iter().any(|e| {
        e.direction == Direction::AgentToClient
            && e.json().is_some_and(|j| j["method"] == "approved")
    });
    (next, out.end, approved_sent)
}

#[tokio::test]
async fn an_on_case_with_end_ends_the_scenario_after_its_steps() {
    let (next, end, approved_sent) = answer_end_in_case("n").await;
    assert_eq!(next, "rejected");
    assert_eq!(end, RunEnd::Completed);
    assert!(!approved_sent, "the steps after the await must not run");
    let (next, end, approved_sent) = answer_end_in_case("y").await;
    assert_eq!(next, "approved");
    assert_eq!(end, RunEnd::Completed);
    assert!(approved_sent);
}

const BIND: &str = r#"
[[step]]
handshake = true

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"terminal/create","params":{"sessionId":"${sessionId}","command":"true"}}'
as = "create"

[[step]]
await = "create"
bind = { terminalId = "/terminalId" }

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"terminal/release","params":{"sessionId":"${sessionId}","terminalId":"${terminalId}"}}'
as = "release"
"#;

#[tokio::test]
async fn await_binds_a_value_of_the_answer_into_later_frames() {
    let mut run = start(BIND, Opts::default());
    run.handshake().await;
    let create = run.client.recv().await;
    assert_eq!(create["method"], "terminal/create");
    run.client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"terminalId":"term_7"}}}}"#,
            create["id"]
        ))
        .await;
    let release = run.client.recv().await;
    assert_eq!(release["params"]["terminalId"], "term_7");
    let (out, _client, _rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
}

#[tokio::test]
async fn an_answer_without_the_bound_value_ends_the_run_incomplete() {
    let mut run = start(BIND, Opts::default());
    run.handshake().await;
    let create = run.client.recv().await;
    run.client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":"no"}}}}"#,
            create["id"]
        ))
        .await;
    let (out, _client, _rec) = run.outcome().await;
    match out.end {
        RunEnd::Incomplete { step, reason } => {
            assert_eq!(step, 3);
            assert!(
                reason.contains("has no result value at \"/terminalId\""),
                "{reason}"
            );
        }
        other => panic!("expected incomplete, got {other:?}"),
    }
}
#[tokio::test]
async fn a_request_the_client_withdrew_is_answered_request_cancelled() {
    let body = r#"
[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
expect = "note"

[[step]]
reply_to = "prompt"
result = '{"stopReason":"end_turn"}'
"#;
    let mut run = start(body, Opts::default());
    run.client
        .send(r#"{"jsonrpc":"2.0","id":"p-1","method":"session/prompt","params":{}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p-1"}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"note","params":{}}"#)
        .await;
    let answer = run.client.recv().await;
    assert_eq!(answer["id"], "p-1");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    let (out, _, _) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
}

/// A `send` followed by another `send` waits in the outbox for the batch. A run that stops at
/// the second one (its variable was captured in a branch that did not run) must still deliver
/// the first: it is recorded as sent, and the client may have to answer it.
#[tokio::test]
async fn a_stopped_run_still_writes_its_outbox() {
    let body = r#"
[[step]]
handshake = true

[[step]]
expect = "note"
timeout_ms = 5000
on_timeout = [
  { expect = "never", timeout_ms = 50, capture = { v = "/params/v" } },
]

[[step]]
send = '{"jsonrpc":"2.0","method":"queued","params":{}}'

[[step]]
send = '{"jsonrpc":"2.0","method":"unsendable","params":{"v":"${v}"}}'
"#;
    let mut run = start(body, Opts::default());
    run.handshake().await;
    run.client
        .send(r#"{"jsonrpc":"2.0","method":"note","params":{}}"#)
        .await;
    let delivered = run.client.recv().await;
    assert_eq!(delivered["method"], "queued", "{delivered}");
    let (out, _client, rec) = run.outcome().await;
    match &out.end {
        RunEnd::HarnessError { reason } => assert!(
            reason.starts_with("step 4 (t.toml:22): variable `${v}` has no value here"),
            "{reason}"
        ),
        other => panic!("expected a harness error at step 4, got {other:?}"),
    }
    let sent: Vec<String> = rec
        .snapshot()
        .iter()
        .filter(|e| e.direction == Direction::AgentToClient)
        .filter_map(|e| Some(e.json()?["method"].as_str()?.to_owned()))
        .collect();
    assert_eq!(sent, ["queued"], "recorded as sent");
}

/// A crash step needs a process to kill: over an in-memory pipe there is none, and that is the
/// harness's error (a scenario run where no agent process exists), not the client's.
#[tokio::test]
async fn a_crash_without_an_agent_process_is_a_harness_error() {
    let body = "[[step]]\nhandshake = true\n\n[[step]]\nfault = \"crash\"\n";
    let mut run = start(body, Opts::default());
    run.handshake().await;
    let (out, _client, rec) = run.outcome().await;
    match &out.end {
        RunEnd::HarnessError { reason } => assert!(
            reason.contains("fault = \"crash\": this agent connection has no process to kill"),
            "{reason}"
        ),
        other => panic!("expected a harness error, got {other:?}"),
    }
    assert!(
        !rec.snapshot()
            .iter()
            .any(|e| e.json().is_some_and(|j| j["type"] == "agent_killed")),
        "no kill is noted when none happened"
    );
}

/// Waits for the first prompt, then for `authenticate` with the one method id the agent carries
/// out, and a later `session/load`.
const UNMATCHED: &str = r#"
[[step]]
user = "new_session"

[[step]]
handshake = true

[[step]]
expect = "authenticate"
match = '{"params":{"methodId":"agent-login"}}'
reply = '{}'

[[step]]
expect = "session/load"
reply = '{}'
"#;

#[tokio::test]
async fn an_unknown_method_is_answered_method_not_found_and_noted() {
    let mut run = start(UNMATCHED, Opts::default());
    assert!(matches!(run.action().await, UserAction::NewSession { .. }));
    run.handshake().await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":"x\u0031","method":"_zed/unknown","params":{}}"#)
        .await;
    // Answered at once, while step 3 still waits, with the id byte for byte.
    let raw = run.client.recv_raw().await;
    assert!(raw.contains(r#""id":"x\u0031""#), "{raw}");
    let answer: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(answer["error"]["code"], -32601);
    assert_eq!(answer["error"]["message"], "Method not found");
    assert_eq!(answer["error"]["data"]["method"], "_zed/unknown");
    // The scenario goes on: the awaited request still gets its scripted answer.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"agent-login"}}"#)
        .await;
    assert_eq!(run.client.recv().await["result"], json!({}));
    run.client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#)
        .await;
    assert_eq!(run.client.recv().await["id"], 4);
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let noted = notes(&rec, "unmatched_request");
    assert_eq!(noted.len(), 1, "{noted:?}");
    let note = noted[0].json().unwrap();
    assert_eq!(note["step"], "3");
    assert_eq!(note["method"], "_zed/unknown");
    assert_eq!(note["error"]["code"], -32601);
    let entries = rec.snapshot();
    let request = entries[note["frame"].as_u64().unwrap() as usize].json();
    assert_eq!(request.unwrap()["method"], "_zed/unknown");
}

#[tokio::test]
async fn an_authenticate_no_step_takes_gets_the_profiles_error() {
    let mut run = start(UNMATCHED, Opts::default());
    assert!(matches!(run.action().await, UserAction::NewSession { .. }));
    run.handshake().await;
    // A method id the step does not match: the real agent's error, from the profile.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"api-key"}}"#)
        .await;
    let answer = run.client.recv().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(
        answer["error"],
        json!({"code":-32602,"message":"Invalid params","data":"unsupported authentication method"})
    );
    // The right one is still taken by its step.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"methodId":"agent-login"}}"#)
        .await;
    assert_eq!(run.client.recv().await["id"], 4);
    run.client
        .send(r#"{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#)
        .await;
    assert_eq!(run.client.recv().await["id"], 5);
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let noted = notes(&rec, "unmatched_request");
    assert_eq!(noted.len(), 1);
    assert_eq!(noted[0].json().unwrap()["method"], "authenticate");
}

#[tokio::test]
async fn a_method_the_agent_implements_gets_the_profiles_result_filled_in() {
    let mut run = start(UNMATCHED, Opts::default());
    assert!(matches!(run.action().await, UserAction::NewSession { .. }));
    run.handshake().await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":9,"method":"session/list","params":{}}"#)
        .await;
    let answer = run.client.recv().await;
    assert_eq!(answer["id"], 9);
    let listed = &answer["result"]["sessions"][0];
    let id = listed["sessionId"].as_str().unwrap();
    assert!(!id.is_empty() && !id.contains("${"), "{answer}");
    assert!(!listed["cwd"].as_str().unwrap().contains("${"), "{answer}");
    run.client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"agent-login"}}"#)
        .await;
    assert_eq!(run.client.recv().await["id"], 3);
    run.client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#)
        .await;
    assert_eq!(run.client.recv().await["id"], 4);
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let noted = notes(&rec, "unmatched_request");
    assert_eq!(noted.len(), 1);
    let note = noted[0].json().unwrap();
    assert_eq!(note["method"], "session/list");
    assert!(
        note.get("error").is_none() && note["result"].is_object(),
        "{note}"
    );
}

#[tokio::test]
async fn a_request_a_later_step_takes_waits_for_it_and_an_agent_method_is_never_guessed() {
    let mut run = start(UNMATCHED, Opts::default());
    assert!(matches!(run.action().await, UserAction::NewSession { .. }));
    run.handshake().await;
    // Step 4 takes session/load: not answered early, while step 3 waits.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#)
        .await;
    // An agent method no step takes and the profile has no error for: left unanswered.
    run.client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"session/set_mode","params":{"sessionId":"s","modeId":"m"}}"#)
        .await;
    run.client
        .send(r#"{"jsonrpc":"2.0","id":5,"method":"authenticate","params":{"methodId":"agent-login"}}"#)
        .await;
    // The first thing the agent writes is the answer to authenticate, then to session/load.
    assert_eq!(run.client.recv().await["id"], 5);
    assert_eq!(run.client.recv().await["id"], 3);
    let (out, _client, rec) = run.outcome().await;
    assert_eq!(out.end, RunEnd::Completed);
    let noted = notes(&rec, "unmatched_request");
    assert_eq!(noted.len(), 1, "{noted:?}");
    let note = noted[0].json().unwrap();
    assert_eq!(note["method"], "session/set_mode");
    assert_eq!(note["step"], "3");
    assert!(note.get("error").is_none(), "{note}");
    assert!(
        !rec.snapshot()
            .iter()
            .any(|e| e.direction == Direction::AgentToClient
                && e.json().is_some_and(|j| j["id"] == 4)),
        "session/set_mode must stay unanswered"
    );
}

/// The scenario of a one-shot client's turn: the prompt's answer, then (after a pause in which
/// the client leaves) a notification the real agent writes after the answer.
const ANSWER_THEN_NOTIFY: &str = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
reply = '{"stopReason":"end_turn"}'

[[step]]
delay_ms = 100

[[step]]
send = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ses_test","update":{"sessionUpdate":"session_info_update","title":"t"}}}'
"#;

/// A client that exits once its prompt is answered (ralph-any `-m 1`) may beat the agent's last
/// notifications: it has done all the scenario asked, so the run is complete, whichever won.
#[tokio::test]
async fn a_client_that_leaves_after_its_answered_turn_completes_the_run() {
    let mut run = start(ANSWER_THEN_NOTIFY, Opts::default());
    prompt_sent(&mut run).await;
    assert_eq!(run.client.recv().await["result"]["stopReason"], "end_turn");
    let (out, rec) = run.client_leaves().await;
    assert_eq!(out.end, RunEnd::Completed);
    // The grading still learns that the last frame never reached the client.
    assert_eq!(notes(&rec, "connection_closed").len(), 1);
}

/// The prompt answered inside an `on` case that ends the scenario (claude-agent-acp 0.101 sends
/// `session_info_update` after the answer of an approved tool's turn): leaving then completes
/// the run too.
const ANSWER_IN_ENDING_CASE: &str = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"sessionId":"${sessionId}","toolCall":{"toolCallId":"t"},"options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}'
as = "perm"

[[step]]
await = "perm"

[[step.on]]
otherwise = true
end = true
then = [
  { reply_to = "prompt", result = '{"stopReason":"end_turn"}' },
  { delay_ms = 100 },
  { send = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ses_test","update":{"sessionUpdate":"session_info_update","title":"t"}}}' },
]
"#;

#[tokio::test]
async fn a_client_that_leaves_after_a_turn_answered_in_an_ending_case_completes_the_run() {
    let mut run = start(ANSWER_IN_ENDING_CASE, Opts::default());
    prompt_sent(&mut run).await;
    let perm = run.client.recv().await;
    run.client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"y"}}}}}}"#,
            perm["id"]
        ))
        .await;
    assert_eq!(run.client.recv().await["result"]["stopReason"], "end_turn");
    let (out, rec) = run.client_leaves().await;
    assert_eq!(out.end, RunEnd::Completed);
    assert_eq!(notes(&rec, "connection_closed").len(), 1);
}

/// A turn the client leaves before its answer (yopo dies on an update it cannot parse): updates,
/// then the prompt's answer, after a pause in which the client is gone.
const TURN_AFTER_A_PAUSE: &str = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
delay_ms = 100

[[step]]
send = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ses_test","update":{"sessionUpdate":"usage_update","used":1,"size":9}}}'

[[step]]
send = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ses_test","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}'

[[step]]
reply_to = "prompt"
result = '{"stopReason":"end_turn"}'
"#;

/// The methods and results of the frames recorded as sent to the client, in order.
fn sent_frames(rec: &Recorder) -> Vec<String> {
    rec.snapshot()
        .iter()
        .filter(|e| e.direction == Direction::AgentToClient)
        .filter_map(|e| {
            let json = e.json()?;
            Some(match json.get("method") {
                Some(m) => m.as_str()?.to_owned(),
                None => json["result"].to_string(),
            })
        })
        .collect()
}

/// Whether the client's exit beats the agent's writes is the machine's doing: either way the
/// agent's turn is played to its end (recorded, written or not), so the run ends the same.
#[tokio::test]
async fn a_client_that_leaves_mid_turn_ends_the_run_as_if_it_had_read_every_frame() {
    let mut run = start(TURN_AFTER_A_PAUSE, Opts::default());
    prompt_sent(&mut run).await;
    let (left, left_rec) = run.client_leaves().await;

    let mut run = start(TURN_AFTER_A_PAUSE, Opts::default());
    prompt_sent(&mut run).await;
    for _ in 0..3 {
        run.client.recv().await;
    }
    let (read, _, read_rec) = run.outcome().await;

    assert_eq!(left.end, RunEnd::Completed);
    assert_eq!(read.end, RunEnd::Completed);
    assert_eq!(sent_frames(&left_rec), sent_frames(&read_rec));
    assert_eq!(
        sent_frames(&left_rec)[2..],
        [
            "session/update",
            "session/update",
            r#"{"stopReason":"end_turn"}"#
        ]
    );
    // The grading still learns where the frames stopped reaching the client.
    let closed = notes(&left_rec, "connection_closed");
    assert_eq!(closed.len(), 1);
    assert!(notes(&read_rec, "connection_closed").is_empty());
}

/// Gone before a step that needs it (the answer to a permission request), the client has
/// abandoned the run: incomplete at that step, saying where the connection closed.
#[tokio::test]
async fn a_client_that_leaves_before_a_step_that_needs_it_is_incomplete() {
    let body = TURN_AFTER_A_PAUSE.replace(
        "[[step]]\nreply_to",
        r#"[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"sessionId":"ses_test","toolCall":{"toolCallId":"t"},"options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}'
as = "perm"

[[step]]
await = "perm"

[[step]]
reply_to"#,
    );
    let mut run = start(&body, Opts::default());
    prompt_sent(&mut run).await;
    let (out, rec) = run.client_leaves().await;
    match &out.end {
        RunEnd::Incomplete { step, reason } => {
            assert_eq!(*step, 7, "{reason}");
            assert!(
                reason.starts_with("client closed the agent connection at step 6 (t.toml:"),
                "{reason}"
            );
            assert!(
                reason.contains("while the agent was writing to it"),
                "{reason}"
            );
            assert!(reason.contains("step 7 (t.toml:"), "{reason}");
        }
        other => panic!("expected an abandoned run at step 7, got {other:?}"),
    }
    assert_eq!(notes(&rec, "connection_closed").len(), 1);
}

/// A client process that exits during a pause of the agent's: the pause ends then, for whether
/// it died before or during the pause is timing (the harness bounds what a dead client's run
/// may still take, and a pause outlasting that made the run incomplete).
#[tokio::test]
async fn a_pause_ends_when_the_client_process_exits() {
    let body = ANSWER_THEN_NOTIFY.replace("delay_ms = 100", "delay_ms = 600000");
    let mut run = start(&body, Opts::default());
    prompt_sent(&mut run).await;
    assert_eq!(run.client.recv().await["result"]["stopReason"], "end_turn");
    run.gone.send_replace(true);
    // Within TEST_WAIT, not the ten-minute pause.
    let (out, rec) = run.client_leaves().await;
    assert_eq!(out.end, RunEnd::Completed);
    assert_eq!(notes(&rec, "connection_closed").len(), 1);
}
