//! Which recorded package versions prove the scenarios of a modelled version: those of the same
//! minor version (`0.21.10` for `0.21`) and, for a modelled version with no release of its own on
//! npm, the nearest published release named here (recordings/README.md says why for each).

/// (`agent@version` of the scenarios, the recorded package version that stands in for it).
pub const STAND_INS: &[(&str, &str)] = &[
    // npm has no 0.14.x of @qwen-code/qwen-code: 0.12.0, then 0.15.6.
    ("qwen-code@0.14", "0.15.6"),
];

/// A recording of `agent` at package version `recorded` proves the scenarios of `agent@version`.
pub fn proves(agent: &str, version: &str, recorded: &str) -> bool {
    recorded == version
        || recorded.starts_with(&format!("{version}."))
        || STAND_INS
            .iter()
            .any(|(key, v)| *key == format!("{agent}@{version}") && *v == recorded)
}
