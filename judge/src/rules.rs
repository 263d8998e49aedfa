//! The rule catalogue: every protocol rule a check enforces, with its level, who it binds, the
//! requirement in one sentence and a public link (`judge/rules.toml`, compiled in and parsed
//! once).
//!
//! Ids are `R<n>`; [`crate::checks::Check::rules`] returns the numbers `<n>`, and every
//! non-passing finding names one of them, so a report can print the sentence next to Expected
//! and Actual.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// How strongly the protocol words a rule (RFC 2119).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Level {
    #[serde(rename = "MUST")]
    Must,
    #[serde(rename = "SHOULD")]
    Should,
    #[serde(rename = "MAY")]
    May,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
        }
    }
}

/// Whom a rule's sentence binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binds {
    Client,
    Agent,
    Both,
}

impl Binds {
    pub fn as_str(self) -> &'static str {
        match self {
            Binds::Client => "client",
            Binds::Agent => "agent",
            Binds::Both => "both",
        }
    }
}

/// One rule of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// `R<n>`.
    pub id: String,
    pub level: Level,
    pub binds: Binds,
    /// One sentence: a short quote of the protocol text or its sense in plain words.
    pub requirement: String,
    /// A public page: agentclientprotocol.com or the JSON-RPC 2.0 specification.
    pub link: String,
    /// Set on the harness's own invariants (graded `fail` like a MUST): the section of
    /// docs/architecture.md that states it (`§5.1 subject-kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant: Option<String>,
}

impl Rule {
    /// The `<n>` of `R<n>`.
    pub fn number(&self) -> u16 {
        parse_id(&self.id).unwrap_or(0)
    }
}

impl fmt::Display for Rule {
    /// `R43 (MUST) <sentence> <link>`: the line a failure message starts with.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}) {} {}",
            self.id,
            self.level.as_str(),
            self.requirement,
            self.link
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalogue {
    rule: Vec<Rule>,
}

const SOURCE: &str = include_str!("../rules.toml");

/// Hosts a rule's link may point to.
pub const ALLOWED_LINK_PREFIXES: [&str; 2] = [
    "https://agentclientprotocol.com/protocol/",
    "https://www.jsonrpc.org/specification",
];

/// The number of an id `R<n>`.
pub fn parse_id(id: &str) -> Option<u16> {
    let digits = id.strip_prefix('R')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Every rule, in catalogue order. The catalogue is compiled in, and its tests prove it parses,
/// so a parse failure here is a build defect, not bad input.
pub fn all() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| match toml::from_str::<Catalogue>(SOURCE) {
        Ok(c) => c.rule,
        Err(e) => panic!("judge/rules.toml does not parse: {e}"),
    })
}

/// The rule numbered `n` (`R<n>`).
pub fn get(n: u16) -> Option<&'static Rule> {
    all().iter().find(|r| r.number() == n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::all_checks;
    use std::collections::HashSet;

    #[test]
    fn catalogue_parses_with_well_formed_unique_ids() {
        let rules = toml::from_str::<Catalogue>(SOURCE)
            .expect("rules.toml parses")
            .rule;
        assert!(!rules.is_empty());
        let mut seen = HashSet::new();
        for r in &rules {
            assert!(parse_id(&r.id).is_some(), "{}: id is not R<n>", r.id);
            assert!(seen.insert(r.number()), "{}: duplicate id", r.id);
            assert!(!r.requirement.trim().is_empty(), "{}: no requirement", r.id);
            assert!(
                !r.requirement.contains('\n'),
                "{}: requirement is one line",
                r.id
            );
        }
    }

    #[test]
    fn every_link_is_public_on_an_allowed_host() {
        for r in all() {
            assert!(
                ALLOWED_LINK_PREFIXES.iter().any(|p| r.link.starts_with(p)),
                "{}: link {} is not on an allowed host",
                r.id,
                r.link
            );
            assert!(!r.link.contains(char::is_whitespace), "{}", r.id);
        }
    }

    #[test]
    fn every_rule_a_check_enforces_is_in_the_catalogue() {
        for check in all_checks() {
            assert!(!check.rules().is_empty(), "{} cites no rule", check.id());
            for &n in check.rules() {
                assert!(
                    get(n).is_some(),
                    "{} cites R{n}, not in rules.toml",
                    check.id()
                );
            }
        }
    }

    /// Issue 42, must-4: the grade a check gives follows the rule it cites. Every literal
    /// `fail(R…)` / `warn(R…)` in the checks' sources is read off the text: a `fail` cites a MUST
    /// (or one of the harness's invariants, which are MUSTs), a `warn` a SHOULD or a MAY. A rule
    /// chosen at run time is held to the same by `Problems::add`, which every check test runs.
    #[test]
    fn every_grade_follows_the_keyword_of_the_rule_it_cites() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/checks");
        let mut files = vec![];
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("src/checks") {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let mut seen = 0;
        let mut wrong = vec![];
        for f in files {
            let src = std::fs::read_to_string(&f).expect("source");
            for (grade, needle) in [("fail", ".fail("), ("warn", ".warn(")] {
                for (at, _) in src.match_indices(needle) {
                    let rest = src[at + needle.len()..].trim_start();
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let Ok(n) = digits.parse::<u16>() else {
                        continue; // a rule chosen at run time: Problems::add holds it
                    };
                    seen += 1;
                    let level = get(n).map(|r| r.level);
                    let fits = match grade {
                        "fail" => level == Some(Level::Must),
                        _ => matches!(level, Some(Level::Should | Level::May)),
                    };
                    if !fits {
                        wrong.push(format!("{}: {grade} citing R{n} ({level:?})", f.display()));
                    }
                }
            }
        }
        assert!(seen > 50, "only {seen} graded rule citations found");
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        // Every invariant is a MUST and says so in its sentence (reports print the sentence).
        for r in all().iter().filter(|r| r.invariant.is_some()) {
            assert_eq!(r.level, Level::Must, "{}", r.id);
            assert!(r.requirement.starts_with("Harness invariant"), "{}", r.id);
        }
    }

    #[test]
    fn ids_parse_strictly() {
        assert_eq!(parse_id("R43"), Some(43));
        for bad in ["43", "R", "R4x", "r43", "R-1", "R 4"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_rule_prints_id_level_sentence_and_link() {
        let r = get(43).expect("R43");
        let line = r.to_string();
        assert!(line.starts_with("R43 (MUST) "), "{line}");
        assert!(line.ends_with(&r.link), "{line}");
    }
}
