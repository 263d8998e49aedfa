//! Work split over scoped threads: the calling thread does its own part while each other part
//! is mapped on a thread of its own, and the results come back in the parts' order.
//!
//! Several stages split a long input this way (the schema check's frames, a long scenario's
//! steps and its frames compiled ahead); they share this one helper so that they agree on what
//! happens when a thread cannot be started (that part is done on the calling thread, so the
//! result is the same, only slower) and when a worker panics (the panic is resumed on the
//! calling thread, as if the part had been done there).

use std::thread::{Builder, Scope, ScopedJoinHandle};

/// Runs `here` on the calling thread while `each` maps every one of `parts` on a scoped thread
/// of its own (named `name`, which shows in profilers); returns what `here` returned and the
/// parts' results in the parts' order.
///
/// The parts are started before `here` runs. A part whose thread cannot be started (a process
/// at its thread limit) is mapped on the calling thread after `here`, in its place in the order.
/// If a worker panics, its panic is resumed on the calling thread once `here` is done; if `here`
/// panics, the workers are waited for and `here`'s panic goes on. With no parts, this is
/// `here()` and an empty vector, and no thread is started.
///
/// Parts are `Copy` because they are meant to be cheap handles to the work (a slice, a range):
/// a part whose thread could not be started is still at hand to be done here.
pub fn alongside<H, P, R>(
    name: &str,
    here: impl FnOnce() -> H,
    parts: impl IntoIterator<Item = P>,
    each: impl Fn(P) -> R + Sync,
) -> (H, Vec<R>)
where
    P: Copy + Send,
    R: Send,
{
    alongside_with(|_| true, name, here, parts, each)
}

/// [`alongside`], where `may_start(i)` false counts as a failure to start part `i`'s thread
/// (the tests' way to take the fallback path).
fn alongside_with<H, P, R>(
    may_start: impl Fn(usize) -> bool,
    name: &str,
    here: impl FnOnce() -> H,
    parts: impl IntoIterator<Item = P>,
    each: impl Fn(P) -> R + Sync,
) -> (H, Vec<R>)
where
    P: Copy + Send,
    R: Send,
{
    let each = &each;
    std::thread::scope(|scope| {
        let started: Vec<Result<ScopedJoinHandle<'_, R>, P>> = parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                if !may_start(i) {
                    return Err(part);
                }
                start(scope, name, move || each(part)).map_err(|_| part)
            })
            .collect();
        let mine = here();
        let results = started
            .into_iter()
            .map(|part| match part {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(part) => each(part),
            })
            .collect();
        (mine, results)
    })
}

fn start<'scope, R: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    name: &str,
    work: impl FnOnce() -> R + Send + 'scope,
) -> std::io::Result<ScopedJoinHandle<'scope, R>> {
    Builder::new()
        .name(name.to_owned())
        .spawn_scoped(scope, work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::thread::{self, ThreadId};

    /// Each part's square and the thread that computed it.
    fn square_where(n: u64) -> (u64, ThreadId) {
        (n * n, thread::current().id())
    }

    #[test]
    fn results_come_back_in_the_parts_order_from_other_threads() {
        let caller = thread::current().id();
        let (mine, results) = alongside(
            "test-part",
            || thread::current().id(),
            1..=8u64,
            square_where,
        );
        assert_eq!(mine, caller);
        let squares: Vec<u64> = results.iter().map(|(sq, _)| *sq).collect();
        assert_eq!(squares, [1, 4, 9, 16, 25, 36, 49, 64]);
        assert!(results.iter().all(|(_, on)| *on != caller));
    }

    #[test]
    fn a_worker_thread_carries_the_given_name() {
        let ((), names) = alongside(
            "named-part",
            || (),
            [()],
            |()| thread::current().name().map(str::to_owned),
        );
        assert_eq!(names, [Some("named-part".to_owned())]);
    }

    #[test]
    fn no_parts_runs_only_here() {
        let (mine, results) = alongside(
            "test-part",
            || 7,
            std::iter::empty::<u64>(),
            |_| unreachable!("no part to map"),
        );
        assert_eq!(mine, 7);
        assert!(results.is_empty());
    }

    #[test]
    fn a_part_whose_thread_cannot_start_is_mapped_on_the_caller_in_its_place() {
        let caller = thread::current().id();
        let (_, results) =
            alongside_with(|i| i % 2 == 1, "test-part", || (), 1..=5u64, square_where);
        let squares: Vec<u64> = results.iter().map(|(sq, _)| *sq).collect();
        assert_eq!(squares, [1, 4, 9, 16, 25]);
        for (i, (_, on)) in results.iter().enumerate() {
            assert_eq!(*on == caller, i % 2 == 0, "part {i}");
        }
    }

    #[test]
    fn the_caller_does_the_fallback_parts_after_its_own() {
        let order = std::sync::Mutex::new(Vec::new());
        let log = |what: &'static str| order.lock().unwrap().push(what);
        alongside_with(|_| false, "test-part", || log("here"), ["part"], log);
        assert_eq!(*order.lock().unwrap(), ["here", "part"]);
    }

    #[test]
    fn a_workers_panic_is_resumed_on_the_caller() {
        let caller_done = std::sync::atomic::AtomicBool::new(false);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            alongside(
                "test-part",
                || caller_done.store(true, std::sync::atomic::Ordering::SeqCst),
                [1u64, 2, 3],
                |n| {
                    if n == 2 {
                        std::panic::panic_any(format!("part {n} failed"));
                    }
                    n
                },
            )
        }));
        let panic = outcome.expect_err("the worker's panic reaches the caller");
        assert_eq!(panic.downcast_ref::<String>().unwrap(), "part 2 failed");
        assert!(caller_done.load(std::sync::atomic::Ordering::SeqCst));
    }
}
