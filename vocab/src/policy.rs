//! What a client may decide without its user: the declared auto-approval policy
//! (docs/architecture.md §5.5).
//!
//! A client declares it as data, in its profile's `[policy]` table or in its adapter's `hello`
//! (`"policy": {"approves": […], "scope": …, "allowAlways": …}`, CONTROL.md). The harness writes
//! the declaration into the transcript as a `declared_policy` note at the start of every case, so
//! a transcript alone says what its client promised. Undeclared means the client approves nothing
//! by itself; the `auto-approval` check judges every answer the user did not click against it.

use serde::{Deserialize, Serialize};

/// The ACP `ToolKind` vocabulary (schema type `ToolKind`, agentclientprotocol.com
/// "Tool Calls"), the words a policy names kinds in.
pub const TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// One ACP `ToolKind` (schema type `ToolKind`), as a `hello`'s `policy.approves` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

impl ToolKind {
    pub const ALL: [ToolKind; 10] = [
        ToolKind::Read,
        ToolKind::Edit,
        ToolKind::Delete,
        ToolKind::Move,
        ToolKind::Search,
        ToolKind::Execute,
        ToolKind::Think,
        ToolKind::Fetch,
        ToolKind::SwitchMode,
        ToolKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        TOOL_KINDS[ToolKind::ALL.iter().position(|k| *k == self).unwrap_or(9)]
    }
}

/// Where a policy's automatic approvals may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Only tool calls whose every path lies inside the workspace (after `..` and symlinks are
    /// resolved); a URL is never inside.
    #[default]
    Workspace,
    /// Any path.
    Anywhere,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Workspace => "workspace",
            Scope::Anywhere => "anywhere",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "workspace" => Some(Scope::Workspace),
            "anywhere" => Some(Scope::Anywhere),
            _ => None,
        }
    }
}

/// What the client approves by itself. The empty policy (the default) approves nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionPolicy {
    /// Effective tool kinds (ACP `ToolKind`) the client may approve without asking.
    pub approves: Vec<String>,
    pub scope: Scope,
    /// Whether the client may pick an `allow_always` option by itself.
    pub allow_always: bool,
}

/// Where a declaration came from, for messages and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// The client profile's `[policy]`.
    Profile,
    /// The adapter's `hello`.
    Hello,
}

/// A declaration with its origin (what run.json and the `declared_policy` note carry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredPolicy {
    pub source: PolicySource,
    /// The profile policy's `name`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub policy: DecisionPolicy,
}

impl DecisionPolicy {
    /// Checks the words a user wrote: every kind known, no kind twice. The error names the value.
    pub fn new(approves: Vec<String>, scope: Scope, allow_always: bool) -> Result<Self, String> {
        for (i, kind) in approves.iter().enumerate() {
            if !TOOL_KINDS.contains(&kind.as_str()) {
                return Err(format!(
                    "unknown tool kind {kind:?} (ACP ToolKind: {})",
                    TOOL_KINDS.join(", ")
                ));
            }
            if approves[..i].contains(kind) {
                return Err(format!("tool kind {kind:?} is listed twice"));
            }
        }
        Ok(DecisionPolicy {
            approves,
            scope,
            allow_always,
        })
    }

    /// The typed `policy` of a parsed `hello` (the schema already holds it to known words; this
    /// still refuses a kind listed twice).
    pub fn from_hello_policy(policy: &crate::control::HelloPolicy) -> Result<Self, String> {
        let approves = policy
            .approves
            .iter()
            .flatten()
            .map(|k| k.as_str().to_owned())
            .collect();
        Self::new(
            approves,
            policy.scope.unwrap_or_default(),
            policy.allow_always.unwrap_or(false),
        )
    }

    pub fn approves_kind(&self, kind: &str) -> bool {
        self.approves.iter().any(|k| k == kind)
    }

    /// One line for messages and reports: "approves read, search inside the workspace; never
    /// allow_always by itself".
    pub fn describe(&self) -> String {
        if self.approves.is_empty() {
            return "approves nothing by itself".into();
        }
        let scope = match self.scope {
            Scope::Workspace => "inside the workspace",
            Scope::Anywhere => "anywhere",
        };
        let always = if self.allow_always {
            "may pick allow_always by itself"
        } else {
            "never picks allow_always by itself"
        };
        format!("approves {} {scope}; {always}", self.approves.join(", "))
    }
}

impl DeclaredPolicy {
    /// "the policy declared in the client profile (`approve-reads`): approves read …".
    pub fn describe(&self) -> String {
        let origin = match (&self.source, &self.name) {
            (PolicySource::Profile, Some(name)) => format!("the profile's policy `{name}`"),
            (PolicySource::Profile, None) => "the profile's policy".into(),
            (PolicySource::Hello, _) => "the policy declared in the adapter's hello".into(),
        };
        format!("{origin}: {}", self.policy.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn unknown_and_repeated_kinds_are_refused_by_name() {
        let err = DecisionPolicy::new(vec!["raed".into()], Scope::Workspace, false).unwrap_err();
        assert!(
            err.contains("\"raed\"") && err.contains("switch_mode"),
            "{err}"
        );
        let err = DecisionPolicy::new(vec!["read".into(), "read".into()], Scope::Workspace, false)
            .unwrap_err();
        assert!(err.contains("twice"), "{err}");
    }

    fn from_hello(policy: Value) -> Result<DecisionPolicy, String> {
        let typed: crate::control::HelloPolicy =
            serde_json::from_value(policy).map_err(|e| e.to_string())?;
        DecisionPolicy::from_hello_policy(&typed)
    }

    #[test]
    fn hello_policy_reads_camel_case_and_defaults_to_nothing() {
        let p =
            from_hello(json!({"approves":["read","search"],"scope":"anywhere","allowAlways":true}))
                .unwrap();
        assert_eq!(p.approves, ["read", "search"]);
        assert_eq!(p.scope, Scope::Anywhere);
        assert!(p.allow_always);
        let empty = from_hello(json!({})).unwrap();
        assert_eq!(empty, DecisionPolicy::default());
        assert_eq!(empty.describe(), "approves nothing by itself");
        assert!(from_hello(json!({"scope":"home"})).is_err());
        assert!(from_hello(json!({"approves":["read","read"]})).is_err());
    }

    #[test]
    fn tool_kinds_spell_as_acp_does() {
        for kind in ToolKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        }
        let p = from_hello(json!({"approves":["read","search"],"scope":"anywhere"})).unwrap();
        assert_eq!(
            p,
            DecisionPolicy::new(vec!["read".into(), "search".into()], Scope::Anywhere, false)
                .unwrap()
        );
    }

    #[test]
    fn serialises_as_the_hello_spells_it() {
        let p = DecisionPolicy::new(vec!["read".into()], Scope::Workspace, false).unwrap();
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"approves":["read"],"scope":"workspace","allowAlways":false})
        );
    }
}
