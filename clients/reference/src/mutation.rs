//! Field-bug mutants: each reproduces one real client bug so that a harness check can prove it
//! fails. The reference behaviour is `None` (no `--mutant`).
//!
//! Adding a mutant = one variant here with its name, the bug it reproduces (`mutation/bug.rs`)
//! and the checks it must fail (`mutation/checks.rs`) + one decision point in the module whose behaviour it changes. Every decision point
//! is a single `if self.mutant == Some(Mutant::…)` marked `// MUTANT <name>` with a comment naming
//! the bug, so the reference logic around it stays readable. Decision points today:
//!
//! | mutant | where |
//! |---|---|
//! | `always-command` | `client.rs`, `on_permission_request` (approval subject) |
//! | `kind-from-request` | `client.rs`, `on_permission_request` (approval subject) |
//! | `unoffered-option` | `client.rs`, `choose` (optionId sent) |
//! | `collapse-by-kind` | `client.rs`, `on_permission_request` (buttons presented) |
//! | `duplicate-labels` | `client.rs`, `on_permission_request` (button labels) |
//! | `cancel-as-reject` | `client.rs`, `cancel` (its behaviour: `reject_pending`) |
//! | `cancel-as-failed` | `client.rs`, `on_response` (turn state for `stopReason: cancelled`) |
//! | `no-cancelled-answer` | `client.rs`, `cancel` (pending approvals left open) |
//! | `overwrite-same-tool-call` | `client.rs`, `on_permission_request` (pending approvals keyed by toolCallId) |
//! | `flip-on-approval` | `client.rs`, `on_permission_request` (item retyped; `timeline.rs` ends the retype) |
//! | `global-approval-handler` | `client.rs`, `on_permission_request` (the session an approval belongs to) |
//! | `relative-cwd` | `client.rs`, `send_session_new` (`cwd` sent) |
//! | `mcp-server-without-env` | `client.rs`, `send_session_new` (`mcpServers` sent) |
//! | `editor-save-hooks` | `client.rs`, `on_agent` (`fs/write_text_file` content) |
//! | `session-before-initialized` | `client.rs`, `new_session` (when `session/new` is sent) |
//! | `approve-by-request-kind` | `decide.rs`, `decide` (the kinds decided on) |
//! | `approve-by-title-guess` | `decide.rs`, `decide` (the kinds decided on) |
//! | `workspace-prefix-check` | `decide.rs`, `inside` (what "inside the workspace" means) |
//! | `remembered-any-kind` | `decide.rs`, `decide` (what a remembered grant covers) |
//!
//! The four decision mutants run with the policy under which their bug shows when no `--policy`
//! is given (`decide::Policy::for_mutant`).
//! | `turn-never-ended` | `client.rs`, `end_turn` (the turn event of a finished turn) |
//! | `no-row-for-request-only` | `client.rs`, `announce` (which announcements create a row) |
//! | `tool-calls-keyed-by-id` | `timeline.rs`, `position` (the key of a row) |
//! | `card-dropped-on-progress` | `client.rs`, `on_session_update` (pending card of an updated tool call) |
//! | `request-after-stop-to-user` | `client.rs`, `on_permission_request` (a request during a cancel) |
//! | `process-cwd-as-session-cwd` | `client.rs`, `send_session_new` (`cwd` sent) |
//! | `read-line-zero-based` | `fs.rs`, `read_text_file` (the first line a read returns) |
//! | `serve-any-path` | `fs_scope.rs`, `check` (which paths the client serves without asking) |
//! | `write-any-path` | `fs_scope.rs`, `check` (which paths the client writes without asking) |
//! | `register-after-load` | `client/sessions.rs`, `send_reopen` (when a loaded session gets its id) |
//! | `replay-shown-twice` | `client/sessions.rs`, `on_reopened` (the history shown) |
//! | `replay-user-as-agent` | `history.rs`, `apply` (whose message a replayed user chunk is) |
//! | `ungated-resume` | `client/sessions.rs`, `send_reopen` (the capability check) |
//! | `release-keeps-running` | `terminal.rs`, `serve` (what `terminal/release` does) |
//! | `kill-direct-child-only` | `terminal.rs`, `Terminal::kill` (who gets the signal) |
//! | `truncate-keeps-head` | `terminal.rs`, `Output::push` (which end the limit keeps) |
//! | `output-since-last-call` | `terminal.rs`, `Terminals::serve` (what `terminal/output` leaves kept) |
//! | `truncate-mid-character` | `terminal.rs`, `Output::text` (where the kept text starts) |
//! | `signal-as-exit-zero` | `terminal.rs`, `ExitStatus::from_std` (the exit status reported) |
//! | `crash-on-unknown-update` | `client/agent.rs`, `on_session_update` (an unknown variant) |
//! | `stop-after-unknown-update` | `client/agent.rs`, `on_session_update` (updates after one) |
//! | `ignore-extension-request` | `client/agent.rs`, `on_agent` (a `_` request) |
//! | `cancel-as-request` | `client.rs`, `cancel` (how `session/cancel` is sent) |
//! | `ignore-cancel-request` | `client/agent.rs`, `on_agent` (the agent's `$/cancel_request`) |
//! | `late-unknown-request` | `client/agent.rs`, `on_agent` (when a request of no ACP method is answered) |
//! | `select-withdrawn` | `client/agent.rs`, `on_cancel_request` (the answer to a withdrawn approval) |
//! | `agent-death-as-completed` | `client/agent.rs`, `on_agent_closed` (the state of a turn the agent died in) |
//! | `silent-failed-start` | `client.rs`, `fail_sessions_opening` (what the user hears of a session the dead agent never opened) |
//! | `any-protocol-version` | `client/agent.rs`, `on_response` (which protocol versions it goes on with) |
//! | `unoffered-mode` | `client/modes.rs`, `set_mode` (which modes may be sent) |
//! | `optimistic-mode-switch` | `client/modes.rs`, `set_mode` (when the selector moves) |
//! | `mode-only-from-update` | `client/modes.rs`, `on_set_mode_answer` (a success answer) |
//! | `ignore-mode-update` | `client/modes.rs`, `on_settings_update` (`current_mode_update`) |
//! | `retry-without-authenticate` | `client/auth.rs`, `on_auth_required` (what follows `auth_required`) |
//! | `authenticate-unadvertised` | `client/auth.rs`, `on_auth_required` (the method id sent) |
//! | `append-plan` | `client/plan.rs`, `on_plan_update` (what a plan update does to the plan shown) |
//! | `cancel-marks-finished` | `timeline.rs`, `cancel_unfinished` (which rows a Stop marks cancelled) |
//! | `keep-first-title` | `timeline.rs`, `Item::merged_in` (the title a row keeps) |
//! | `refuse-reads` | `fs.rs`, `read_text_file` (whether a read is served at all) |
//! | `require-raw-input` | `client/agent.rs`, `on_permission_request` (which requests are valid) |
//! | `local-session-after-failed-start` | `client/agent.rs`, `on_response` (the sessions of an unspoken protocol version) |
//! | `die-on-wait-for-exit` | `client/agent.rs`, `on_agent` (`terminal/wait_for_exit`) |
//! | `drop-env` | `terminal.rs`, `Terminals::create` (the command's environment) |
//! | `hang-on-agent-death` | `client/agent.rs`, `on_agent_closed` (whether a dead agent is noticed) |

mod bug;
mod checks;

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutant {
    /// Every approval is a command approval (get-bb/bb#1719 before its fix in bb#1803).
    AlwaysCommand,
    /// The approval's subject comes from the permission request's own `kind` only (acpx,
    /// t3code, CodeCompanion).
    KindFromRequest,
    /// The answer is built against a fixed default option list, not the offered one (ZERO #915).
    UnofferedOption,
    /// One button per decision (allow once / allow always / reject once): `reject_always` and a
    /// second option of the same kind cannot be chosen (bb, t3code, CodeCompanion).
    CollapseByKind,
    /// Buttons labelled by kind only, so two options can both read "Allow" (ZERO #915,
    /// CodeCompanion).
    DuplicateLabels,
    /// Ctrl-C at the approval prompt answers "reject" and never sends `session/cancel` (acpx).
    CancelAsReject,
    /// A turn the agent ends with `stopReason: cancelled` is shown as failed (ZERO #915).
    CancelAsFailed,
    /// Stop sends `session/cancel` but never answers the pending approvals (Toad, the Python
    /// SDK's gemini example).
    NoCancelledAnswer,
    /// Pending approvals keyed by (session, toolCallId): a second request for the same tool call
    /// replaces the first, which is never answered (jupyter-ai-acp-client).
    OverwriteSameToolCall,
    /// The timeline row of a tool call becomes a command row when its approval arrives and goes
    /// back when it completes (get-bb/bb#1719, timeline side).
    FlipOnApproval,
    /// One global approval handler, installed by the last prompt: approvals of every session are
    /// shown in (and cancelled with) that session (Nano-Collective/nanocoder#1080).
    GlobalApprovalHandler,
    /// `session/new` with `cwd: "."` (openkaiden/kaiden#2635).
    RelativeCwd,
    /// `session/new` lists a stdio MCP server without its required `env` (can1357/oh-my-pi#7722).
    McpServerWithoutEnv,
    /// `fs/write_text_file` goes through the editor's save hooks, which strip trailing
    /// whitespace and add a final newline (Zed `ensure_final_newline_on_save`).
    EditorSaveHooks,
    /// `session/new` is sent right after `initialize`, before its response (ACP #23).
    SessionBeforeInitialized,
    /// The automatic approval reads the request's own kind only (felinics/Memoh#972).
    ApproveByRequestKind,
    /// The automatic approval guesses the kind from the request title's first word (acpx
    /// approve-reads, `inferToolKind`).
    ApproveByTitleGuess,
    /// "Inside the workspace" is a string-prefix test without normalisation (CVE-2025-53110).
    WorkspacePrefixCheck,
    /// A remembered "always allow" opens every kind for the session (docker/docker-agent#4376).
    RememberedAnyKind,
    /// A finished turn is never shown ended (pingdotgg/t3code#7484's stuck spinner;
    /// agentclientprotocol/claude-agent-acp#694, JetBrains stuck in "running").
    TurnNeverEnded,
    /// Rows are created by `tool_call` only: a tool call first announced by a permission request
    /// or an update gets no row (qwen-code's request-only shape; google-gemini/gemini-cli#21783).
    NoRowForRequestOnly,
    /// Timeline rows keyed by `toolCallId` alone, so another session's updates change this
    /// session's row (pingdotgg/t3code#304).
    ToolCallsKeyedById,
    /// The approval card vanishes when its tool call is updated before the grant
    /// (xenodium/agent-shell#369).
    CardDroppedOnProgress,
    /// A permission request that arrives after Stop is shown to the user instead of being
    /// answered `cancelled` (ACP tool-calls: "If the current prompt turn gets cancelled, the
    /// Client MUST respond with the cancelled outcome").
    RequestAfterStopToUser,
    /// `session/new` carries the client's own process cwd (formulahendry/vscode-acp#14).
    ProcessCwdAsSessionCwd,
    /// `fs/read_text_file`'s `line` taken as a 0-based index, so a read starts one line late
    /// (QwenLM/qwen-code packages/vscode-ide-companion/src/services/acpFileHandler.ts,
    /// `lines.slice(params.line || 0, …)`, fixed by 13e242dd "ACP spec: `line` is 1-based").
    ReadLineZeroBased,
    /// `fs/read_text_file` and `fs/write_text_file` served for any path, `..` and symlinks out of
    /// the workspace included, without asking (QwenLM/qwen-code
    /// packages/vscode-ide-companion/src/services/acpFileHandler.ts@13e242dd: `fs.readFile(params.path)`
    /// with no containment check).
    ServeAnyPath,
    /// Reads are kept inside the workspace, but `fs/write_text_file` is served for any path,
    /// with nobody asked (flazouh/acepe#50: the write command skipped the read's path check).
    WriteAnyPath,
    // ----- session lifecycle
    /// A loaded session is registered only when `session/load` answers, so the history the agent
    /// replays before the answer is dropped (zed-industries/zed#54431).
    RegisterAfterLoad,
    /// The kept transcript is shown and the replay appended to it: every entry twice
    /// (mrmans0n/alas#406).
    ReplayShownTwice,
    /// A replayed `user_message_chunk` is not shown as the user's message
    /// (raphaeltm/simple-agent-manager#79).
    ReplayUserAsAgent,
    /// `session/resume` is sent whatever the agent advertised (the shape of
    /// modelcontextprotocol/python-sdk#2689).
    UngatedResume,
    /// `terminal/release` forgets the id but leaves the command running (the terminal-manager
    /// bug MyRobotLab/myrobotlab#1397's review names: removing a terminal from the map does not
    /// stop it).
    ReleaseKeepsRunning,
    /// `terminal/kill` (and release) signals the direct child only, so what a shell line started
    /// lives on (nexu-io/open-design#7431, clawbench-dev/clawbench#344).
    KillDirectChildOnly,
    /// `outputByteLimit` keeps the first bytes instead of the last (can1357/oh-my-pi#7078:
    /// terminal output head-truncated).
    TruncateKeepsHead,
    /// `terminal/output` hands out only what the command printed since the previous
    /// `terminal/output` (a buffer drained on every read), not all the output kept so far
    /// (issue 42 item 12; no public report yet).
    OutputSinceLastCall,
    /// The kept byte suffix is decoded from inside a multi-byte character, which becomes U+FFFD
    /// (mrmans0n/alas#352, review of its ACP terminal).
    TruncateMidCharacter,
    /// A command killed by a signal is reported as `exitCode: 0` (earendil-works/pi#8992,
    /// openclaw/openclaw#148027: `code ?? 0`).
    SignalAsExitZero,
    /// A typed parser rejects a `session/update` variant it does not know and the client dies
    /// (RyderFreeman4Logos/cli-sub-agent#2585: `usage_update` failed JSON-RPC decoding).
    CrashOnUnknownUpdate,
    /// After one `session/update` it does not understand, the client processes no further
    /// update (xenodium/agent-shell#455).
    StopAfterUnknownUpdate,
    /// An unrecognized agent request is never answered, so the agent waits for its id
    /// (carlos-algms/agentic.nvim#314; QwenLM/qwen-code#4925).
    IgnoreExtensionRequest,
    /// `session/cancel` is sent as a request with an id (xenodium/acp.el#1,
    /// nexu-io/open-design#7959).
    CancelAsRequest,
    /// The agent's `$/cancel_request` for a pending permission request is dropped: the card
    /// stays and the request is never answered (mrmans0n/alas#1380 review: a cancellation that
    /// arrives while the policy lookup runs is lost and the request stays parked).
    IgnoreCancelRequest,
    /// A request of a method outside ACP that is not `_`-prefixed (qwen-code 0.21.10's
    /// `craft/drainMidTurnQueue`) is answered `-32601` only after three seconds, as by a client
    /// that routes unknown methods to a slow fallback: the agent, which waits for the answer,
    /// stalls its turn (QwenLM/qwen-code#4925: an agent hung on an unanswered request).
    LateUnknownRequest,
    /// The agent's `$/cancel_request` for a pending approval closes the card with its first
    /// allow option instead of `cancelled`: a withdrawn request is answered with an approval of
    /// a tool call the agent gave up (claude-agent-acp 0.85.1 withdraws the request on Stop,
    /// recorded; https://agentclientprotocol.com/protocol/v1/cancellation).
    SelectWithdrawn,
    /// A turn whose agent process died before answering the prompt is shown completed, as if
    /// the agent had ended it: the lost connection is taken for the end (acp-cli 0.3.1 `exec`
    /// prints `done` first whenever its bridge goes away, and exits 0 on the race that an agent
    /// dying before `initialize` answers mostly loses).
    AgentDeathAsCompleted,
    /// A session still opening when its agent process dies is forgotten without a word: the user
    /// is never told that it could not be opened (acp-cli 0.3.1 `exec` drops its bridge's error
    /// when the agent dies before answering `initialize`, prints `done` and mostly exits 0).
    SilentFailedStart,
    /// Whatever `protocolVersion` the agent answers to `initialize`, the client goes on and opens
    /// the session in it (acpx 0.19.1 logs "initialized protocol version 2" and goes on).
    AnyProtocolVersion,
    // ---- modes, config options and authentication ----
    /// `session/set_mode` for a mode the agent never offered (no check against
    /// `availableModes`; langchain-ai/deepagents#6138 shows what the agent then does).
    UnofferedMode,
    /// The mode selector moves when the user picks, before the agent answers, and stays there
    /// when the agent refuses (openclaw/openclaw#41185, from the user's side).
    OptimisticModeSwitch,
    /// A successful `session/set_mode` answer is not taken as the switch: the selector waits
    /// for a `current_mode_update` (agent-of-empires/agent-of-empires#1028).
    ModeOnlyFromUpdate,
    /// `current_mode_update` is ignored: the selector keeps the old mode after the agent changed
    /// it (Corsinvest/cv4vs-agents#174, plan approval).
    IgnoreModeUpdate,
    /// An `auth_required` `session/new` is sent again without `authenticate`
    /// (omnigent-ai/omnigent#7282).
    RetryWithoutAuthenticate,
    /// `authenticate` names a method id from the client's own settings, not one the agent
    /// advertised (getpaseo/paseo#4775's configured `authMethod`; NousResearch/hermes-agent#9438
    /// is why agents refuse such ids).
    AuthenticateUnadvertised,
    // ---- the plan ----
    /// A plan update's entries are appended to the plan shown instead of replacing it
    /// (LodyAI/Lody#264, review; hardbeat920/monocode#10).
    AppendPlan,
    // ---- tool call status ----
    /// A Stop marks every tool call of the turn `cancelled`, finished ones too
    /// (zed-industries/zed#30021).
    CancelMarksFinished,
    // ---- tool call title ----
    /// A row keeps the first title its tool call had: a later title in an update is dropped
    /// (zed-industries/zed#49456).
    KeepFirstTitle,
    // ---- file reads ----
    /// `fs.readTextFile` is advertised, but every `fs/read_text_file` is answered `-32601`
    /// (formulahendry/acp-ui#14).
    RefuseReads,
    // ---- valid requests ----
    /// A permission request whose `toolCall.rawInput` is `null` is refused `-32602` and never
    /// shown: the client's own types are stricter than ACP's (tiann/hapi#1781).
    RequireRawInput,
    // ---- session opening ----
    /// After the agent chose a protocol version the client does not speak, the client closes
    /// the connection and says so, but the session's tab stays open under a local id (the shape
    /// of different-ai-studio/teamclu#548: a chat kept bound to an ACP session no agent has).
    LocalSessionAfterFailedStart,
    // ---- requests left pending ----
    /// The client dies while a `terminal/wait_for_exit` is pending: the agent's terminal request
    /// is lost with it (generalaction/emdash#3196: an unhandled error of a terminal's process
    /// killed the client's whole ACP worker, every conversation orphaned).
    DieOnWaitForExit,
    // ---- terminal environment ----
    /// `terminal/create`'s `env` entries are dropped: the command runs in the client's own
    /// environment (xuzhougeng/wispterm#549).
    DropEnv,
    // ---- a dead agent ----
    /// The agent's death goes unnoticed: the client neither reports it nor exits
    /// (clawbench-dev/clawbench#280: after the agent process was killed, the pending
    /// `session/prompt` waited for ever and the session looked stuck).
    HangOnAgentDeath,
}

impl Mutant {
    pub const ALL: [Mutant; 63] = [
        Mutant::AlwaysCommand,
        Mutant::KindFromRequest,
        Mutant::UnofferedOption,
        Mutant::CollapseByKind,
        Mutant::DuplicateLabels,
        Mutant::CancelAsReject,
        Mutant::CancelAsFailed,
        Mutant::NoCancelledAnswer,
        Mutant::OverwriteSameToolCall,
        Mutant::FlipOnApproval,
        Mutant::GlobalApprovalHandler,
        Mutant::RelativeCwd,
        Mutant::McpServerWithoutEnv,
        Mutant::EditorSaveHooks,
        Mutant::SessionBeforeInitialized,
        Mutant::ApproveByRequestKind,
        Mutant::ApproveByTitleGuess,
        Mutant::WorkspacePrefixCheck,
        Mutant::RememberedAnyKind,
        Mutant::TurnNeverEnded,
        Mutant::NoRowForRequestOnly,
        Mutant::ToolCallsKeyedById,
        Mutant::CardDroppedOnProgress,
        Mutant::RequestAfterStopToUser,
        Mutant::ProcessCwdAsSessionCwd,
        Mutant::ReadLineZeroBased,
        Mutant::ServeAnyPath,
        Mutant::WriteAnyPath,
        Mutant::RegisterAfterLoad,
        Mutant::ReplayShownTwice,
        Mutant::ReplayUserAsAgent,
        Mutant::UngatedResume,
        Mutant::ReleaseKeepsRunning,
        Mutant::KillDirectChildOnly,
        Mutant::TruncateKeepsHead,
        Mutant::OutputSinceLastCall,
        Mutant::TruncateMidCharacter,
        Mutant::SignalAsExitZero,
        Mutant::CrashOnUnknownUpdate,
        Mutant::StopAfterUnknownUpdate,
        Mutant::IgnoreExtensionRequest,
        Mutant::CancelAsRequest,
        Mutant::IgnoreCancelRequest,
        Mutant::LateUnknownRequest,
        Mutant::SelectWithdrawn,
        Mutant::AgentDeathAsCompleted,
        Mutant::SilentFailedStart,
        Mutant::AnyProtocolVersion,
        // modes, config options and authentication
        Mutant::UnofferedMode,
        Mutant::OptimisticModeSwitch,
        Mutant::ModeOnlyFromUpdate,
        Mutant::IgnoreModeUpdate,
        Mutant::RetryWithoutAuthenticate,
        Mutant::AuthenticateUnadvertised,
        // the plan
        Mutant::AppendPlan,
        // tool call status
        Mutant::CancelMarksFinished,
        // tool call title
        Mutant::KeepFirstTitle,
        // file reads
        Mutant::RefuseReads,
        // valid requests
        Mutant::RequireRawInput,
        // session opening
        Mutant::LocalSessionAfterFailedStart,
        // requests left pending
        Mutant::DieOnWaitForExit,
        // terminal environment
        Mutant::DropEnv,
        // a dead agent
        Mutant::HangOnAgentDeath,
    ];

    /// The `--mutant` name.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::AlwaysCommand => "always-command",
            Mutant::KindFromRequest => "kind-from-request",
            Mutant::UnofferedOption => "unoffered-option",
            Mutant::CollapseByKind => "collapse-by-kind",
            Mutant::DuplicateLabels => "duplicate-labels",
            Mutant::CancelAsReject => "cancel-as-reject",
            Mutant::CancelAsFailed => "cancel-as-failed",
            Mutant::NoCancelledAnswer => "no-cancelled-answer",
            Mutant::OverwriteSameToolCall => "overwrite-same-tool-call",
            Mutant::FlipOnApproval => "flip-on-approval",
            Mutant::GlobalApprovalHandler => "global-approval-handler",
            Mutant::RelativeCwd => "relative-cwd",
            Mutant::McpServerWithoutEnv => "mcp-server-without-env",
            Mutant::EditorSaveHooks => "editor-save-hooks",
            Mutant::SessionBeforeInitialized => "session-before-initialized",
            Mutant::ApproveByRequestKind => "approve-by-request-kind",
            Mutant::ApproveByTitleGuess => "approve-by-title-guess",
            Mutant::WorkspacePrefixCheck => "workspace-prefix-check",
            Mutant::RememberedAnyKind => "remembered-any-kind",
            Mutant::TurnNeverEnded => "turn-never-ended",
            Mutant::NoRowForRequestOnly => "no-row-for-request-only",
            Mutant::ToolCallsKeyedById => "tool-calls-keyed-by-id",
            Mutant::CardDroppedOnProgress => "card-dropped-on-progress",
            Mutant::RequestAfterStopToUser => "request-after-stop-to-user",
            Mutant::ProcessCwdAsSessionCwd => "process-cwd-as-session-cwd",
            Mutant::ReadLineZeroBased => "read-line-zero-based",
            Mutant::ServeAnyPath => "serve-any-path",
            Mutant::WriteAnyPath => "write-any-path",
            Mutant::RegisterAfterLoad => "register-after-load",
            Mutant::ReplayShownTwice => "replay-shown-twice",
            Mutant::ReplayUserAsAgent => "replay-user-as-agent",
            Mutant::UngatedResume => "ungated-resume",
            Mutant::ReleaseKeepsRunning => "release-keeps-running",
            Mutant::KillDirectChildOnly => "kill-direct-child-only",
            Mutant::TruncateKeepsHead => "truncate-keeps-head",
            Mutant::OutputSinceLastCall => "output-since-last-call",
            Mutant::TruncateMidCharacter => "truncate-mid-character",
            Mutant::SignalAsExitZero => "signal-as-exit-zero",
            Mutant::CrashOnUnknownUpdate => "crash-on-unknown-update",
            Mutant::StopAfterUnknownUpdate => "stop-after-unknown-update",
            Mutant::IgnoreExtensionRequest => "ignore-extension-request",
            Mutant::CancelAsRequest => "cancel-as-request",
            Mutant::IgnoreCancelRequest => "ignore-cancel-request",
            Mutant::LateUnknownRequest => "late-unknown-request",
            Mutant::SelectWithdrawn => "select-withdrawn",
            Mutant::AgentDeathAsCompleted => "agent-death-as-completed",
            Mutant::SilentFailedStart => "silent-failed-start",
            Mutant::AnyProtocolVersion => "any-protocol-version",
            // modes, config options and authentication
            Mutant::UnofferedMode => "unoffered-mode",
            Mutant::OptimisticModeSwitch => "optimistic-mode-switch",
            Mutant::ModeOnlyFromUpdate => "mode-only-from-update",
            Mutant::IgnoreModeUpdate => "ignore-mode-update",
            Mutant::RetryWithoutAuthenticate => "retry-without-authenticate",
            Mutant::AuthenticateUnadvertised => "authenticate-unadvertised",
            // the plan
            Mutant::AppendPlan => "append-plan",
            // tool call status
            Mutant::CancelMarksFinished => "cancel-marks-finished",
            // tool call title
            Mutant::KeepFirstTitle => "keep-first-title",
            // file reads
            Mutant::RefuseReads => "refuse-reads",
            // valid requests
            Mutant::RequireRawInput => "require-raw-input",
            // session opening
            Mutant::LocalSessionAfterFailedStart => "local-session-after-failed-start",
            // requests left pending
            Mutant::DieOnWaitForExit => "die-on-wait-for-exit",
            // terminal environment
            Mutant::DropEnv => "drop-env",
            // a dead agent
            Mutant::HangOnAgentDeath => "hang-on-agent-death",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutant `{s}`; known mutants: {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mutant::ALL {
            assert_eq!(m.name().parse::<Mutant>(), Ok(m));
            assert!(!m.checks().is_empty(), "{m}");
        }
        assert!("nope".parse::<Mutant>().is_err());
    }
}
