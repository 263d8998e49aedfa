//! `fault` steps: which keys each fault kind needs and refuses.

use super::{Ctx, R};
use crate::scenario::Fault;
use crate::scenario::raw::RawStep;

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
                    format!("unknown fault {other:?} (faults: split, duplicate, raw, invalid)"),
                ));
            }
        };
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
}
