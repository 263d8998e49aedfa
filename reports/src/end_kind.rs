//! How a case ended, as run.json's `cases[].end.kind` names it: the kinds of the harness's
//! `acp_vocab::run_end::RunEnd`, under the same names, plus a kind this version does not know
//! (a newer harness's), which is kept and shown as it is instead of failing the whole report.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The `kind` of a case's end.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndKind {
    /// Every step ran.
    Completed,
    /// A step waited for the client in vain, or the user could not do what the scenario asked.
    Incomplete,
    /// The whole case exceeded its time budget.
    Timeout,
    /// The client process died before the scenario ended.
    Crash,
    /// The scenario does not apply (a required capability was not advertised).
    NotApplicable,
    /// The harness itself failed, never the client's fault.
    HarnessError,
    /// The client's control-plane adapter broke control protocol v1.
    AdapterError,
    /// A kind this version does not know, by its name (never one of the names above).
    Unknown(String),
}

impl EndKind {
    /// Every kind this version knows.
    pub const KNOWN: [EndKind; 7] = [
        EndKind::Completed,
        EndKind::Incomplete,
        EndKind::Timeout,
        EndKind::Crash,
        EndKind::NotApplicable,
        EndKind::HarnessError,
        EndKind::AdapterError,
    ];

    /// The name in run.json (`RunEnd`'s serde tag).
    pub fn as_str(&self) -> &str {
        match self {
            EndKind::Completed => "completed",
            EndKind::Incomplete => "incomplete",
            EndKind::Timeout => "timeout",
            EndKind::Crash => "crash",
            EndKind::NotApplicable => "not_applicable",
            EndKind::HarnessError => "harness_error",
            EndKind::AdapterError => "adapter_error",
            EndKind::Unknown(name) => name,
        }
    }

    pub fn is_known(&self) -> bool {
        !matches!(self, EndKind::Unknown(_))
    }
}

/// The kind named `name`; a name no known kind has is [`EndKind::Unknown`].
impl From<String> for EndKind {
    fn from(name: String) -> EndKind {
        EndKind::KNOWN
            .into_iter()
            .find(|k| k.as_str() == name)
            .unwrap_or(EndKind::Unknown(name))
    }
}

impl fmt::Display for EndKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As its name: the bytes run.json had, an unknown kind included.
impl Serialize for EndKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Any name: an unknown one is kept, not an error.
impl<'de> Deserialize<'de> for EndKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EndKind, D::Error> {
        String::deserialize(deserializer).map(EndKind::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_vocab::run_end::RunEnd;

    /// The kind each end has. Does not compile when the harness gets a new end: add its kind to
    /// [`EndKind`] (and to `ends` below).
    fn kind_of(end: &RunEnd) -> EndKind {
        match end {
            RunEnd::Completed => EndKind::Completed,
            RunEnd::Incomplete { .. } => EndKind::Incomplete,
            RunEnd::Timeout { .. } => EndKind::Timeout,
            RunEnd::Crash { .. } => EndKind::Crash,
            RunEnd::NotApplicable { .. } => EndKind::NotApplicable,
            RunEnd::HarnessError { .. } => EndKind::HarnessError,
            RunEnd::AdapterError { .. } => EndKind::AdapterError,
        }
    }

    #[test]
    fn every_run_end_has_its_kind_under_the_name_the_harness_writes() {
        let reason = String::from("r");
        let ends = [
            RunEnd::Completed,
            RunEnd::Incomplete {
                step: 1,
                reason: reason.clone(),
            },
            RunEnd::Timeout {
                after_ms: 1,
                reason: reason.clone(),
            },
            RunEnd::Crash {
                exit_code: None,
                signal: None,
                reason: reason.clone(),
            },
            RunEnd::NotApplicable {
                reason: reason.clone(),
            },
            RunEnd::HarnessError {
                reason: reason.clone(),
            },
            RunEnd::AdapterError { reason },
        ];
        assert_eq!(ends.len(), EndKind::KNOWN.len());
        for end in &ends {
            let json = serde_json::to_value(end).unwrap();
            let kind: EndKind = serde_json::from_value(json["kind"].clone()).unwrap();
            assert_eq!(kind, kind_of(end), "{json}");
            assert!(kind.is_known());
            assert_eq!(serde_json::to_value(&kind).unwrap(), json["kind"]);
        }
    }

    #[test]
    fn an_unknown_kind_keeps_its_name() {
        let kind = EndKind::from("brand_new".to_owned());
        assert_eq!(kind, EndKind::Unknown("brand_new".into()));
        assert_eq!(serde_json::to_string(&kind).unwrap(), r#""brand_new""#);
        assert_eq!(EndKind::from("crash".to_owned()), EndKind::Crash);
    }
}
