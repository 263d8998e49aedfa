//! The mutant → checks table: which harness checks each mutant must fail across the corpus.

use super::Mutant;

impl Mutant {
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
            Mutant::NoCancelledAnswer => &["cancel-stop", "jsonrpc", "offered-options"],
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
            Mutant::TurnNeverEnded => &["agent-death", "cancel-stop", "turn-end"],
            Mutant::NoRowForRequestOnly => &["tool-call-row"],
            Mutant::ToolCallsKeyedById => &["session-isolation", "tool-call-row"],
            Mutant::CardDroppedOnProgress => &["offered-options"],
            Mutant::RequestAfterStopToUser => &["cancel-stop", "jsonrpc"],
            Mutant::ProcessCwdAsSessionCwd => &["session-cwd"],
            Mutant::ReadLineZeroBased => &["fs"],
            Mutant::ServeAnyPath | Mutant::WriteAnyPath => &["auto-approval"],
            Mutant::RegisterAfterLoad => &["session-load", "tool-call-row"],
            Mutant::ReplayShownTwice => &["session-load"],
            Mutant::ReplayUserAsAgent => &["session-load"],
            Mutant::UngatedResume => &["initialize"],
            // The released command runs on, so the agent's pending terminal/wait_for_exit is
            // never answered through the step that waits for it.
            Mutant::ReleaseKeepsRunning => &["jsonrpc", "terminal"],
            Mutant::KillDirectChildOnly
            | Mutant::TruncateKeepsHead
            | Mutant::OutputSinceLastCall
            | Mutant::TruncateMidCharacter
            | Mutant::SignalAsExitZero => &["terminal"],
            Mutant::CrashOnUnknownUpdate => &["tool-call-row", "turn-end", "unknown-messages"],
            Mutant::StopAfterUnknownUpdate => &["tool-call-row", "unknown-messages"],
            Mutant::IgnoreExtensionRequest => &["jsonrpc", "unknown-messages"],
            Mutant::CancelAsRequest => &["cancel-stop", "jsonrpc", "schema"],
            Mutant::IgnoreCancelRequest => &["jsonrpc"],
            Mutant::LateUnknownRequest => &["unknown-messages"],
            Mutant::SelectWithdrawn => &["auto-approval", "jsonrpc"],
            Mutant::AgentDeathAsCompleted => &["turn-end"],
            Mutant::SilentFailedStart => &["agent-death", "session-open"],
            Mutant::AnyProtocolVersion => &["session-open"],
            // modes, config options and authentication
            Mutant::UnofferedMode
            | Mutant::OptimisticModeSwitch
            | Mutant::ModeOnlyFromUpdate
            | Mutant::IgnoreModeUpdate => &["session-mode"],
            Mutant::RetryWithoutAuthenticate | Mutant::AuthenticateUnadvertised => {
                &["authenticate"]
            }
            // the plan
            Mutant::AppendPlan => &["plan"],
            // tool call status
            Mutant::CancelMarksFinished => &["tool-call-status"],
            // tool call title
            Mutant::KeepFirstTitle => &["tool-call-title"],
            // file reads
            Mutant::RefuseReads => &["fs", "initialize"],
            // valid requests
            Mutant::RequireRawInput => &["schema", "subject-kind"],
            // session opening
            Mutant::LocalSessionAfterFailedStart => &["session-open"],
            // requests left pending
            Mutant::DieOnWaitForExit => &["jsonrpc"],
            // terminal environment
            Mutant::DropEnv => &["terminal"],
            // a dead agent
            Mutant::HangOnAgentDeath => &["agent-death", "session-open", "turn-end"],
        }
    }
}
