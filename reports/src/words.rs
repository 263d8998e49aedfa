//! Counted nouns for the sentences people read ("1 case", "3 failing trials"): one rule for the
//! CLI, the summaries, JUnit and diff, so they never disagree on it.

/// `n` and `noun`, the noun in the plural unless `n` is 1. Only regular plurals (an `s`), which is
/// every noun the project counts.
pub fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(0, "case"), "0 cases");
        assert_eq!(counted(1, "failing trial"), "1 failing trial");
        assert_eq!(counted(2, "run"), "2 runs");
    }
}
