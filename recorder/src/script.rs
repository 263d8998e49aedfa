//! Model scripts: what the scripted "model" answers at each step of a turn, in the agent's own
//! tool names (TOML data; docs/recording.md).
//!
//! ```toml
//! description = "read the file, then fix the typo"
//! side_text = "Recorded session"          # answer to side calls (titles, classifiers)
//! [usage]
//! input_tokens = 100
//! output_tokens = 20
//!
//! [[step]]                                # answered when the turn holds 0 tool results
//! tool = "read"
//! args = { filePath = "{proj}/notes.md" }
//!
//! [[step]]                                # 1 tool result so far
//! tool = "apply_patch"                    # a freeform (custom) tool: `input` instead of `args`
//! input = "*** Begin Patch\n…"
//!
//! [[step]]
//! thinking = "The typo is fixed."         # reasoning streamed before the text (Chat Completions
//! text = "Fixed the typo."                # `reasoning_content`; other APIs refuse it)
//! ```
//!
//! The step is chosen by the number of tool results after the last user message of the request,
//! so an agent that repeats or retries a request gets the same answer. A request that offers no
//! tools is a side call (a title, a classifier, a guardian review) and gets `side_text`.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::template::{self, Vars};

/// Placeholders a model script may use (filled when a run starts).
pub const PLACEHOLDERS: &[&str] = &["proj", "outside", "home", "run"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    side_text: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default, rename = "step")]
    steps: Vec<StepFile>,
}

/// The token counts every answer reports.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: 100,
            output_tokens: 20,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    args: Option<toml::Table>,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

/// One tool call the model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    /// The call id; the API's usual shape (`call_1`, `toolu_01…`) when the script gives none.
    pub id: Option<String>,
    pub body: ToolBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolBody {
    /// A function tool's JSON arguments.
    Args(Value),
    /// A freeform (custom) tool's text input (OpenAI Responses `custom_tool_call`).
    Input(String),
}

/// What the model answers at one step: some text, a tool call, or both (text first), with
/// optional reasoning before them.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its place in the script (0 = the first step); side answers have 0.
    pub number: usize,
    pub text: Option<String>,
    /// Reasoning ("thinking") streamed before the text.
    pub thinking: Option<String>,
    pub tool: Option<ToolCall>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub name: String,
    pub description: Option<String>,
    pub side_text: String,
    pub usage: Usage,
    pub steps: Vec<Step>,
}

impl Script {
    /// Reads and checks a script file (placeholders are checked, not filled).
    pub fn load(path: &Path) -> Result<Script> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("model script {}: cannot read it", path.display()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Script::parse(&text, &name).with_context(|| format!("model script {}", path.display()))
    }

    /// Parses a script's text; errors name the key (`step[2].args`) at fault.
    pub fn parse(text: &str, name: &str) -> Result<Script> {
        let file: ScriptFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        if file.steps.is_empty() {
            bail!("no [[step]]: a script needs at least one step");
        }
        let mut steps = Vec::new();
        for (n, step) in file.steps.into_iter().enumerate() {
            let at = format!("step[{n}]");
            let tool = match (step.tool, step.args, step.input) {
                (None, None, None) => None,
                (None, _, _) => bail!("{at}: `args` or `input` without `tool`"),
                (Some(_), Some(_), Some(_)) => {
                    bail!("{at}: both `args` and `input` (a tool takes one)")
                }
                (Some(name), args, input) => {
                    if name.trim().is_empty() {
                        bail!("{at}.tool: empty tool name");
                    }
                    let body = match input {
                        Some(input) => ToolBody::Input(input),
                        None => ToolBody::Args(
                            serde_json::to_value(args.unwrap_or_default())
                                .with_context(|| format!("{at}.args"))?,
                        ),
                    };
                    Some(ToolCall {
                        name,
                        id: step.id,
                        body,
                    })
                }
            };
            if tool.is_none() && step.text.is_none() {
                bail!("{at}: neither `text` nor `tool` (an empty answer)");
            }
            if let Some(text) = &step.text {
                template::check(text, PLACEHOLDERS)
                    .map_err(|e| anyhow::anyhow!("{at}.text: {e}"))?;
            }
            if let Some(thinking) = &step.thinking {
                template::check(thinking, PLACEHOLDERS)
                    .map_err(|e| anyhow::anyhow!("{at}.thinking: {e}"))?;
            }
            if let Some(tool) = &tool {
                let mut texts = Vec::new();
                match &tool.body {
                    ToolBody::Args(v) => template::strings(v, &mut texts),
                    ToolBody::Input(s) => texts.push(s.clone()),
                }
                let key = match tool.body {
                    ToolBody::Args(_) => "args",
                    ToolBody::Input(_) => "input",
                };
                for t in texts {
                    template::check(&t, PLACEHOLDERS)
                        .map_err(|e| anyhow::anyhow!("{at}.{key}: {e}"))?;
                }
            }
            steps.push(Step {
                number: n,
                text: step.text,
                thinking: step.thinking,
                tool,
            });
        }
        Ok(Script {
            name: name.to_string(),
            description: file.description,
            side_text: file.side_text.unwrap_or_else(|| "Recorded session".into()),
            usage: file.usage.unwrap_or_default(),
            steps,
        })
    }

    /// The script with its placeholders filled for one run.
    pub fn filled(&self, vars: &Vars) -> Result<Script> {
        let mut out = self.clone();
        for (n, step) in out.steps.iter_mut().enumerate() {
            for text in [&mut step.text, &mut step.thinking].into_iter().flatten() {
                *text =
                    template::fill(text, vars).map_err(|e| anyhow::anyhow!("step[{n}]: {e}"))?;
            }
            if let Some(tool) = &mut step.tool {
                tool.body = match &tool.body {
                    ToolBody::Args(v) => ToolBody::Args(
                        template::fill_json(v, vars)
                            .map_err(|e| anyhow::anyhow!("step[{n}].args: {e}"))?,
                    ),
                    ToolBody::Input(s) => ToolBody::Input(
                        template::fill(s, vars)
                            .map_err(|e| anyhow::anyhow!("step[{n}].input: {e}"))?,
                    ),
                };
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_steps() {
        let s = Script::parse(
            "[[step]]\ntool = \"read\"\nargs = { filePath = \"{proj}/a\" }\n\
             [[step]]\ntool = \"apply_patch\"\ninput = \"x\"\n[[step]]\nthinking = \"{proj}?\"\ntext = \"done\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(s.steps.len(), 3);
        assert_eq!(s.usage, Usage::default());
        let vars: Vars = [("proj".to_string(), "/p".to_string())].into();
        let f = s.filled(&vars).unwrap();
        assert_eq!(f.steps[2].thinking.as_deref(), Some("/p?"));
        assert_eq!(f.steps[0].thinking, None);
        assert_eq!(
            f.steps[0].tool.as_ref().unwrap().body,
            ToolBody::Args(serde_json::json!({"filePath": "/p/a"}))
        );
    }

    #[test]
    fn errors_name_the_key() {
        let e = Script::parse("[[step]]\ntxt = \"x\"\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("txt"), "{e:#}");
        let e = Script::parse("[[step]]\ntext = \"{nope}\"\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("step[0].text"), "{e:#}");
        assert!(format!("{e:#}").contains("{nope}"), "{e:#}");
        let e = Script::parse(
            "[[step]]\ntext = \"ok\"\n[[step]]\ntool = \"t\"\nargs = { a = \"{homee}\" }\n",
            "t",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("step[1].args"), "{e:#}");
        let e = Script::parse("[[step]]\nargs = { a = 1 }\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("without `tool`"), "{e:#}");
        let e = Script::parse("description = \"x\"\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("no [[step]]"), "{e:#}");
        let e = Script::parse("[[step]]\nthinking = \"{nope}\"\ntext = \"x\"\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("step[0].thinking"), "{e:#}");
        let e = Script::parse("[[step]]\n", "t").unwrap_err();
        assert!(format!("{e:#}").contains("empty answer"), "{e:#}");
    }
}
