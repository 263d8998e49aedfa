//! The top-level steps of a run that owns them ([`super::run_freeing_steps`]): handed out front
//! to back, each freed once it is played. The list's own buffer (about 140 bytes a step) is
//! given back as it empties too, so that at the end of a long scenario — where the transcript is
//! largest — neither the steps nor the room they took are alive.

use std::collections::VecDeque;

use crate::scenario::Step;

pub(super) struct OwnedSteps {
    rest: VecDeque<Step>,
}

/// Below this many steps' room the buffer is left as it is: giving back a few KiB is not worth
/// the move.
const SHRINK_FROM: usize = 1024;

impl OwnedSteps {
    pub(super) fn new(steps: Vec<Step>) -> Self {
        OwnedSteps {
            rest: VecDeque::from(steps),
        }
    }

    /// The next step, now owned by the caller (dropped when it is done with it).
    pub(super) fn take_next(&mut self) -> Option<Step> {
        let step = self.rest.pop_front()?;
        // Halving the room whenever half of it is unused moves each step at most once more in
        // all (a geometric series), and keeps the buffer within twice what is left.
        if self.rest.capacity() >= SHRINK_FROM && self.rest.len() <= self.rest.capacity() / 2 {
            self.rest.shrink_to_fit();
        }
        Some(step)
    }

    /// The step after the one [`OwnedSteps::take_next`] handed out last.
    pub(super) fn peek(&self) -> Option<&Step> {
        self.rest.front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::StepKind;

    fn step(n: usize) -> Step {
        Step {
            label: n.to_string(),
            top: n,
            line: n,
            timeout: None,
            kind: StepKind::Handshake,
        }
    }

    #[test]
    fn steps_come_out_in_order_and_their_room_shrinks() {
        let n = 5000;
        let mut steps = OwnedSteps::new((1..=n).map(step).collect());
        let mut seen = Vec::new();
        while let Some(s) = steps.take_next() {
            if let Some(next) = steps.peek() {
                assert_eq!(next.top, s.top + 1);
            }
            seen.push(s.top);
            let (len, room) = (steps.rest.len(), steps.rest.capacity());
            assert!(
                room < SHRINK_FROM || room <= 2 * len + 1,
                "{room} slots kept for {len} steps"
            );
        }
        assert_eq!(seen, (1..=n).collect::<Vec<_>>());
        assert!(steps.peek().is_none());
    }
}
