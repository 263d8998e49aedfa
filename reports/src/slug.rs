//! File names made from ids (case ids, client names, agent versions).

use std::collections::BTreeSet;

/// The id with every character outside `[A-Za-z0-9-_.@[]]` replaced by `_`. Used for transcript
/// files (the harness's naming, kept as it was).
pub fn file_stem(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@[]".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The id as a page name that needs no escaping in a URL: `[A-Za-z0-9._-]` only, never starting
/// with a dot.
pub fn page_stem(id: &str) -> String {
    let stem: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            '@' => '-',
            '[' => '.',
            _ => '_',
        })
        .collect();
    let stem = stem.trim_start_matches('.').trim_end_matches('_');
    if stem.is_empty() {
        "page".into()
    } else {
        stem.chars().take(120).collect()
    }
}

/// Hands out page stems that are unique within one directory (`name`, `name-2`, …).
#[derive(Debug, Default)]
pub struct Unique {
    taken: BTreeSet<String>,
}

impl Unique {
    pub fn take(&mut self, id: &str) -> String {
        Unique::numbered(id, self.take_n(id))
    }

    /// Takes the stem of `id` as [`Unique::take`] does, and returns only its number (1 for the
    /// plain stem), so a caller can keep four bytes instead of the name.
    pub fn take_n(&mut self, id: &str) -> u32 {
        let base = page_stem(id);
        let mut n = 1;
        // Compare case-insensitively: the report may be opened on a case-insensitive file system.
        while !self
            .taken
            .insert(Unique::numbered_stem(&base, n).to_ascii_lowercase())
        {
            n += 1;
        }
        n
    }

    /// The stem [`Unique::take`] gave `id` when [`Unique::take_n`] said `n`.
    pub fn numbered(id: &str, n: u32) -> String {
        Unique::numbered_stem(&page_stem(id), n)
    }

    fn numbered_stem(base: &str, n: u32) -> String {
        if n == 1 {
            base.to_owned()
        } else {
            format!("{base}-{n}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_stems_need_no_escaping() {
        assert_eq!(
            page_stem("qwen-code@0.14/exec-choose-each[cancel]"),
            "qwen-code-0.14_exec-choose-each.cancel"
        );
        assert_eq!(page_stem("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(page_stem("<script>"), "_script");
        assert_eq!(page_stem(""), "page");
    }

    #[test]
    fn unique_stems_never_collide() {
        let mut unique = Unique::default();
        assert_eq!(unique.take("a/b"), "a_b");
        assert_eq!(unique.take("a b"), "a_b-2");
        assert_eq!(unique.take("A_B"), "A_B-3");
        assert_eq!(unique.take_n("a/b"), 4);
        assert_eq!(Unique::numbered("a/b", 4), "a_b-4");
    }
}
