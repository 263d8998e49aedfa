//! The real-world bug each mutant reproduces (public tracker links), for `--help` and reports.

use super::Mutant;

impl Mutant {
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
            Mutant::WriteAnyPath => {
                "flazouh/acepe#50 (acp_write_text_file neither canonicalises nor scope-checks the \
                 path, while acp_read_text_file does): reads stay inside the workspace, but a \
                 write is served wherever it leads, with nobody asked"
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
            Mutant::OutputSinceLastCall => {
                "no public report yet (issue 42 item 12: a terminal whose output buffer is \
                 drained by every read): terminal/output returns only what the command printed \
                 since the previous terminal/output, not all the output kept so far"
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
            Mutant::LateUnknownRequest => {
                "QwenLM/qwen-code#4925 (an agent hung on a client that left its request \
                 unanswered): qwen-code 0.21.10 sends the request craft/drainMidTurnQueue after \
                 every tool and waits for its answer; a client that answers methods it does not \
                 know only after a delay stalls the turn"
            }
            Mutant::SelectWithdrawn => {
                "https://agentclientprotocol.com/protocol/v1/cancellation: a request withdrawn \
                 with $/cancel_request is answered cancelled or -32800; a client that closes the \
                 withdrawn card with its default (first allow) button approves a tool call the \
                 agent gave up (claude-agent-acp 0.85.1 withdraws the pending request on Stop)"
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
            Mutant::AuthenticateUnadvertised => {
                "getpaseo/paseo#4775 (the authenticate method id is taken from the client's own \
                 settings, `params.authMethod`): after auth_required the client authenticates \
                 with a method id the agent never advertised, which a real agent refuses \
                 (NousResearch/hermes-agent#9438)"
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
            Mutant::KeepFirstTitle => {
                "zed-industries/zed#49456 (ACP terminal titles not always updated to their latest \
                 value, so the command was not visible when asked for permission): a row keeps \
                 the first title its tool call had, and a later title in an update is dropped"
            }
            Mutant::RefuseReads => {
                "formulahendry/acp-ui#14 (fs/read_text_file and fs/write_text_file answered \
                 -32601 Method not found although clientCapabilities.fs advertised them): every \
                 fs/read_text_file is refused with -32601, files of the workspace included"
            }
            Mutant::RequireRawInput => {
                "tiann/hapi#1781 (a permission request without tool input made the client's own \
                 stricter schema reject it, and the pending approval was lost): a \
                 session/request_permission whose toolCall.rawInput is null, as codex-acp 1.6 \
                 sends it, is answered -32602 Invalid params and never shown"
            }
            Mutant::LocalSessionAfterFailedStart => {
                "the shape of different-ai-studio/teamclu#548 (a chat kept bound to an ACP \
                 session that no agent has, and messages routed to it): after the agent chose a \
                 protocol version the client does not speak, the client closes the connection and \
                 reports the error, but shows the session open under a local id"
            }
            Mutant::DieOnWaitForExit => {
                "generalaction/emdash#3196 (an unhandled error of a terminal's process killed \
                 the client's whole ACP worker, every conversation orphaned): the client process \
                 dies while the agent's terminal/wait_for_exit is pending, so the run ends as a \
                 crash and that request is never answered"
            }
            Mutant::DropEnv => {
                "xuzhougeng/wispterm#549 (terminal/create's env ignored: claude-agent-acp's \
                 CLAUDECODE=1 never reached the command): the agent's env entries are dropped and \
                 the command runs in the client's own environment"
            }
            Mutant::HangOnAgentDeath => {
                "clawbench-dev/clawbench#280 (after the agent process was killed, the client's \
                 pending session/prompt waited for ever and the session looked stuck): the \
                 agent's death goes unnoticed, and the client neither reports it nor exits"
            }
        }
    }
}
