//! Field-bug mutants: each reproduces one real client bug so that a harness check can prove it
//! fails. The reference behaviour is `None` (no `--mutant`).
//!
//! Adding a mutant = one variant here (with its name, the bug it reproduces and the checks it
//! must fail) + one decision point in the module whose behaviour it changes. Every decision point
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
//! | `register-after-load` | `client/sessions.rs`, `send_reopen` (when a loaded session gets its id) |
//! | `replay-shown-twice` | `client/sessions.rs`, `on_reopened` (the history shown) |
//! | `replay-user-as-agent` | `history.rs`, `apply` (whose message a replayed user chunk is) |
//! | `ungated-resume` | `client/sessions.rs`, `send_reopen` (the capability check) |
//! | `release-keeps-running` | `terminal.rs`, `serve` (what `terminal/release` does) |
//! | `kill-direct-child-only` | `terminal.rs`, `Terminal::kill` (who gets the signal) |
//! | `truncate-keeps-head` | `terminal.rs`, `Output::push` (which end the limit keeps) |
//! | `truncate-mid-character` | `terminal.rs`, `Output::text` (where the kept text starts) |
//! | `signal-as-exit-zero` | `terminal.rs`, `ExitStatus::from_std` (the exit status reported) |
//! | `crash-on-unknown-update` | `client/agent.rs`, `on_session_update` (an unknown variant) |
//! | `stop-after-unknown-update` | `client/agent.rs`, `on_session_update` (updates after one) |
//! | `ignore-extension-request` | `client/agent.rs`, `on_agent` (a `_` request) |
//! | `cancel-as-request` | `client.rs`, `cancel` (how `session/cancel` is sent) |
//! | `ignore-cancel-request` | `client/agent.rs`, `on_agent` (the agent's `$/cancel_request`) |
//! | `agent-death-as-completed` | `client/agent.rs`, `on_agent_closed` (the state of a turn the agent died in) |
//! | `silent-failed-start` | `client.rs`, `fail_sessions_opening` (what the user hears of a session the dead agent never opened) |
//! | `any-protocol-version` | `client/agent.rs`, `on_response` (which protocol versions it goes on with) |
//! | `unoffered-mode` | `client/modes.rs`, `set_mode` (which modes may be sent) |
//! | `optimistic-mode-switch` | `client/modes.rs`, `set_mode` (when the selector moves) |
//! | `mode-only-from-update` | `client/modes.rs`, `on_set_mode_answer` (a success answer) |
//! | `ignore-mode-update` | `client/modes.rs`, `on_settings_update` (`current_mode_update`) |
//! | `retry-without-authenticate` | `client/auth.rs`, `on_auth_required` (what follows `auth_required`) |
//! | `append-plan` | `client/plan.rs`, `on_plan_update` (what a plan update does to the plan shown) |
//! | `cancel-marks-finished` | `timeline.rs`, `cancel_unfinished` (which rows a Stop marks cancelled) |

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
    // ---- the plan ----
    /// A plan update's entries are appended to the plan shown instead of replacing it
    /// (LodyAI/Lody#264, review; hardbeat920/monocode#10).
    AppendPlan,
    // ---- tool call status ----
    /// A Stop marks every tool call of the turn `cancelled`, finished ones too
    /// (zed-industries/zed#30021).
    CancelMarksFinished,
}

impl Mutant {
    pub const ALL: [Mutant; 51] = [
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
        Mutant::RegisterAfterLoad,
        Mutant::ReplayShownTwice,
        Mutant::ReplayUserAsAgent,
        Mutant::UngatedResume,
        Mutant::ReleaseKeepsRunning,
        Mutant::KillDirectChildOnly,
        Mutant::TruncateKeepsHead,
        Mutant::TruncateMidCharacter,
        Mutant::SignalAsExitZero,
        Mutant::CrashOnUnknownUpdate,
        Mutant::StopAfterUnknownUpdate,
        Mutant::IgnoreExtensionRequest,
        Mutant::CancelAsRequest,
        Mutant::IgnoreCancelRequest,
        Mutant::AgentDeathAsCompleted,
        Mutant::SilentFailedStart,
        Mutant::AnyProtocolVersion,
        // modes, config options and authentication
        Mutant::UnofferedMode,
        Mutant::OptimisticModeSwitch,
        Mutant::ModeOnlyFromUpdate,
        Mutant::IgnoreModeUpdate,
        Mutant::RetryWithoutAuthenticate,
        // the plan
        Mutant::AppendPlan,
        // tool call status
        Mutant::CancelMarksFinished,
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
            Mutant::RegisterAfterLoad => "register-after-load",
            Mutant::ReplayShownTwice => "replay-shown-twice",
            Mutant::ReplayUserAsAgent => "replay-user-as-agent",
            Mutant::UngatedResume => "ungated-resume",
            Mutant::ReleaseKeepsRunning => "release-keeps-running",
            Mutant::KillDirectChildOnly => "kill-direct-child-only",
            Mutant::TruncateKeepsHead => "truncate-keeps-head",
            Mutant::TruncateMidCharacter => "truncate-mid-character",
            Mutant::SignalAsExitZero => "signal-as-exit-zero",
            Mutant::CrashOnUnknownUpdate => "crash-on-unknown-update",
            Mutant::StopAfterUnknownUpdate => "stop-after-unknown-update",
            Mutant::IgnoreExtensionRequest => "ignore-extension-request",
            Mutant::CancelAsRequest => "cancel-as-request",
            Mutant::IgnoreCancelRequest => "ignore-cancel-request",
            Mutant::AgentDeathAsCompleted => "agent-death-as-completed",
            Mutant::SilentFailedStart => "silent-failed-start",
            Mutant::AnyProtocolVersion => "any-protocol-version",
            // modes, config options and authentication
            Mutant::UnofferedMode => "unoffered-mode",
            Mutant::OptimisticModeSwitch => "optimistic-mode-switch",
            Mutant::ModeOnlyFromUpdate => "mode-only-from-update",
            Mutant::IgnoreModeUpdate => "ignore-mode-update",
            Mutant::RetryWithoutAuthenticate => "retry-without-authenticate",
            // the plan
            Mutant::AppendPlan => "append-plan",
            // tool call status
            Mutant::CancelMarksFinished => "cancel-marks-finished",
        }
    }

    /// The real-world bug this mutant reproduces.
    pub fn bug(self) -> &'static str {
        match self {
            Mutant::AlwaysCommand => {
                "get-bb/bb#1719 (before #1803): every permission request is shown as a command \
                 approval, whose command is rawInput.command, else the title, else the kind"
            }
            Mutant::KindFromRequest => {
                "acpx, t3code, CodeCompanion: the approval's subject comes from the request's own \
                 toolCall.kind (`other` or absent → generic), never merged with the earlier \
                 tool_call"
            }
            Mutant::UnofferedOption => {
                "ZERO #915: the answer is built from a fixed default list, so it sends optionId \
                 \"allow\" or \"reject\" whatever the agent offered"
            }
            Mutant::CollapseByKind => {
                "bb, t3code, CodeCompanion: one button per decision (first allow_once, first \
                 allow_always, first reject_once); reject_always and a second option of a kind \
                 are unreachable"
            }
            Mutant::DuplicateLabels => {
                "ZERO #915, CodeCompanion: buttons are labelled by kind only (\"Allow\" / \
                 \"Reject\"), so two options look the same"
            }
            Mutant::CancelAsReject => {
                "acpx Ctrl-C at its y/N prompt: a user cancel answers pending approvals with the \
                 first offered reject option and never sends session/cancel"
            }
            Mutant::CancelAsFailed => {
                "ZERO #915: a turn the agent ends with stopReason cancelled is shown as failed \
                 (\"internal error\")"
            }
            Mutant::NoCancelledAnswer => {
                "Toad, Python SDK gemini example: Stop sends session/cancel but pending approvals \
                 are never answered cancelled"
            }
            Mutant::OverwriteSameToolCall => {
                "jupyter-ai-acp-client: pending approvals are keyed by (session, toolCallId), so a \
                 second request for the same tool call replaces the first, which is never \
                 answered, even on cancel"
            }
            Mutant::FlipOnApproval => {
                "get-bb/bb#1719 (timeline): when the approval arrives the file-change row becomes \
                 a command row, and turns back when the agent reports it completed/failed"
            }
            Mutant::GlobalApprovalHandler => {
                "Nano-Collective/nanocoder#1080: one global approval handler, installed by the \
                 last prompt, so approvals of every session are shown in that session and Stop \
                 there cancels them all"
            }
            Mutant::RelativeCwd => {
                "openkaiden/kaiden#2635: session/new is sent with cwd \".\" (the agent is assumed \
                 to run in the project directory)"
            }
            Mutant::McpServerWithoutEnv => {
                "can1357/oh-my-pi#7722: session/new lists a stdio MCP server in the \
                 {command, args} shape of a desktop config, without the required env array"
            }
            Mutant::EditorSaveHooks => {
                "fs/write_text_file goes through the editor buffer's save hooks (Zed \
                 ensure_final_newline_on_save / remove_trailing_whitespace_on_save, on by \
                 default): the file on disk differs from the content the agent sent"
            }
            Mutant::SessionBeforeInitialized => {
                "session/new is sent right behind initialize, before the agent answered it (ACP \
                 #23: initialization must complete first; cf. openonion/connectonion#958)"
            }
            Mutant::ApproveByRequestKind => {
                "felinics/Memoh#972: a request whose own toolCall.kind the policy approves \
                 (read/search/fetch/think/switch_mode there) is approved at once, with no \
                 evaluation of what was announced or where it reaches (runs with --policy \
                 read-only)"
            }
            Mutant::ApproveByTitleGuess => {
                "acpx approve-reads (src/permissions.ts inferToolKind): a kindless request's kind \
                 is guessed from its title's first word, so `cat ~/.ssh/id_rsa | curl …` is \
                 approved as a read (runs with --policy read-only)"
            }
            Mutant::WorkspacePrefixCheck => {
                "CVE-2025-53110 (modelcontextprotocol/servers filesystem): \"inside the \
                 workspace\" is a string-prefix test without normalisation, so `<ws>/../x` and \
                 `<ws>-evil/x` pass (runs with --policy workspace-write)"
            }
            Mutant::RememberedAnyKind => {
                "docker/docker-agent#4376 (before the fix): \"allow and remember\" turned on \
                 auto-approval for every tool of the session, not the one the user allowed"
            }
            Mutant::TurnNeverEnded => {
                "pingdotgg/t3code#7484 (a spinner that never stops), \
                 agentclientprotocol/claude-agent-acp#694 (JetBrains stuck in running): the \
                 agent's stopReason arrives but the turn is never shown ended"
            }
            Mutant::NoRowForRequestOnly => {
                "rows built from tool_call alone (the shape google-gemini/gemini-cli#21783 \
                 complains about): a tool call announced first by its permission request or by \
                 an update, as qwen-code and codex-acp 0.13 do, gets an approval card but no row"
            }
            Mutant::ToolCallsKeyedById => {
                "pingdotgg/t3code#304: tool calls keyed by toolCallId alone, so another \
                 session's updates for the same id change (or reset) this session's row"
            }
            Mutant::CardDroppedOnProgress => {
                "xenodium/agent-shell#369: the approval card disappears when the agent reports \
                 the tool call in_progress (or retitles it) before the grant, and the request is \
                 never answered"
            }
            Mutant::RequestAfterStopToUser => {
                "a permission request arriving after Stop, before the agent's cancelled stop, \
                 is shown to the user instead of answered cancelled by the client (ACP \
                 tool-calls: in a cancelled turn the client MUST answer cancelled)"
            }
            Mutant::ProcessCwdAsSessionCwd => {
                "formulahendry/vscode-acp#14 (before the fix): session/new carries the client \
                 process's own cwd, not the folder the user opened"
            }
            Mutant::ReadLineZeroBased => {
                "QwenLM/qwen-code vscode-ide-companion acpFileHandler.ts (before 13e242dd, \
                 \"ACP spec: line is 1-based\"): fs/read_text_file slices from index `line`, so \
                 line 2 returns the third line onwards"
            }
            Mutant::ServeAnyPath => {
                "QwenLM/qwen-code vscode-ide-companion acpFileHandler.ts@13e242dd: \
                 fs/read_text_file and fs/write_text_file serve params.path as given, so \
                 `<outside>/../../../etc/passwd` or a symlink out of the workspace is read \
                 without asking the user"
            }
            Mutant::RegisterAfterLoad => {
                "zed-industries/zed#54431 (before the fix): the session is inserted only after \
                 session/load resolves, so the session/update replay the agent sends before its \
                 answer finds no session and is dropped"
            }
            Mutant::ReplayShownTwice => {
                "mrmans0n/alas#406 (before the fix): reopening a session shows the transcript \
                 the client kept and then appends the agent's session/load replay of it, so \
                 the conversation appears twice"
            }
            Mutant::ReplayUserAsAgent => {
                "raphaeltm/simple-agent-manager#79 (before the fix): a replayed \
                 user_message_chunk is not rendered as the user's message (it fell through to a \
                 raw fallback); here it shows in the agent's voice"
            }
            Mutant::UngatedResume => {
                "capability-gated calls made whatever the peer advertised (the shape of \
                 modelcontextprotocol/python-sdk#2689): session/resume is sent to an agent \
                 without sessionCapabilities.resume"
            }
            Mutant::ReleaseKeepsRunning => {
                "terminal/release forgets the terminal id but does not kill the command (the \
                 terminal-manager bug flagged in MyRobotLab/myrobotlab#1397's review: removing a \
                 terminal from the map does not stop it); ACP: release kills a running command"
            }
            Mutant::KillDirectChildOnly => {
                "nexu-io/open-design#7431, clawbench-dev/clawbench#344: only the direct child is \
                 signalled, so the processes a shell line started survive kill and release"
            }
            Mutant::TruncateKeepsHead => {
                "can1357/oh-my-pi#7078 (review): terminal output is head-truncated, so \
                 outputByteLimit keeps the oldest bytes and drops the newest"
            }
            Mutant::TruncateMidCharacter => {
                "mrmans0n/alas#352 (review of its ACP terminal): the kept byte suffix starts \
                 inside a multi-byte character, which is decoded as U+FFFD"
            }
            Mutant::SignalAsExitZero => {
                "earendil-works/pi#8992, openclaw/openclaw#148027: a command killed by a signal \
                 is reported with exit code 0 (`code ?? 0`) and no signal"
            }
            Mutant::CrashOnUnknownUpdate => {
                "RyderFreeman4Logos/cli-sub-agent#2585: a session/update variant the client's typed \
                 parser does not know (usage_update there) fails JSON-RPC decoding and the \
                 client dies"
            }
            Mutant::StopAfterUnknownUpdate => {
                "xenodium/agent-shell#455: after a session/update it does not understand the \
                 client processes no further update, so the rest of the turn is never shown"
            }
            Mutant::IgnoreExtensionRequest => {
                "carlos-algms/agentic.nvim#314 (before the fix): an unrecognized agent request \
                 (a _-prefixed extension) is logged and never answered; the agent waits for its \
                 id (QwenLM/qwen-code#4925)"
            }
            Mutant::CancelAsRequest => {
                "xenodium/acp.el#1, nexu-io/open-design#7959: session/cancel is sent as a request \
                 with an id; an agent that handles it as the notification it is answers -32601 \
                 or nothing, and the turn is not cancelled"
            }
            Mutant::IgnoreCancelRequest => {
                "mrmans0n/alas#1380 (review): the agent's $/cancel_request for a pending \
                 permission request is lost, so the card stays and the request is never \
                 answered (R52: a result or -32800)"
            }
            Mutant::AgentDeathAsCompleted => {
                "acp-cli 0.3.1 (motosan-dev/acp-cli, src/cli/prompt.rs run_exec): the agent's \
                 lost connection is taken for the end of the turn (`exec` prints done when its \
                 bridge goes away, and exits 0 when an agent that died before answering \
                 initialize leaves no error behind): a turn whose agent died is shown completed"
            }
            Mutant::SilentFailedStart => {
                "acp-cli 0.3.1 (motosan-dev/acp-cli, src/cli/prompt.rs run_exec): when the agent \
                 dies before it answers initialize, the bridge's error is dropped (`let _ = \
                 bridge.shutdown()`), and the user is told nothing of the session that never \
                 opened"
            }
            Mutant::AnyProtocolVersion => {
                "acpx 0.19.1 (openclaw/acpx, initializeAgentConnection): the protocol version the \
                 agent chose in its initialize answer is logged, never compared with the one the \
                 client speaks, and the session is opened in it"
            }
            // modes, config options and authentication
            Mutant::UnofferedMode => {
                "session/set_mode with a mode id the agent never offered (ACP session-modes: \
                 modeId must be one of availableModes); langchain-ai/deepagents#6138 is what an \
                 agent that does not check then does with it"
            }
            Mutant::OptimisticModeSwitch => {
                "openclaw/openclaw#41185, as the user saw it: the IDE showed the mode switched \
                 while the agent had refused it and kept working in the old mode"
            }
            Mutant::ModeOnlyFromUpdate => {
                "agent-of-empires/agent-of-empires#1028: the mode picker waited for a \
                 current_mode_update, which claude-agent-acp does not send after a successful \
                 session/set_mode, so picking a mode did nothing"
            }
            Mutant::IgnoreModeUpdate => {
                "Corsinvest/cv4vs-agents#174: after the user approved a plan the selector kept \
                 reading Plan while files were being written (the agent's own mode change was \
                 thrown away)"
            }
            Mutant::RetryWithoutAuthenticate => {
                "omnigent-ai/omnigent#7282: the ACP executor never sent authenticate, and opened \
                 the session again after the agent had answered auth_required"
            }
            Mutant::AppendPlan => {
                "LodyAI/Lody#264 (review: a revised plan was added next to the obsolete one, which \
                 stayed visible) and hardbeat920/monocode#10 (every plan snapshot appended as a \
                 new plan card, several cards for one plan): each plan update's entries are \
                 appended to the plan shown, though every update is the complete plan"
            }
            Mutant::CancelMarksFinished => {
                "zed-industries/zed#30021 (\"tool cancelled\" status overapplied to failed tool \
                 calls: past failed tool calls displayed as cancelled by the user): a Stop marks \
                 every tool call of the turn cancelled, the completed and failed ones too, though \
                 only the unfinished ones are being cancelled"
            }
        }
    }

    /// The harness checks this mutant must fail across the scenario corpus. The self-test
    /// (`harness/tests/self_test.rs`) asserts the exact set.
    pub fn checks(self) -> &'static [&'static str] {
        match self {
            Mutant::AlwaysCommand | Mutant::KindFromRequest => &["subject-kind"],
            Mutant::UnofferedOption | Mutant::CollapseByKind | Mutant::DuplicateLabels => {
                &["offered-options"]
            }
            Mutant::CancelAsReject => &["cancel-stop"],
            Mutant::CancelAsFailed => &["cancel-stop", "turn-end"],
            Mutant::NoCancelledAnswer => &["cancel-stop", "jsonrpc"],
            Mutant::OverwriteSameToolCall => &["cancel-stop", "jsonrpc", "offered-options"],
            Mutant::FlipOnApproval => &["stable-item-type", "subject-kind", "tool-call-row"],
            Mutant::GlobalApprovalHandler => {
                &["offered-options", "session-isolation", "subject-kind"]
            }
            Mutant::RelativeCwd => &["session-cwd"],
            Mutant::McpServerWithoutEnv => &["schema"],
            Mutant::EditorSaveHooks => &["fs"],
            Mutant::SessionBeforeInitialized => &["initialize"],
            Mutant::ApproveByRequestKind
            | Mutant::ApproveByTitleGuess
            | Mutant::WorkspacePrefixCheck
            | Mutant::RememberedAnyKind => &["auto-approval"],
            Mutant::TurnNeverEnded => &["cancel-stop", "turn-end"],
            Mutant::NoRowForRequestOnly => &["tool-call-row"],
            Mutant::ToolCallsKeyedById => &["session-isolation", "tool-call-row"],
            Mutant::CardDroppedOnProgress => &["offered-options"],
            Mutant::RequestAfterStopToUser => &["cancel-stop", "jsonrpc"],
            Mutant::ProcessCwdAsSessionCwd => &["session-cwd"],
            Mutant::ReadLineZeroBased => &["fs"],
            Mutant::ServeAnyPath => &["auto-approval"],
            Mutant::RegisterAfterLoad => &["session-load", "tool-call-row"],
            Mutant::ReplayShownTwice => &["session-load"],
            Mutant::ReplayUserAsAgent => &["session-load"],
            Mutant::UngatedResume => &["initialize"],
            Mutant::ReleaseKeepsRunning
            | Mutant::KillDirectChildOnly
            | Mutant::TruncateKeepsHead
            | Mutant::TruncateMidCharacter
            | Mutant::SignalAsExitZero => &["terminal"],
            Mutant::CrashOnUnknownUpdate => &["tool-call-row", "turn-end", "unknown-messages"],
            Mutant::StopAfterUnknownUpdate => &["tool-call-row", "unknown-messages"],
            Mutant::IgnoreExtensionRequest => &["jsonrpc", "unknown-messages"],
            Mutant::CancelAsRequest => &["cancel-stop", "jsonrpc", "schema"],
            Mutant::IgnoreCancelRequest => &["jsonrpc"],
            Mutant::AgentDeathAsCompleted => &["turn-end"],
            Mutant::SilentFailedStart | Mutant::AnyProtocolVersion => &["session-open"],
            // modes, config options and authentication
            Mutant::UnofferedMode
            | Mutant::OptimisticModeSwitch
            | Mutant::ModeOnlyFromUpdate
            | Mutant::IgnoreModeUpdate => &["session-mode"],
            Mutant::RetryWithoutAuthenticate => &["authenticate"],
            // the plan
            Mutant::AppendPlan => &["plan"],
            // tool call status
            Mutant::CancelMarksFinished => &["tool-call-status"],
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
