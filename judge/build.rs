//! Generates one constant per rule of `rules.toml` (`R43`, …) for the checks to cite, so that a
//! check citing a rule the catalogue does not have does not compile. The catalogue itself is
//! parsed at run time by `src/rules.rs`; this only reads each rule's `id`, `level` and
//! `requirement` lines (one `key = "value"` a line, as the file's header asks).

use std::fmt::Write as _;

fn main() {
    println!("cargo:rerun-if-changed=rules.toml");
    let source = std::fs::read_to_string("rules.toml").expect("judge/rules.toml is readable");
    let mut out = String::new();
    let mut rule: Option<(String, String, String)> = None;
    let flush = |rule: &mut Option<(String, String, String)>, out: &mut String| {
        if let Some((id, level, requirement)) = rule.take() {
            let number: u16 = id
                .strip_prefix('R')
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("rules.toml: id {id:?} is not R<n>"));
            writeln!(out, "/// {id} ({level}): {requirement}").expect("a String");
            writeln!(out, "pub const {id}: RuleId = RuleId({number});").expect("a String");
        }
    };
    for line in source.lines().map(str::trim) {
        if line == "[[rule]]" {
            flush(&mut rule, &mut out);
            rule = Some(Default::default());
            continue;
        }
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        let value = value.trim_matches('"').replace("\\\"", "\"");
        if let Some((id, level, requirement)) = rule.as_mut() {
            match key {
                "id" => *id = value,
                "level" => *level = value,
                "requirement" => *requirement = value,
                _ => {}
            }
        }
    }
    flush(&mut rule, &mut out);
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/rule_ids.rs"), out).expect("OUT_DIR is writable");
}
