//! The `send` frames of a long scenario compiled on a second core while the first one checks the
//! steps in order. Compiling a frame ([`json_text::compile`]) is most of a `send` step's parse
//! and depends on nothing but the frame's text, so it can run ahead; everything that depends on
//! what came before (variables, aliases, the first error) stays on the one thread that walks the
//! steps in order, which takes the compiled frames as it reaches them. A frame compiled ahead is
//! the very value the walk would have computed, so results and errors are the same.

use std::num::NonZeroUsize;

use toml::Spanned;

use crate::scenario::json_text;
use crate::scenario::raw::BoxedStep;

/// A frame compiled ahead: what [`json_text::compile`] returned for it.
pub(super) type Compiled = Result<json_text::Compiled, serde_json::Error>;

/// Fewer top-level steps than this are parsed on one thread: starting a thread costs tens of
/// microseconds, about what ten steps take, and hand-written scenarios have a few dozen.
const PARALLEL_FROM: usize = 1024;

/// Where the walk hands over to frames compiled ahead, or `None` to compile every frame in the
/// walk (short scenarios, one core). The walk compiles its own frames up to there and then
/// checks the rest, which costs little next to compiling them; the other thread compiles the
/// same frames about 1.3 times slower (its malloc arena is new: its first touches fault pages
/// in). Measured per thread (docs/performance.md), the two are even when the other thread
/// takes the last 4/9 of the steps.
pub(super) fn split_point(steps: usize) -> Option<usize> {
    // Asked only of a long scenario: on Linux the answer reads the cgroup's files.
    let cores = || std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (steps >= PARALLEL_FROM && cores() > 1).then_some(steps * 5 / 9)
}

/// The compiled `send` frame of each step (`None` for other steps).
pub(super) fn compile_sends(raws: &[Spanned<BoxedStep>]) -> Vec<Option<Compiled>> {
    raws.iter()
        .map(|raw| {
            raw.get_ref()
                .send
                .as_ref()
                .map(|s| json_text::compile(s.get_ref()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
