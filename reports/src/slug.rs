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
        let base = page_stem(id);
        let mut stem = base.clone();
        let mut n = 1;
        // Compare case-insensitively: the report may be opened on a case-insensitive file system.
        while !self.taken.insert(stem.to_ascii_lowercase()) {
            n += 1;
            stem = format!("{base}-{n}");
        }
        stem
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
    }
}
