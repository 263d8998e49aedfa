//! `acp-record to-scenario`: turns a recording into a scenario file (scenarios/README.md).
//!
//! The recording is replayed as it happened: every request the client made becomes an `expect`
//! (answered with the agent's recorded result, at the point the agent answered it), every frame
//! the agent sent becomes a `send` (its requests keep their recorded ids and get an `as` name),
//! and every answer the client gave to one of them an `await`. What the person did becomes
//! `user` steps: `new_session`, `set_mode`, `prompt`, `choose` (the option the recording chose),
//! `cancel`. Paths and session ids become templates: `<proj>` → `${cwd}`, `<outside>` →
//! `${outside}`, `<session-1>` → `${sessionId}`. The case's files become `[[setup]]` entries.
//!
//! The other stand-ins of the normaliser (`<home>`, `<run>`, `<install>`, `<agents>`,
//! `<model-url>`, `<proj-dashed>`) have no scenario variable and stay as literal text; opencode's
//! root-relative titles (`<proj:noslash>`, `<outside:noslash>`) become `${cwdFromRoot}` and
//! `${outsideFromRoot}`.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use acp_vocab::method::Method;
use anyhow::{Result, bail};
use regex::Regex;
use serde_json::Value;

use crate::case::Case;
use crate::recording::{Dir, Frame, Recording};

/// Reads the recording at `path` and returns the scenario file's text.
pub fn from_recording(path: &Path) -> Result<String> {
    let rec = Recording::load(path)?;
    let case = find_case(&rec);
    generate(&rec, case.as_ref())
}

/// The case file the recording was made from (`meta.case_file`, found from the repository root
/// above the recording), when it is there.
fn find_case(rec: &Recording) -> Option<Case> {
    let rel = rec
        .meta_str("case_file")
        .map(str::to_string)
        .unwrap_or_else(|| format!("recorder/cases/{}.toml", rec.case));
    let abs = std::fs::canonicalize(&rec.path).ok()?;
    abs.ancestors()
        .map(|a| a.join(&rel))
        .find(|p| p.is_file())
        .and_then(|p| Case::load(&p).ok())
}

/// `recordings/…` part of a path, `/`-separated (the whole path when there is none).
fn repo_relative(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    match text.rfind("recordings/") {
        Some(i) => text[i..].to_string(),
        None => text,
    }
}

/// `1.18.33` → `1.18` (the scenarios' version folders).
fn major_minor(version: &str) -> String {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() >= 2 {
        format!("{}.{}", parts[0], parts[1])
    } else {
        version.to_string()
    }
}

/// A scenario id from a case name: `[a-z0-9-]+`.
fn scenario_id(case: &str) -> String {
    let id: String = case
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() { c } else { '-' }
        })
        .collect();
    let id = id.trim_matches('-').to_string();
    if id.is_empty() { "recorded".into() } else { id }
}

fn family(case: &str) -> &'static str {
    if case.contains("cancel") {
        "cancel"
    } else if case == "read" {
        "tool-calls"
    } else {
        "permissions"
    }
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A frame as a TOML literal string (`'''…'''`, exact error positions), or a basic string when
/// the text cannot be one (it holds `'''` or a control character).
fn toml_frame(s: &str) -> String {
    let literal_ok =
        !s.contains("'''") && !s.ends_with('\'') && !s.chars().any(|c| c.is_control() && c != '\t');
    if literal_ok {
        format!("'''{s}'''")
    } else {
        toml_str(s)
    }
}

/// Recording stand-ins → scenario templates.
struct Templater {
    session: Regex,
    /// Session numbers above 1 that were used (each gets a `[vars]` entry).
    extra_sessions: BTreeSet<u32>,
}

impl Templater {
    fn new() -> Templater {
        Templater {
            session: Regex::new(r"<session-(\d+)>").expect("session regex"),
            extra_sessions: BTreeSet::new(),
        }
    }

    fn text(&mut self, s: &str) -> String {
        let mut out = s.replace("${", "$${");
        if out.contains("<session-") {
            let mut extra = Vec::new();
            out = self
                .session
                .replace_all(&out, |c: &regex::Captures| {
                    let n: u32 = c[1].parse().unwrap_or(0);
                    if n == 1 {
                        "${sessionId}".to_string()
                    } else {
                        extra.push(n);
                        format!("${{session_{n}}}")
                    }
                })
                .into_owned();
            self.extra_sessions.extend(extra);
        }
        out.replace("<proj:noslash>", "${cwdFromRoot}")
            .replace("<outside:noslash>", "${outsideFromRoot}")
            .replace("<proj>", "${cwd}")
            .replace("<outside>", "${outside}")
    }

    fn json(&mut self, v: &Value) -> String {
        let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
        self.text(&text)
    }
}

/// How one request of the recording is referred to.
struct Req {
    alias: String,
    /// Index (in `frames`) of its answer, if it was answered.
    answer: Option<usize>,
}

/// The scenario text for a recording (`case`: its case file, for `[[setup]]`).
pub fn generate(rec: &Recording, case: Option<&Case>) -> Result<String> {
    let frames = &rec.frames;
    if !frames
        .iter()
        .any(|f| f.dir == Dir::ToAgent && f.json.is_some())
    {
        bail!(
            "{}: no frame from the client: nothing to replay",
            rec.path.display()
        );
    }
    let parts: Vec<String> = rec
        .path
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let from_dir = |back: usize| {
        parts
            .len()
            .checked_sub(back)
            .and_then(|i| parts.get(i))
            .cloned()
    };
    let agent = rec
        .meta_str("agent")
        .map(str::to_string)
        .or_else(|| from_dir(2))
        .unwrap_or_else(|| "agent".into());
    let full_version = rec
        .meta_str("version")
        .map(str::to_string)
        .or_else(|| from_dir(1))
        .unwrap_or_else(|| "0".into());
    let package = rec
        .meta_str("package")
        .map(str::to_string)
        .unwrap_or_else(|| agent.clone());
    let script = rec
        .meta_str("model_script")
        .map(str::to_string)
        .unwrap_or_else(|| "an unknown model script (no meta file beside the recording)".into());
    let rel = repo_relative(&rec.path);

    // Requests in both directions and where each was answered.
    let mut reqs: HashMap<usize, Req> = HashMap::new();
    let mut used: HashMap<String, u32> = HashMap::new();
    for (k, f) in frames.iter().enumerate() {
        if !f.is_request() {
            continue;
        }
        let id = f.id().cloned().unwrap_or(Value::Null);
        let answer = frames[k + 1..]
            .iter()
            .position(|g| g.dir != f.dir && g.is_response() && g.id() == Some(&id))
            .map(|p| k + 1 + p);
        let alias = alias_for(f.method().unwrap_or_default(), &mut used);
        reqs.insert(k, Req { alias, answer });
    }
    // answer index → request index
    let answered_by: HashMap<usize, usize> = reqs
        .iter()
        .filter_map(|(k, r)| r.answer.map(|a| (a, *k)))
        .collect();

    let mut t = Templater::new();
    let mut steps = String::new();
    let mut new_session_done = false;
    let mut inline_answers: BTreeSet<usize> = BTreeSet::new();
    let mut requires: BTreeSet<&str> = BTreeSet::new();

    for (k, f) in frames.iter().enumerate() {
        let Some(json) = &f.json else {
            let _ = writeln!(
                steps,
                "# frame {} is not a JSON object and is left out: {}\n",
                f.index,
                f.raw.chars().take(80).collect::<String>()
            );
            continue;
        };
        match f.dir {
            Dir::ToAgent if f.is_request() => {
                let method = f.method().unwrap_or_default();
                let params = f.params().cloned().unwrap_or(Value::Null);
                match Method::parse(method) {
                    Some(Method::Initialize)
                        if !new_session_done
                            && frames[k..].iter().any(|g| {
                                g.dir == Dir::ToAgent
                                    && g.method() == Some(Method::SessionNew.as_str())
                            }) =>
                    {
                        steps += "[[step]]\nuser = \"new_session\"\n\n";
                        new_session_done = true;
                    }
                    Some(Method::SessionNew) => {
                        if !new_session_done {
                            steps += "[[step]]\nuser = \"new_session\"\n\n";
                        }
                        new_session_done = false;
                    }
                    Some(Method::SessionPrompt) => {
                        let text: Vec<&str> = params
                            .get("prompt")
                            .and_then(Value::as_array)
                            .map(|blocks| {
                                blocks
                                    .iter()
                                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let text = t.text(&text.join("\n"));
                        let _ = writeln!(
                            steps,
                            "[[step]]\nuser = \"prompt\"\ntext = {}\n",
                            toml_str(&text)
                        );
                    }
                    Some(Method::SessionSetMode) => {
                        if let Some(mode) = params.get("modeId").and_then(Value::as_str) {
                            let _ = writeln!(
                                steps,
                                "[[step]]\nuser = \"set_mode\"\nmode = {}\n",
                                toml_str(&t.text(mode))
                            );
                        }
                    }
                    Some(Method::SessionSetConfigOption) => {
                        if let (Some(config), Some(value)) = (
                            params.get("configId").and_then(Value::as_str),
                            params.get("value").and_then(Value::as_str),
                        ) {
                            let _ = writeln!(
                                steps,
                                "[[step]]\nuser = \"set_config_option\"\nconfig = {}\nvalue = {}\n",
                                toml_str(&t.text(config)),
                                toml_str(&t.text(value))
                            );
                        }
                    }
                    _ => {}
                }
                let req = &reqs[&k];
                let _ = writeln!(steps, "[[step]]\nexpect = {}", toml_str(method));
                match req.answer {
                    Some(a) if a == k + 1 => {
                        inline_answers.insert(a);
                        steps += &answer_keys(&frames[a], &mut t, "reply", "reply_error");
                    }
                    Some(_) => {
                        let _ = writeln!(steps, "as = {}", toml_str(&req.alias));
                    }
                    None => steps += "# the agent never answered this request\n",
                }
                steps.push('\n');
            }
            Dir::ToAgent if f.is_response() => match answered_by.get(&k) {
                Some(r) => {
                    let _ = writeln!(steps, "[[step]]\nawait = {}\n", toml_str(&reqs[r].alias));
                }
                None => {
                    let _ = writeln!(
                        steps,
                        "# frame {}: the client answered a request the agent never sent; left out\n",
                        f.index
                    );
                }
            },
            Dir::ToAgent => {
                let method = f.method().unwrap_or_default();
                if method == Method::SessionCancel.as_str() {
                    steps += "[[step]]\nuser = \"cancel\"\n";
                    // A permission request sent and not yet answered: Stop was pressed on it.
                    let pending = reqs.iter().filter(|(rk, r)| {
                        **rk < k
                            && frames[**rk].dir == Dir::FromAgent
                            && frames[**rk].method()
                                == Some(Method::SessionRequestPermission.as_str())
                            && r.answer.is_none_or(|a| a > k)
                    });
                    if let Some((_, r)) = pending.min_by_key(|(rk, _)| **rk) {
                        let _ = writeln!(steps, "pending = {}", toml_str(&r.alias));
                    }
                    steps.push('\n');
                }
                if method.is_empty() {
                    let _ = writeln!(
                        steps,
                        "# frame {}: a client message that is neither request, response nor notification; left out\n",
                        f.index
                    );
                } else {
                    let _ = writeln!(steps, "[[step]]\nexpect = {}\n", toml_str(method));
                }
            }
            Dir::FromAgent if f.is_response() => {
                if inline_answers.contains(&k) {
                    continue;
                }
                match answered_by.get(&k) {
                    Some(r) => {
                        let _ = writeln!(
                            steps,
                            "[[step]]\nreply_to = {}\n{}",
                            toml_str(&reqs[r].alias),
                            answer_keys(f, &mut t, "result", "error")
                        );
                    }
                    None => {
                        let _ = writeln!(
                            steps,
                            "# frame {}: the agent answered a request the client never sent; sent as is\n[[step]]\nsend = {}\n",
                            f.index,
                            toml_frame(&t.json(json))
                        );
                    }
                }
            }
            Dir::FromAgent => {
                let method = f.method().unwrap_or_default();
                match Method::parse(method) {
                    Some(Method::FsReadTextFile) => {
                        requires.insert("fs.readTextFile");
                    }
                    Some(Method::FsWriteTextFile) => {
                        requires.insert("fs.writeTextFile");
                    }
                    _ if method.starts_with("terminal/") => {
                        requires.insert("terminal");
                    }
                    _ => {}
                }
                let _ = writeln!(steps, "[[step]]\nsend = {}", toml_frame(&t.json(json)));
                if let Some(req) = reqs.get(&k) {
                    let _ = writeln!(steps, "as = {}", toml_str(&req.alias));
                    steps.push('\n');
                    let chosen = req.answer.and_then(|a| {
                        let outcome = frames[a].json.as_ref()?.pointer("/result/outcome")?;
                        (outcome.get("outcome")?.as_str()? == "selected")
                            .then(|| outcome.get("optionId")?.as_str().map(str::to_string))?
                    });
                    if method == Method::SessionRequestPermission.as_str()
                        && let Some(option) = chosen
                    {
                        let _ = writeln!(
                            steps,
                            "[[step]]\nuser = \"choose\"\nrequest = {}\noption = {}\n",
                            toml_str(&req.alias),
                            toml_str(&t.text(&option))
                        );
                    }
                } else {
                    steps.push('\n');
                }
            }
        }
    }

    // The file.
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Generated by `acp-record to-scenario` from {rel}: a recording of the real\n\
         # {package}@{full_version} (case `{}`), driven by acp-record against a scripted model server.\n\
         # The model's side (tool arguments, texts, token counts) is the model script's ({script});\n\
         # everything the agent adapter added (titles, kinds, options, ids it minted, order, cancel\n\
         # behaviour) is the real agent's. Timing is not replayed.",
        rec.case
    );
    out.push('\n');
    out += "[scenario]\n";
    let _ = writeln!(out, "id = {}", toml_str(&scenario_id(&rec.case)));
    let _ = writeln!(
        out,
        "title = {}",
        toml_str(&format!(
            "{} (recorded from {package}@{full_version})",
            rec.case
        ))
    );
    let _ = writeln!(out, "agent = {}", toml_str(&agent));
    let _ = writeln!(out, "version = {}", toml_str(&major_minor(&full_version)));
    let _ = writeln!(out, "family = {}", toml_str(family(&rec.case)));
    let _ = writeln!(
        out,
        "provenance = [{}]",
        toml_str(&format!(
            "recording of {package}@{full_version}, case {} ({rel}); model script {script}",
            rec.case
        ))
    );
    if !requires.is_empty() {
        let list: Vec<String> = requires.iter().map(|r| toml_str(r)).collect();
        let _ = writeln!(out, "requires = [{}]", list.join(", "));
    }
    if let Some(d) = rec.meta_str("description") {
        let _ = writeln!(out, "description = {}", toml_str(&t.text(d)));
    }
    out.push('\n');
    if !t.extra_sessions.is_empty() {
        out += "[vars]\n";
        for n in &t.extra_sessions {
            let _ = writeln!(out, "session_{n} = \"sess_{n}\"");
        }
        out.push('\n');
    }
    if let Some(case) = case {
        for (path, content) in &case.files {
            let Some(target) = run_path_template(path) else {
                continue;
            };
            let _ = writeln!(
                out,
                "[[setup]]\nfile = {}\ncontent = {}\n",
                toml_str(&target),
                toml_str(&content.replace("${", "$${"))
            );
        }
        for (link, target) in &case.symlinks {
            let (Some(link), Some(target)) = (run_path_template(link), run_path_template(target))
            else {
                continue;
            };
            let _ = writeln!(
                out,
                "[[setup]]\nsymlink = {}\ntarget = {}\n",
                toml_str(&link),
                toml_str(&target)
            );
        }
    }
    out += &steps;
    Ok(out.trim_end().to_string() + "\n")
}

/// A case's run-relative path as a scenario template: `proj/a` → `${cwd}/a`, `outside/a` →
/// `${outside}/a`, a sibling `proj-old/a` → `${cwd}-old/a`.
fn run_path_template(path: &str) -> Option<String> {
    // The folders a case may use are the case's to say (`case::in_run`); this only spells them.
    if !crate::case::in_run(path, true) {
        return None;
    }
    let (top, rest) = match path.split_once('/') {
        Some((top, rest)) => (top, format!("/{rest}")),
        None => (path, String::new()),
    };
    // `proj` or a sibling `proj-<name>`: the rest of the folder's name follows `${cwd}`.
    Some(match top.strip_prefix("proj") {
        Some(sibling) => format!("${{cwd}}{sibling}{rest}"),
        None => format!("${{outside}}{rest}"),
    })
}

/// An `as` name for a request: the method's last segment (`session/prompt` → `prompt`,
/// `session/request_permission` → `perm`), numbered from the second of a kind on.
fn alias_for(method: &str, used: &mut HashMap<String, u32>) -> String {
    let last = method.rsplit('/').next().unwrap_or(method);
    let base = match last {
        "request_permission" => "perm".to_string(),
        "" => "request".to_string(),
        other => other
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect(),
    };
    let n = used.entry(base.clone()).or_insert(0);
    *n += 1;
    if *n == 1 { base } else { format!("{base}_{n}") }
}

/// `reply = …` / `reply_error = …` (or `result` / `error`) for a recorded response.
fn answer_keys(frame: &Frame, t: &mut Templater, ok: &str, err: &str) -> String {
    let json = frame.json.as_ref();
    if let Some(e) = json.and_then(|j| j.get("error")) {
        format!("{err} = {}\n", toml_frame(&t.json(e)))
    } else {
        let result = json
            .and_then(|j| j.get("result"))
            .cloned()
            .unwrap_or(Value::Null);
        format!("{ok} = {}\n", toml_frame(&t.json(&result)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_paths_become_templates() {
        assert_eq!(run_path_template("proj/a.md").unwrap(), "${cwd}/a.md");
        assert_eq!(run_path_template("outside").unwrap(), "${outside}");
        assert_eq!(run_path_template("proj-old/a").unwrap(), "${cwd}-old/a");
        assert_eq!(run_path_template("home/a"), None);
        assert_eq!(run_path_template("projx/a"), None);
    }

    #[test]
    fn strings_and_ids() {
        assert_eq!(toml_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(toml_frame("{\"a\":1}"), "'''{\"a\":1}'''");
        assert!(toml_frame("{\"a\":\"'''\"}").starts_with('"'));
        assert_eq!(scenario_id("Edit_Reject"), "edit-reject");
        assert_eq!(major_minor("1.18.33"), "1.18");
        let mut t = Templater::new();
        assert_eq!(
            t.text("<proj>/a <outside>/b <session-1> <session-2> ${x}"),
            "${cwd}/a ${outside}/b ${sessionId} ${session_2} $${x}"
        );
        assert_eq!(t.extra_sessions.iter().copied().collect::<Vec<_>>(), [2]);
    }
}
