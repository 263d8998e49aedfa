//! `fault` steps: which keys each fault kind needs and refuses.

use super::{Ctx, R};
use crate::scenario::raw::RawStep;
use crate::scenario::{CrashSignal, Fault};

impl Ctx<'_> {
    pub(super) fn fault(&mut self, r: &RawStep) -> R<Fault> {
        let f = r.fault.as_ref().expect("present");
        let kind = f.get_ref().as_str();
        let (needs, refuses): (&str, &[(&str, Option<usize>)]) = match kind {
            "split" => (
                "frame",
                &[("line", r.line.as_ref().map(|s| s.span().start))],
            ),
            "duplicate" | "invalid" => (
                "frame",
                &[
                    ("line", r.line.as_ref().map(|s| s.span().start)),
                    ("at", r.at.as_ref().map(|s| s.span().start)),
                ],
            ),
            "raw" => (
                "line",
                &[
                    ("frame", r.frame.as_ref().map(|s| s.span().start)),
                    ("at", r.at.as_ref().map(|s| s.span().start)),
                ],
            ),
            other => {
                return Err(self.err(
                    f.span().start,
                    format!(
                        "unknown fault {other:?} (faults: split, duplicate, raw, invalid, crash)"
                    ),
                ));
            }
        };
        if let Some(signal) = &r.signal {
            return Err(self.err(
                signal.span().start,
                format!("`signal` does not belong in fault = {kind:?} (only in fault = \"crash\")"),
            ));
        }
        for (key, at) in refuses {
            if let Some(at) = at {
                return Err(self.err(*at, format!("`{key}` does not belong in fault = {kind:?}")));
            }
        }
        if kind == "raw" {
            let Some(line) = &r.line else {
                return Err(self.err(f.span().start, "fault = \"raw\" needs `line = '…'`"));
            };
            return Ok(Fault::Raw {
                line: line.get_ref().clone(),
            });
        }
        let Some(frame) = &r.frame else {
            return Err(self.err(
                f.span().start,
                format!("fault = {kind:?} needs `{needs} = '…'`"),
            ));
        };
        let frame = self.json(frame, "`frame`", false)?;
        Ok(match kind {
            "split" => {
                let at = match &r.at {
                    Some(a) if *a.get_ref() == 0 => {
                        return Err(self.err(
                            a.span().start,
                            "`at` must be at least 1 (a byte offset into the frame)",
                        ));
                    }
                    Some(a) => Some(usize::try_from(*a.get_ref()).unwrap_or(usize::MAX)),
                    None => None,
                };
                Fault::Split { frame, at }
            }
            "duplicate" => Fault::Duplicate { frame },
            _ => Fault::Invalid { frame },
        })
    }

    /// `fault = "crash"`: the agent process dies, killed with `signal` (default `SIGTERM`). It
    /// takes no frame: nothing is written, the connection just ends.
    pub(super) fn crash(&mut self, r: &RawStep) -> R<CrashSignal> {
        for (key, at) in [
            ("frame", r.frame.as_ref().map(|s| s.span().start)),
            ("line", r.line.as_ref().map(|s| s.span().start)),
            ("at", r.at.as_ref().map(|s| s.span().start)),
        ] {
            if let Some(at) = at {
                return Err(self.err(
                    at,
                    format!("`{key}` does not belong in fault = \"crash\" (the agent dies; it writes nothing)"),
                ));
            }
        }
        let Some(signal) = &r.signal else {
            return Ok(CrashSignal::Term);
        };
        CrashSignal::parse(signal.get_ref()).ok_or_else(|| {
            self.err(
                signal.span().start,
                format!(
                    "unknown signal {:?} (signals: {})",
                    signal.get_ref(),
                    CrashSignal::NAMES.join(", ")
                ),
            )
        })
    }
}
