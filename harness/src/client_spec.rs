//! The client under test: an argv array, or a client profile (TOML) that says how to launch it.
//!
//! `ACP_HARNESS_CLIENT` and `--client` accept either form: a JSON array of strings
//! (`["./my-client","--adapter"]`) is an adapter-bearing client; anything else is read as the
//! path of a client profile (format: clients/README.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// How the harness drives a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlMode {
    /// The client ships an adapter speaking control protocol v1 on its stdin/stdout.
    Adapter,
    /// Wire only: the client gets its prompt from argv and answers by its own policy.
    None,
}

/// A fully resolved client to launch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientSpec {
    /// Short name for reports (profile `name`, or the argv's file name).
    pub name: String,
    /// argv template; may contain `{agent}`, `{agent_argv}`, `{prompt}`, `{cwd}`.
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub control: ControlMode,
    /// Where the spec came from, verbatim (for the repro line).
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    argv: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default = "default_control")]
    control: ControlMode,
}

fn default_control() -> ControlMode {
    ControlMode::Adapter
}

impl ClientSpec {
    /// An adapter-bearing client given as an argv array.
    pub fn from_argv(argv: Vec<String>) -> Result<Self> {
        let Some(first) = argv.first() else {
            bail!("the client argv is empty");
        };
        let name = Path::new(first)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| first.clone());
        let source = serde_json::to_string(&argv).unwrap_or_default();
        Ok(ClientSpec {
            name,
            argv,
            env: BTreeMap::new(),
            control: ControlMode::Adapter,
            source,
        })
    }

    /// Parses `--client` / `ACP_HARNESS_CLIENT`: a JSON argv array or a profile path.
    pub fn parse(text: &str) -> Result<Self> {
        let trimmed = text.trim();
        if trimmed.starts_with('[') {
            let argv: Vec<String> = serde_json::from_str(trimmed).with_context(|| {
                format!("client {trimmed:?} looks like a JSON array but is not an array of strings")
            })?;
            return Self::from_argv(argv);
        }
        Self::from_profile(Path::new(trimmed))
    }

    /// Reads a client profile file; relative argv[0] paths resolve against the profile's folder.
    pub fn from_profile(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read client profile {} (a client is a JSON argv array or a profile path)",
                path.display()
            )
        })?;
        let file: ProfileFile = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
        if file.argv.is_empty() {
            bail!("{}: argv must not be empty", path.display());
        }
        let mut argv = file.argv;
        if argv[0].starts_with("./") || argv[0].starts_with("../") {
            let base = path.parent().unwrap_or(Path::new("."));
            argv[0] = base.join(&argv[0]).to_string_lossy().into_owned();
        }
        Ok(ClientSpec {
            name: file.name,
            argv,
            env: file.env,
            control: file.control,
            source: path.display().to_string(),
        })
    }

    /// The reference client, located (and built if needed) in the workspace.
    pub fn reference() -> Result<Self> {
        let path: PathBuf = crate::locate::locate(crate::locate::REFERENCE_CLIENT)?;
        let mut spec = Self::from_argv(vec![path.to_string_lossy().into_owned()])?;
        spec.name = "acp-reference-client".into();
        spec.source = "reference".into();
        Ok(spec)
    }

    /// A mutant of the reference client (see clients/README.md).
    pub fn mutant(name: &str) -> Result<Self> {
        let mut spec = Self::reference()?;
        spec.argv.extend(["--mutant".to_string(), name.to_string()]);
        spec.name = format!("acp-reference-client --mutant {name}");
        spec.source = format!("mutant:{name}");
        Ok(spec)
    }

    /// Resolves the `--client` argument or `ACP_HARNESS_CLIENT`, defaulting to the reference
    /// client. `reference` and `mutant:<name>` are accepted as shorthands.
    pub fn resolve(arg: Option<&str>) -> Result<Self> {
        let from_env = std::env::var("ACP_HARNESS_CLIENT").ok();
        match arg.or(from_env.as_deref()).map(str::trim) {
            None | Some("") | Some("reference") => Self::reference(),
            Some(s) if s.starts_with("mutant:") => Self::mutant(&s["mutant:".len()..]),
            Some(s) => Self::parse(s),
        }
    }

    /// The argv to execute, with placeholders filled.
    pub fn expand_argv(&self, agent_argv: &[String], prompt: &str, cwd: &Path) -> Vec<String> {
        let agent_line = agent_argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let mut out = Vec::new();
        for arg in &self.argv {
            if arg == "{agent_argv}" {
                out.extend(agent_argv.iter().cloned());
                continue;
            }
            out.push(
                arg.replace("{agent}", &agent_line)
                    .replace("{prompt}", prompt)
                    .replace("{cwd}", &cwd.to_string_lossy()),
            );
        }
        out
    }
}

/// POSIX shell quoting, for `{agent}` (clients that take the agent as one command string).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_argv_is_an_adapter_client() {
        let spec = ClientSpec::parse(r#"["./c","--x"]"#).unwrap();
        assert_eq!(spec.argv, ["./c", "--x"]);
        assert_eq!(spec.control, ControlMode::Adapter);
    }

    #[test]
    fn malformed_json_argv_is_a_clear_error() {
        let err = ClientSpec::parse(r#"["./c", 3]"#).unwrap_err();
        assert!(format!("{err:#}").contains("array of strings"), "{err:#}");
    }

    #[test]
    fn missing_profile_names_the_path() {
        let err = ClientSpec::parse("/nonexistent/profile.toml").unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/profile.toml"));
    }

    #[test]
    fn placeholders_expand() {
        let spec = ClientSpec::from_argv(vec![
            "c".into(),
            "--agent".into(),
            "{agent}".into(),
            "exec".into(),
            "{prompt}".into(),
            "{agent_argv}".into(),
        ])
        .unwrap();
        let argv = spec.expand_argv(
            &["/bin/fake agent".into(), "--connect".into(), "/s".into()],
            "hi there",
            Path::new("/w"),
        );
        assert_eq!(
            argv,
            [
                "c",
                "--agent",
                "'/bin/fake agent' --connect /s",
                "exec",
                "hi there",
                "/bin/fake agent",
                "--connect",
                "/s"
            ]
        );
    }

    #[test]
    fn shell_quote_escapes_single_quotes() {
        assert_eq!(shell_quote("it's"), r#"'it'\''s'"#);
        assert_eq!(shell_quote("plain"), "plain");
    }
}
