//! Shards: one of N deterministic slices of a suite's cases, by a stable hash of each case id
//! (also the name of a case's verdict file in a nextest run, `nextest_cache`).

/// One of N deterministic slices of the cases (`acp-harness run --shard K/N`), for splitting a run
/// across CI runners. A case's slice comes from a stable hash of its id (FNV-1a), so it stays in
/// the same slice when other cases are added or removed, and the N slices partition the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub k: u32,
    pub n: u32,
}

impl Shard {
    /// Reads `K/N` (1 ≤ K ≤ N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| format!("--shard takes K/N (e.g. 2/4), got {text:?}"))?;
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("--shard takes K/N with whole numbers, got {text:?}"))
        };
        let (k, n) = (number(k)?, number(n)?);
        if n == 0 || k == 0 || k > n {
            return Err(format!(
                "--shard {text}: K must be between 1 and N, and N at least 1"
            ));
        }
        Ok(Shard { k, n })
    }

    /// True if the case `id` belongs to this slice.
    pub fn contains(&self, id: &str) -> bool {
        case_hash(id) % u64::from(self.n) == u64::from(self.k - 1)
    }
}

/// A stable hash of a case id: FNV-1a, 64 bits, the same across Rust versions and platforms
/// (unlike the std hasher), so shards and cache file names stay put.
pub fn case_hash(id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn the_slices_partition_the_cases_and_stay_put() {
        let ids: Vec<String> = (0..500).map(|i| format!("agent@1/scenario-{i}")).collect();
        for n in [1, 2, 3, 7] {
            let shards: Vec<Shard> = (1..=n).map(|k| Shard { k, n }).collect();
            for id in &ids {
                let owners = shards.iter().filter(|s| s.contains(id)).count();
                assert_eq!(owners, 1, "{id} in {owners} of {n} shards");
            }
            // No slice is empty or holds nearly everything.
            for s in &shards {
                let mine = ids.iter().filter(|id| s.contains(id)).count();
                assert!(mine > ids.len() / (2 * n as usize), "{s}: {mine}");
            }
        }
        // A case's slice depends on its id alone (fixed here so a change of hash is seen).
        assert!(Shard { k: 1, n: 1 }.contains("x"));
        let slice_of = |id: &str| (1..=4).find(|&k| Shard { k, n: 4 }.contains(id)).unwrap();
        assert_eq!(
            slice_of("opencode@1.18/edit-permission[once]"),
            slice_of("opencode@1.18/edit-permission[once]")
        );
    }

    #[test]
    fn bad_shards_are_refused_with_the_reason() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { k: 2, n: 4 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert!(Shard::parse("5/4").unwrap_err().contains("between 1 and N"));
    }
}
