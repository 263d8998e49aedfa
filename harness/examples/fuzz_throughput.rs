//! Permission turns per second of the fuzz driver against `ACP_HARNESS_CLIENT` (the reference
//! client by default; a client without an adapter plays one case per turn), on stable Rust,
//! without libFuzzer: `cargo run --release -p
//! acp-harness --example fuzz_throughput [TURNS]` (default 20000). Inputs are pseudo-random bytes
//! decoded like fuzz inputs; findings are counted, not fatal. fuzz/README.md reports the figures.

use std::time::Instant;

use acp_harness::fuzz::{Driver, DriverConfig, pseudo_random_turns};

fn main() -> anyhow::Result<()> {
    let turns: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 20_000,
    };
    let mut cfg = DriverConfig::from_env()?;
    cfg.confirm_on_fresh_client = false;
    let client = cfg.client.name.clone();
    let mut driver = Driver::new(cfg)?;
    // Deterministic inputs: runs compare.
    let inputs: Vec<_> = pseudo_random_turns(0x9e37_79b9_7f4a_7c15, turns, 256).collect();
    // The first turn starts the client: time the steady state.
    let mut findings = 0usize;
    // What broke, by check and first words of the message (a finding does not stop the run).
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    // ACP_FUZZ_SHOW=N prints the first N findings in full.
    let show: usize = std::env::var("ACP_FUZZ_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut play = |turn| {
        if let Err(finding) = driver.check(turn) {
            findings += 1;
            if findings <= show {
                println!("{}", finding.summary);
            }
            for t in finding.result.verdict.findings() {
                let head: String = t
                    .message
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(90)
                    .collect();
                *kinds
                    .entry(format!("{} [{}] {head}", t.check, t.grade.as_str()))
                    .or_default() += 1;
            }
        }
    };
    if let Some(first) = inputs.first() {
        play(first);
    }
    let started = Instant::now();
    for turn in &inputs[1.min(inputs.len())..] {
        play(turn);
    }
    let secs = started.elapsed().as_secs_f64();
    let played = inputs.len().saturating_sub(1);
    println!(
        "{client}: {played} turns in {secs:.2} s = {:.0} turns/s over pipes ({findings} finding(s))",
        played as f64 / secs.max(1e-9)
    );
    for (kind, n) in kinds.iter().take(40) {
        println!("  {n:>6}  {kind}");
    }
    Ok(())
}
