//! The mailbox of one agent connection: every JSON message the client sent, in arrival order.
//!
//! Steps take the *first unconsumed* message that fits, so messages whose order the spec leaves
//! open (a `session/cancel` and a permission answer) may arrive in either order. Waiting is on a
//! [`Notify`], never by polling, and always against a deadline.

use std::sync::Mutex;

use crate::machine_time::Deadline;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::Notify;

/// One client message that parsed as a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Msg {
    /// Its transcript index.
    pub index: usize,
    pub json: Value,
    /// The `id` exactly as the client wrote it (so a reply echoes it byte for byte), if any.
    pub raw_id: Option<String>,
}

impl Msg {
    /// `None` for anything that is not a JSON object (recorded, but never matched).
    pub fn parse(index: usize, bytes: &[u8]) -> Option<Msg> {
        let json: Value = serde_json::from_slice(bytes).ok()?;
        if !json.is_object() {
            return None;
        }
        #[derive(Deserialize)]
        struct IdOnly<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
        }
        let raw_id = serde_json::from_slice::<IdOnly>(bytes)
            .ok()
            .and_then(|m| m.id.map(|r| r.get().to_owned()))
            // `"id": null` (or a shape the borrow cannot express): fall back to re-serializing.
            .or_else(|| json.get("id").map(Value::to_string));
        Some(Msg {
            index,
            json,
            raw_id,
        })
    }
}

/// Why a wait ended without a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    TimedOut,
    /// The client closed the connection and nothing that fits is left.
    Closed,
}

#[derive(Default)]
struct State {
    msgs: Vec<(Msg, bool)>,
    closed: bool,
}

#[derive(Default)]
pub struct Mailbox {
    state: Mutex<State>,
    notify: Notify,
}

impl Mailbox {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn push(&self, msg: Msg) {
        self.lock().msgs.push((msg, false));
        self.notify.notify_waiters();
    }

    /// The connection reached EOF: waiters stop waiting.
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Takes the first unconsumed message for which `fits` returns `Some`, waiting until
    /// `deadline` for one to arrive.
    pub async fn take<T>(
        &self,
        mut fits: impl FnMut(&Msg) -> Option<T>,
        deadline: &Deadline,
    ) -> Result<(Msg, T), WaitError> {
        // Messages before `seen` did not fit on an earlier look and cannot start to fit (only
        // this call's `fits` decides), so each wake-up looks only at new arrivals: a client that
        // floods the connection costs linear, not quadratic, time.
        let mut seen = 0;
        loop {
            // Register interest before looking, so a push between the look and the wait is not
            // lost.
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                let end = state.msgs.len();
                // `clear` may have emptied the mailbox meanwhile: look at everything again.
                if seen > end {
                    seen = 0;
                }
                for (msg, taken) in state.msgs[seen..].iter_mut() {
                    if *taken {
                        continue;
                    }
                    if let Some(t) = fits(msg) {
                        *taken = true;
                        return Ok((msg.clone(), t));
                    }
                }
                seen = end;
                if state.closed {
                    return Err(WaitError::Closed);
                }
            }
            if deadline.run(notified).await.is_err() {
                return Err(WaitError::TimedOut);
            }
        }
    }

    /// Forgets every message, consumed or not (a long-lived connection that starts a new,
    /// self-contained exchange, so the mailbox does not grow without bound). Messages that
    /// arrive later are filed as usual.
    pub fn clear(&self) {
        self.lock().msgs.clear();
        self.notify.notify_waiters();
    }

    /// Unconsumed messages (for explaining a timeout).
    pub fn unconsumed(&self) -> Vec<Msg> {
        self.lock()
            .msgs
            .iter()
            .filter(|(_, taken)| !taken)
            .map(|(m, _)| m.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn msg(i: usize, text: &str) -> Msg {
        Msg::parse(i, text.as_bytes()).unwrap()
    }

    #[test]
    fn raw_ids_are_kept_verbatim() {
        assert_eq!(msg(0, r#"{"id": 1.50}"#).raw_id.as_deref(), Some("1.50"));
        assert_eq!(
            msg(0, r#"{"id":"a\u0041"}"#).raw_id.as_deref(),
            Some(r#""a\u0041""#)
        );
        assert_eq!(msg(0, r#"{"id":null}"#).raw_id.as_deref(), Some("null"));
        assert_eq!(msg(0, r#"{"method":"x"}"#).raw_id, None);
        assert!(Msg::parse(0, b"[1]").is_none());
        assert!(Msg::parse(0, b"nope").is_none());
    }

    #[tokio::test]
    async fn takes_first_unconsumed_fitting_message_in_order() {
        let mb = Mailbox::new();
        mb.push(msg(0, r#"{"method":"a","n":1}"#));
        mb.push(msg(1, r#"{"method":"b"}"#));
        mb.push(msg(2, r#"{"method":"a","n":2}"#));
        let deadline = Deadline::after(Duration::from_secs(5));
        let is = |m: &'static str| move |x: &Msg| (x.json["method"] == m).then_some(());
        assert_eq!(mb.take(is("b"), &deadline).await.unwrap().0.index, 1);
        assert_eq!(mb.take(is("a"), &deadline).await.unwrap().0.index, 0);
        assert_eq!(mb.take(is("a"), &deadline).await.unwrap().0.index, 2);
        assert_eq!(mb.unconsumed().len(), 0);
    }

    #[tokio::test]
    async fn waits_for_a_push_and_times_out() {
        let mb = Arc::new(Mailbox::new());
        let any = |_: &Msg| Some(());
        let deadline = Deadline::after(Duration::from_millis(50));
        assert_eq!(
            mb.take(any, &deadline).await.unwrap_err(),
            WaitError::TimedOut
        );

        let waiter = {
            let mb = mb.clone();
            tokio::spawn(async move {
                mb.take(any, &Deadline::after(Duration::from_secs(60)))
                    .await
                    .map(|(m, _)| m.index)
            })
        };
        tokio::task::yield_now().await;
        mb.push(msg(7, "{}"));
        assert_eq!(waiter.await.unwrap(), Ok(7));
    }

    #[tokio::test]
    async fn close_ends_waits_at_once() {
        let mb = Arc::new(Mailbox::new());
        let waiter = {
            let mb = mb.clone();
            tokio::spawn(async move {
                mb.take(|_| Some(()), &Deadline::after(Duration::from_secs(3600)))
                    .await
                    .map(|_| ())
            })
        };
        mb.close();
        assert_eq!(waiter.await.unwrap(), Err(WaitError::Closed));
    }

    #[tokio::test]
    async fn clear_forgets_everything_and_later_pushes_still_arrive() {
        let mb = Arc::new(Mailbox::new());
        mb.push(msg(0, r#"{"method":"old"}"#));
        mb.push(msg(1, r#"{"method":"skip"}"#));
        let is_new = |x: &Msg| (x.json["method"] == "new").then_some(());
        let waiter = {
            let mb = mb.clone();
            tokio::spawn(async move {
                mb.take(is_new, &Deadline::after(Duration::from_secs(60)))
                    .await
                    .map(|(m, _)| m.index)
            })
        };
        tokio::task::yield_now().await;
        mb.clear();
        assert!(mb.unconsumed().is_empty());
        mb.push(msg(2, r#"{"method":"new"}"#));
        assert_eq!(waiter.await.unwrap(), Ok(2));
    }
}
