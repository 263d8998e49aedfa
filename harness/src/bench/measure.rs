//! What one timed stretch of the benchmark cost: wall time, CPU time of the harness and of its
//! children, and peak resident memory.
//!
//! The benchmark runs the suite inside its own process, so the harness's figures are this
//! process's: CPU from `getrusage(RUSAGE_SELF)` (every thread), peak memory from `VmHWM` in
//! `/proc/self/status`, which [`Meter::start`] resets to the current resident size (Linux
//! `clear_refs`, after handing freed memory back) so that each stretch reports its own peak. The children's CPU comes from
//! `getrusage(RUSAGE_CHILDREN)`: clients, and the relays they spawned, once reaped. Their peak
//! memory is not reported: a child forked from the harness counts the harness's resident pages
//! until it execs, so `ru_maxrss` of the children measures the harness again, not the clients.

use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use serde::Serialize;

/// The cost of one timed stretch.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Sample {
    pub wall_ms: f64,
    /// CPU time of the harness process (user + system, all threads).
    pub harness_cpu_ms: f64,
    /// The system (kernel) part of `harness_cpu_ms`: system calls, page faults, the file
    /// system's work for the case directories and outputs.
    pub harness_system_ms: f64,
    /// CPU time of the processes the harness started and reaped (clients and their relays).
    pub children_cpu_ms: f64,
    /// Peak resident memory of the harness process during the stretch, in KiB.
    pub harness_peak_rss_kib: u64,
}

/// Started before a stretch, stopped after it.
pub struct Meter {
    started: Instant,
    harness_cpu: Cpu,
    children_cpu: Duration,
    /// Wall and harness CPU time of work run through [`Meter::exclude`].
    excluded: (Duration, Cpu),
}

/// CPU time of a process: user and system.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    user: Duration,
    system: Duration,
}

impl Cpu {
    fn of(who: UsageWho) -> Cpu {
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(t.tv_sec().max(0) as u64)
                + Duration::from_micros(t.tv_usec().max(0) as u64)
        };
        getrusage(who)
            .map(|u| Cpu {
                user: tv(u.user_time()),
                system: tv(u.system_time()),
            })
            .unwrap_or_default()
    }

    fn total(self) -> Duration {
        self.user + self.system
    }

    /// What was spent since `earlier`.
    fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

impl Meter {
    pub fn start() -> Meter {
        reset_peak_rss();
        Meter {
            harness_cpu: Cpu::of(UsageWho::RUSAGE_SELF),
            children_cpu: Cpu::of(UsageWho::RUSAGE_CHILDREN).total(),
            excluded: (Duration::ZERO, Cpu::default()),
            started: Instant::now(),
        }
    }

    /// Runs `f` inside the stretch but leaves its wall and CPU time out of the sample (a
    /// measurement of the measurement, such as timing the checks alone).
    pub fn exclude<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (started, cpu_before) = (Instant::now(), Cpu::of(UsageWho::RUSAGE_SELF));
        let out = f();
        let spent = Cpu::of(UsageWho::RUSAGE_SELF).since(cpu_before);
        self.excluded.0 += started.elapsed();
        self.excluded.1.user += spent.user;
        self.excluded.1.system += spent.system;
        out
    }

    pub fn stop(self) -> Sample {
        let wall = self.started.elapsed().saturating_sub(self.excluded.0);
        let harness_cpu = Cpu::of(UsageWho::RUSAGE_SELF)
            .since(self.harness_cpu)
            .since(self.excluded.1);
        let children_cpu = Cpu::of(UsageWho::RUSAGE_CHILDREN).total();
        Sample {
            wall_ms: ms(wall),
            harness_cpu_ms: ms(harness_cpu.total()),
            harness_system_ms: ms(harness_cpu.system),
            children_cpu_ms: ms(children_cpu.saturating_sub(self.children_cpu)),
            harness_peak_rss_kib: peak_rss_kib().unwrap_or(0),
        }
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Resets `VmHWM` to the current resident size. Memory the allocator kept from an earlier,
/// larger stretch is handed back first: otherwise a 10⁵-frame scenario would show up as the peak
/// of every stretch after it. Where the reset is refused (not Linux, an old kernel), the peak is
/// the process's peak since it started: an overstatement, never an understatement.
fn reset_peak_rss() {
    crate::runner::release_freed_memory();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `VmHWM` of this process, in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The median of some figures (the mean of the middle two for an even count); 0 for none.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// The sample whose wall time is the median one (the lower middle for an even count).
pub fn median_sample(samples: &[Sample]) -> Sample {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
    sorted
        .get(sorted.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or_default()
}

/// The exponent `k` of `y ≈ c·x^k`: the least-squares slope of `ln y` on `ln x`. `None` with
/// fewer than two distinct positive `x`.
pub fn exponent(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    slope(&logs)
}

/// The least-squares slope of `y` on `x`. `None` with fewer than two distinct `x`.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponent_of_a_power_law() {
        let quadratic: Vec<(f64, f64)> = [10.0, 100.0, 1000.0].map(|x| (x, 3.0 * x * x)).into();
        assert!((exponent(&quadratic).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(exponent(&[(5.0, 1.0)]), None);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median([]), 0.0);
    }

    #[test]
    fn a_meter_sees_this_process() {
        let meter = Meter::start();
        let sample = meter.stop();
        assert!(sample.wall_ms >= 0.0);
        assert!(sample.harness_peak_rss_kib > 0, "VmHWM should be readable");
        assert!(
            sample.harness_system_ms <= sample.harness_cpu_ms,
            "{sample:?}"
        );
    }
}
