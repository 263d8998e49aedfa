//! Machine time: how long a wait lasted for a program that wanted the CPU all along, on a
//! machine that gave part of it to others.
//!
//! Every wait of the harness on a client (a frame, an event, an exit) is bounded by a timeout,
//! and a timeout counted on the wall clock measures the machine as much as the client: a Python
//! client whose imports take one second on an idle machine takes three when other jobs keep the
//! cores busy, and a 5 s step timeout then fails a client that did nothing wrong. So waits are
//! bounded in machine time instead: wall time, each moment weighted by the share of a core a
//! runnable program got at that moment.
//!
//! The share is read from the kernel's count of runnable tasks (`/proc/loadavg`, the field
//! `running/total`), sampled every [`TICK`] by one thread per process: with `n` cores and `r`
//! other runnable tasks, a program that wants to run gets `min(1, n / r)` of a core. On a
//! 2-core machine a CPU-bound Python start measured 0.50 s idle; under 4 and under 8 busy
//! processes it took 2.3× and 4.2× as long on the wall clock, and 0.46 s and 0.46 s of machine
//! time (docs/timeouts.md). The share never drops below [`MIN_SHARE`], so a wait that is never
//! answered still ends: after at most `1 / MIN_SHARE` times its budget on the wall clock.
//!
//! Where `/proc/loadavg` cannot be read (not Linux), machine time is wall time.

use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the sampler reads the runnable-task count.
pub const TICK: Duration = Duration::from_millis(10);

/// The smallest share of a core a waiting program is assumed to get: a wait lasts at most
/// `1 / MIN_SHARE` times its budget on the wall clock, however busy the machine. Below the
/// floor, verdicts depend on the load again: at 1/8, 25 runnable tasks on two cores (a share
/// of 1/12) made a Python client's start time out. At 1/32 two cores are followed exactly up to
/// 64 runnable tasks.
pub const MIN_SHARE: f64 = 1.0 / 32.0;

/// A reading of both clocks, each counted from the sampler's start.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    wall: Instant,
    /// Machine time since the sampler started.
    machine: Duration,
    /// The share of a core at the last sample, for the time since.
    share: f64,
}

struct Sampler {
    last: Mutex<Reading>,
}

fn sampler() -> &'static Sampler {
    static SAMPLER: OnceLock<&'static Sampler> = OnceLock::new();
    SAMPLER.get_or_init(|| {
        let sampler: &'static Sampler = Box::leak(Box::new(Sampler {
            last: Mutex::new(Reading {
                wall: Instant::now(),
                machine: Duration::ZERO,
                share: 1.0,
            }),
        }));
        if runnable_tasks().is_some() {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            // A thread of its own, not a task: a starved async runtime must not stop the clock
            // that tells it was starved.
            let spawned = std::thread::Builder::new()
                .name("machine-time".into())
                .spawn(move || sample_forever(sampler, cores));
            if spawned.is_err() {
                // No thread, no sampling: machine time stays wall time (share 1).
            }
        }
        sampler
    })
}

fn sample_forever(sampler: &Sampler, cores: usize) {
    loop {
        std::thread::sleep(TICK);
        // The sampler itself is running while it reads the count.
        let others = runnable_tasks().map_or(0, |r| r.saturating_sub(1));
        let share = share_of_a_core(cores, others);
        let now = Instant::now();
        let mut last = sampler.last.lock().unwrap_or_else(|e| e.into_inner());
        let machine = last.machine + now.duration_since(last.wall).mul_f64(last.share);
        *last = Reading {
            wall: now,
            machine,
            share,
        };
    }
}

/// The share of a core a program that wants to run gets with `others` runnable tasks on
/// `cores` cores, never below [`MIN_SHARE`].
pub fn share_of_a_core(cores: usize, others: usize) -> f64 {
    if others <= cores {
        1.0
    } else {
        (cores as f64 / others as f64).max(MIN_SHARE)
    }
}

/// The kernel's count of runnable tasks (`/proc/loadavg`, field 4 before the slash).
fn runnable_tasks() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Now, on both clocks.
fn now() -> Reading {
    let last = *sampler().last.lock().unwrap_or_else(|e| e.into_inner());
    let wall = Instant::now();
    Reading {
        wall,
        machine: last.machine + wall.duration_since(last.wall).mul_f64(last.share),
        share: last.share,
    }
}

/// Starts the sampler now, so that the first wait of a run is measured from its start.
pub fn start() {
    let _ = sampler();
}

/// A point in time on both clocks, to measure a stretch of time from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp(Reading);

impl Stamp {
    pub fn now() -> Stamp {
        Stamp(now())
    }

    /// The wall instant of this stamp.
    pub fn wall(&self) -> Instant {
        self.0.wall
    }

    /// How long ago this stamp was, on both clocks.
    pub fn elapsed(&self) -> Waited {
        Stamp(now()).since(*self)
    }

    /// How long after `earlier` this stamp was, on both clocks (zero if it was not after it).
    pub fn since(&self, earlier: Stamp) -> Waited {
        Waited {
            wall: self.0.wall.saturating_duration_since(earlier.0.wall),
            machine: self.0.machine.saturating_sub(earlier.0.machine),
        }
    }
}

/// How long a wait lasted: on the wall clock, and in machine time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waited {
    pub wall: Duration,
    pub machine: Duration,
}

impl Waited {
    /// The part of the wall time the machine gave to other programs.
    pub fn busy_elsewhere(&self) -> Duration {
        self.wall.saturating_sub(self.machine)
    }

    /// How many times longer the wall clock ran than machine time (1.0 on an idle machine).
    pub fn stretch(&self) -> f64 {
        if self.machine.is_zero() {
            1.0
        } else {
            self.wall.as_secs_f64() / self.machine.as_secs_f64()
        }
    }

    /// "5000 ms (12.4 s on the wall clock; the machine was busy elsewhere for 7.4 s)": a budget
    /// in machine time, and what it cost on the wall clock when the machine was busy.
    pub fn describe(&self, budget: Duration) -> String {
        let busy = self.busy_elsewhere();
        // Below a tenth of the budget the machine was as good as idle: say nothing of it.
        if busy * 10 < budget {
            format!("{} ms", budget.as_millis())
        } else {
            format!(
                "{} ms of machine time ({:.1} s on the wall clock; the machine was busy elsewhere for {:.1} s)",
                budget.as_millis(),
                self.wall.as_secs_f64(),
                busy.as_secs_f64()
            )
        }
    }
}

/// The end of a wait whose budget is counted in machine time.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Stamp,
    budget: Duration,
}

impl Deadline {
    /// `budget` of machine time from now.
    pub fn after(budget: Duration) -> Deadline {
        Deadline {
            start: Stamp::now(),
            budget,
        }
    }

    /// `budget` of machine time from `start`.
    pub fn from(start: Stamp, budget: Duration) -> Deadline {
        Deadline { start, budget }
    }

    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// How long this wait has lasted so far.
    pub fn elapsed(&self) -> Waited {
        self.start.elapsed()
    }

    /// The machine time left (zero once reached).
    pub fn remaining(&self) -> Duration {
        let waited = self.elapsed();
        let wall_left = self.wall_cap().saturating_sub(waited.wall);
        self.budget.saturating_sub(waited.machine).min(wall_left)
    }

    /// The longest the wait may last on the wall clock.
    fn wall_cap(&self) -> Duration {
        self.budget.div_f64(MIN_SHARE)
    }

    pub fn is_reached(&self) -> bool {
        self.remaining().is_zero()
    }

    /// Resolves once the budget of machine time has passed (or `1 / MIN_SHARE` times it on
    /// the wall clock).
    pub async fn reached(&self) {
        loop {
            // Machine time never runs faster than the wall clock: sleeping for what is left
            // never overshoots, and a busy machine only adds rounds.
            let left = self.remaining();
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left).await;
        }
    }

    /// Runs `fut` until it completes or the deadline is reached; a future that is ready wins
    /// over a deadline reached at the same moment.
    pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output, Waited> {
        tokio::select! {
            biased;
            out = fut => Ok(out),
            () = self.reached() => Err(self.elapsed()),
        }
    }
}

/// Waits for `fut` at most `budget` of machine time.
pub async fn timeout<F: Future>(budget: Duration, fut: F) -> Result<F::Output, Waited> {
    Deadline::after(budget).run(fut).await
}

/// Sleeps for `d` of machine time.
pub async fn sleep(d: Duration) {
    Deadline::after(d).reached().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_gets_a_whole_core_while_there_are_cores_to_spare() {
        assert_eq!(share_of_a_core(2, 0), 1.0);
        assert_eq!(share_of_a_core(2, 2), 1.0);
    }

    #[test]
    fn a_busy_machine_shares_its_cores_among_the_runnable_tasks() {
        assert_eq!(share_of_a_core(2, 4), 0.5);
        assert_eq!(share_of_a_core(2, 8), 0.25);
    }

    #[test]
    fn the_share_has_a_floor_so_every_wait_ends() {
        assert_eq!(share_of_a_core(2, 1000), MIN_SHARE);
        let d = Deadline::after(Duration::from_secs(1));
        assert_eq!(d.wall_cap(), Duration::from_secs(32));
    }

    #[test]
    fn machine_time_never_runs_ahead_of_the_wall_clock() {
        let start = Stamp::now();
        std::thread::sleep(Duration::from_millis(30));
        let w = start.elapsed();
        assert!(w.machine <= w.wall, "{w:?}");
        assert!(w.wall >= Duration::from_millis(30), "{w:?}");
    }

    #[test]
    fn a_wait_says_how_busy_the_machine_was_only_when_it_was() {
        let idle = Waited {
            wall: Duration::from_millis(5020),
            machine: Duration::from_millis(5000),
        };
        assert_eq!(idle.describe(Duration::from_secs(5)), "5000 ms");
        let busy = Waited {
            wall: Duration::from_millis(12_400),
            machine: Duration::from_millis(5000),
        };
        assert_eq!(
            busy.describe(Duration::from_secs(5)),
            "5000 ms of machine time (12.4 s on the wall clock; the machine was busy elsewhere for 7.4 s)"
        );
        assert!((busy.stretch() - 2.48).abs() < 1e-9);
    }

    #[tokio::test]
    async fn a_ready_future_wins_and_a_silent_one_times_out() {
        assert_eq!(timeout(Duration::from_millis(50), async { 7 }).await, Ok(7));
        let waited = timeout(Duration::from_millis(50), std::future::pending::<()>())
            .await
            .expect_err("never ready");
        assert!(waited.wall >= Duration::from_millis(50), "{waited:?}");
        assert!(waited.machine <= waited.wall, "{waited:?}");
    }
}
