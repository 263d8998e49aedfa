//! The end of a full-screen (`[tui]`) client's case: reading its last screen and quitting it
//! with the profile's keys, and showing that screen with a verdict that is not a completion.

use std::time::Duration;

use acp_fake_agents::machine_time;
use acp_judge::record::RunEnd;
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;

use crate::client_spec::Tui;
use crate::observe::ObserverHandle;
use crate::pty::Master;

/// Reads the client's last screen, then types the profile's quit keys (noted first, so that
/// what the client answers on its way out is read as an answer to the quit): a full-screen
/// client stays up until it is told to quit, and quitting may clear what the person saw last.
pub(super) async fn last_screen_then_quit(
    tui: &Tui,
    terminal: &Master,
    observer: &ObserverHandle,
    rec: &Recorder,
) -> Option<String> {
    // The client may still be drawing its answer to the agent's last frame: give it a moment,
    // then wait for the screen to be still.
    machine_time::sleep(Duration::from_millis((tui.settle_ms * 3).max(500))).await;
    observer
        .wait_still(Duration::from_millis(tui.settle_ms * 4 + 1000))
        .await;
    let screen = observer.screen_text();
    rec.note(&Note::UserQuit {
        keys: tui.quit.clone(),
    });
    if let Ok(keys) = crate::keys::parse(&tui.quit, observer.app_cursor()) {
        let _ = machine_time::timeout(Duration::from_secs(1), terminal.write_all(&keys)).await;
    }
    screen
}

/// Appends a `[tui]` client's last screen to the reason of an end that is not a completion.
pub(super) fn attach_screen(end: &mut RunEnd, screen: &str) {
    let reason = match end {
        RunEnd::Incomplete { reason, .. }
        | RunEnd::Timeout { reason, .. }
        | RunEnd::Crash { reason, .. } => reason,
        _ => return,
    };
    if reason.contains("; the screen") {
        return; // the user's message already shows it
    }
    if screen.trim().is_empty() {
        reason.push_str("; the screen was blank (the client never drew)");
    } else {
        reason.push_str("; the last screen:\n");
        reason.push_str(screen);
    }
}
