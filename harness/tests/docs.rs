//! The documentation is current and its links resolve.
//!
//! * The checks table of docs/checks.md is rendered from the checks (`acp_judge::checks::all_checks`:
//!   id, requirement, whether the check needs to know what the user saw, the rules it cites) and
//!   the real-client table of docs/clients.md from the client profiles
//!   (`clients/<name>/<name>.toml` with an `[install]`). Each sits between
//!   `<!-- generated: NAME … -->` and `<!-- end generated: NAME -->`; a committed table that
//!   differs fails, and `ACP_WRITE_DOCS=1 cargo test -p acp-harness --test docs` rewrites it.
//! * Every check has a section of its own in docs/checks.md, and no section names a check that
//!   does not exist.
//! * Every relative link of README.md, CONTRIBUTING.md, fuzz/README.md and docs/**/*.md names a
//!   file or folder of the repository, and an anchor into a Markdown file names one of its
//!   headings (as GitHub spells them).
//! * No document cites a path of one machine.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use acp_harness::client_spec::{ClientSpec, Install};
use acp_judge::checks::all_checks;
use regex::Regex;

const WRITE_VAR: &str = "ACP_WRITE_DOCS";
const CHECKS_DOC: &str = "docs/checks.md";
const CLIENTS_DOC: &str = "docs/clients.md";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness crate sits in the workspace")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// `doc` with the text between the markers of generated section `name` replaced by `body`.
fn splice(doc: &str, name: &str, body: &str) -> Result<String, String> {
    let start = format!("<!-- generated: {name} ");
    let end = format!("<!-- end generated: {name} -->");
    let from = doc
        .find(&start)
        .ok_or_else(|| format!("no `{start} … -->` marker"))?;
    let body_from = doc[from..]
        .find('\n')
        .map(|i| from + i + 1)
        .ok_or_else(|| format!("nothing after the `{start}` marker"))?;
    let to = doc[body_from..]
        .find(&end)
        .map(|i| body_from + i)
        .ok_or_else(|| format!("no `{end}` marker after `{start}`"))?;
    Ok(format!("{}{body}{}", &doc[..body_from], &doc[to..]))
}

/// Checks the generated section `name` of `relative` against `body`, or rewrites it under
/// [`WRITE_VAR`].
fn assert_current(relative: &str, name: &str, body: &str) {
    let now = read(relative);
    let want = splice(&now, name, body).unwrap_or_else(|e| panic!("{relative}: {e}"));
    if std::env::var_os(WRITE_VAR).is_some() {
        if want != now {
            // Written beside and renamed, so that the link test, which reads every document at
            // the same time, never sees half a file.
            let path = repo_root().join(relative);
            let fresh = path.with_extension("md.new");
            std::fs::write(&fresh, &want)
                .and_then(|()| std::fs::rename(&fresh, &path))
                .unwrap_or_else(|e| panic!("cannot write {relative}: {e}"));
        }
        return;
    }
    assert!(
        want == now,
        "the `{name}` table of {relative} is not current: run {WRITE_VAR}=1 cargo test -p acp-harness --test docs"
    );
}

/// A table cell: one line, `|` escaped, `<` and `>` as entities (GitHub would take `<prompt>`
/// for an HTML tag and drop it), `—` for nothing.
fn cell(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return "—".to_owned();
    }
    line.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `[56, 57, 58, 59, 190]` → `R56–R59, R190`.
fn rule_ranges(numbers: &[u16]) -> String {
    let mut sorted = numbers.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for n in sorted {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == n => *last = n,
            _ => runs.push((n, n)),
        }
    }
    runs.iter()
        .map(|&(a, b)| match b - a {
            0 => format!("R{a}"),
            1 => format!("R{a}, R{b}"),
            _ => format!("R{a}–R{b}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn checks_table() -> String {
    let mut out = String::from(
        "| check | what your client must do | without an adapter | rules |\n|---|---|---|---|\n",
    );
    for check in all_checks() {
        let without = if !check.needs_control_plane() {
            "from the wire".to_owned()
        } else if check.observable_with().is_empty() {
            "`not_applicable` (needs an adapter)".to_owned()
        } else {
            let events: Vec<String> = check
                .observable_with()
                .iter()
                .map(|e| format!("`{e}`"))
                .collect();
            format!("with an observer reporting {}", events.join(", "))
        };
        let cited: BTreeSet<&str> = check
            .rules()
            .iter()
            .filter_map(|&n| n.rule())
            .map(|r| {
                if r.invariant.is_some() {
                    "invariant"
                } else {
                    r.level.as_str()
                }
            })
            .collect();
        let levels: Vec<&str> = ["MUST", "SHOULD", "MAY", "invariant"]
            .into_iter()
            .filter(|l| cited.contains(l))
            .collect();
        let id = check.id();
        writeln!(
            out,
            "| [`{id}`](#{id}) | {} | {without} | {} ({}) |",
            cell(check.requirement()),
            rule_ranges(&check.rules().iter().map(|r| r.number()).collect::<Vec<_>>()),
            levels.join(", ")
        )
        .expect("write to a String");
    }
    out
}

#[test]
fn the_checks_table_is_current() {
    for check in all_checks() {
        for &n in check.rules() {
            assert!(
                n.rule().is_some(),
                "{} cites {n}, which judge/rules.toml does not hold",
                check.id()
            );
        }
    }
    assert_current(CHECKS_DOC, "checks", &checks_table());
}

#[test]
fn every_check_has_a_section_and_no_section_names_a_missing_check() {
    let doc = read(CHECKS_DOC);
    let sections: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.strip_suffix('`'))
        .map(str::to_owned)
        .collect();
    let checks: BTreeSet<String> = all_checks().iter().map(|c| c.id().to_owned()).collect();
    let missing: Vec<&String> = checks.difference(&sections).collect();
    let stale: Vec<&String> = sections.difference(&checks).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{CHECKS_DOC}: checks without a `### `<id>`` section: {missing:?}; sections naming no check: {stale:?}"
    );
}

/// The registry page of an installed package, and how the cell names the package.
fn package(install: &Install) -> (String, String) {
    if let Some(spec) = &install.npm {
        let (name, version) = spec.rsplit_once('@').unwrap_or((spec, ""));
        (
            format!("https://www.npmjs.com/package/{name}/v/{version}"),
            format!("npm `{spec}`"),
        )
    } else if let Some(spec) = &install.pypi {
        let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
        let mut what = format!("PyPI `{spec}`");
        if !install.pip_args.is_empty() {
            write!(what, " with `{}`", install.pip_args.join(" ")).expect("write to a String");
        }
        (format!("https://pypi.org/project/{name}/{version}/"), what)
    } else {
        let spec = install.cargo.as_deref().unwrap_or_default();
        let (name, version) = spec.split_once('@').unwrap_or((spec, ""));
        (
            format!("https://crates.io/crates/{name}/{version}"),
            format!("crates.io `{spec}` (built from source)"),
        )
    }
}

/// Links to the files of `dir` whose names `keep` accepts, relative to docs/.
fn file_links(dir: &Path, folder: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list clients/{folder}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml") && keep(n.as_str()))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| format!("[{n}](../clients/{folder}/{n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn real_client_table() -> String {
    let root = repo_root();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join("clients"))
        .expect("list clients/")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut out = String::from(
        "| client | installed from | how it runs (its main profile) | its policy | its program, once installed | profiles | baselines | test |\n|---|---|---|---|---|---|---|---|\n",
    );
    for dir in folders {
        let folder = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a folder name in UTF-8")
            .to_owned();
        let main = dir.join(format!("{folder}.toml"));
        if !main.is_file() {
            continue;
        }
        let spec = ClientSpec::from_profile_with_program(&main, "client")
            .unwrap_or_else(|e| panic!("clients/{folder}/{folder}.toml: {e:#}"));
        let Some(install) = &spec.wire.install else {
            continue;
        };
        let (page, what) = package(install);
        // `{program}` comes from the variable `program_env` names (else `program` on PATH), so
        // `run --client` finds an installed client through that variable.
        let text = std::fs::read_to_string(&main).expect("read the profile");
        let table: toml::Table = toml::from_str(&text).expect("the profile is TOML");
        let installed = install.program(Path::new("~/.cache/acp-harness"));
        let program = match table.get("program_env").and_then(|v| v.as_str()) {
            Some(var) => format!("`{var}={}`", installed.display()),
            None => format!("`{}`", installed.display()),
        };
        let is_baseline = |n: &str| n.contains("baseline");
        let test = format!("harness/tests/real_clients/{}.rs", folder.replace('-', "_"));
        let test = if root.join(&test).is_file() {
            format!("[{test}](../{test})")
        } else {
            "none".to_owned()
        };
        writeln!(
            out,
            "| [{}]({page}) | {what} | {} | {} | {program} | {} | {} | {test} |",
            spec.name,
            cell(spec.wire.about.as_deref().unwrap_or("")),
            spec.wire
                .policy
                .as_ref()
                .map(|p| format!("`{}`", p.name))
                .unwrap_or_else(|| "none".to_owned()),
            file_links(&dir, &folder, |n| !is_baseline(n)),
            file_links(&dir, &folder, is_baseline),
        )
        .expect("write to a String");
    }
    out
}

#[test]
fn the_real_client_table_is_current() {
    let table = real_client_table();
    assert!(
        table.lines().count() > 2,
        "no profile clients/<name>/<name>.toml has an [install]: wrong root?"
    );
    assert_current(CLIENTS_DOC, "real-clients", &table);
}

/// The check ids a mutant row of clients/README.md names in its last column ("fails"): the
/// backticked words that are check ids (the column may add words of its own).
fn readme_mutant_rows(readme: &str) -> Vec<(String, BTreeSet<String>)> {
    let ids: BTreeSet<&str> = all_checks().iter().map(|c| c.id()).collect();
    let code = Regex::new("`([^`]+)`").expect("regex");
    let section = readme
        .split("## The mutants")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.strip_prefix("| `")?.split(" | ").collect();
            let name = cells.first()?.trim_end_matches('`').to_owned();
            if name.starts_with('-') {
                return None; // the header row
            }
            let fails = code
                .captures_iter(cells.last()?)
                .map(|c| c[1].to_owned())
                .filter(|id| ids.contains(id.as_str()))
                .collect();
            Some((name, fails))
        })
        .collect()
}

/// The mutant → checks table is kept once, in the reference client (`Mutant::checks`); the
/// README's table of the mutants says the same, row for row.
#[test]
fn the_readme_names_each_mutants_checks_as_the_client_does() {
    use acp_reference_client::mutation::Mutant;
    let rows = readme_mutant_rows(&read("clients/README.md"));
    let mut wrong = Vec::new();
    for m in Mutant::ALL {
        let want: BTreeSet<String> = m.checks().iter().map(|c| c.to_string()).collect();
        match rows.iter().find(|(name, _)| name == m.name()) {
            None => wrong.push(format!("{}: no row", m.name())),
            Some((_, got)) if *got != want => wrong.push(format!(
                "{}: the README says {got:?}, the client {want:?}",
                m.name()
            )),
            Some(_) => {}
        }
    }
    for (name, _) in &rows {
        if Mutant::ALL.iter().all(|m| m.name() != name) {
            wrong.push(format!(
                "{name}: a row for a mutant the client does not ship"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "clients/README.md, \"The mutants\", disagrees with clients/reference/src/mutation/checks.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_readme_row_that_names_other_checks_is_found() {
    let readme = "## The mutants\n\n| `--mutant` | a | b | fails |\n|---|---|---|---|\n| `always-command` | x | y | `subject-kind`, `fs` (a note) |\n\n## Next\n| `z` | q |\n";
    let rows = readme_mutant_rows(readme);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, "always-command");
    let want: BTreeSet<String> = ["fs", "subject-kind"].map(String::from).into();
    assert_eq!(rows[0].1, want);
}

/// The documents whose links are checked, relative to the repository's root.
fn documents() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(root).expect("below the root");
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let root = repo_root();
    let mut out = vec![
        "README.md".to_owned(),
        "CONTRIBUTING.md".to_owned(),
        "fuzz/README.md".to_owned(),
    ];
    walk(&root.join("docs"), &root, &mut out);
    out.sort();
    out
}

/// The lines of `text` outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: link syntax reduced to its text, lower case, spaces
/// to `-`, every other character that is not a letter, digit, `-` or `_` dropped.
fn slug(heading: &str) -> String {
    let links = Regex::new(r"\[([^\]]*)\]\([^)]*\)").expect("regex");
    let text = links.replace_all(heading, "$1");
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text: its headings (a repeated one numbered `-1`, `-2`, … as
/// GitHub does) and explicit `id="…"` / `name="…"` attributes.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let heading = Regex::new(r"^#{1,6}\s+(.*?)\s*#*\s*$").expect("regex");
    let attribute = Regex::new(r#"(?:id|name)="([^"]+)""#).expect("regex");
    for (_, line) in prose_lines(text) {
        if let Some(h) = heading.captures(line) {
            let base = slug(&h[1]);
            let mut name = base.clone();
            let mut n = 0;
            while out.contains(&name) {
                n += 1;
                name = format!("{base}-{n}");
            }
            out.insert(name);
        }
        for a in attribute.captures_iter(line) {
            out.insert(a[1].to_owned());
        }
    }
    out
}

/// The link targets of a Markdown text with their line numbers: inline links and images, and
/// reference definitions; code blocks and code spans left out.
fn links(text: &str) -> Vec<(usize, String)> {
    let code = Regex::new(r"`[^`]*`").expect("regex");
    let inline = Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).expect("regex");
    let definition = Regex::new(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)").expect("regex");
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        let line = code.replace_all(line, "``");
        for c in inline.captures_iter(&line) {
            out.push((n, c[1].to_owned()));
        }
        if let Some(c) = definition.captures(&line) {
            out.push((n, c[1].to_owned()));
        }
    }
    out
}

/// Why `target`, linked from `doc`, does not resolve; `None` when it does or is not relative.
fn broken(root: &Path, doc: &str, target: &str) -> Option<String> {
    let external = ["http://", "https://", "mailto:"];
    if external.iter().any(|p| target.starts_with(p)) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        root.join(doc)
    } else if let Some(absolute) = path.strip_prefix('/') {
        root.join(absolute)
    } else {
        root.join(doc)
            .parent()
            .expect("a document has a folder")
            .join(path)
    };
    if !file.exists() {
        return Some(format!(
            "{} does not exist",
            file.strip_prefix(root).unwrap_or(&file).display()
        ));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if file.extension().and_then(|e| e.to_str()) != Some("md") {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    (!anchors(&text).contains(anchor)).then(|| format!("no heading makes the anchor #{anchor}"))
}

#[test]
fn every_relative_link_resolves() {
    let root = repo_root();
    let docs = documents();
    assert!(
        docs.iter().any(|d| d == "docs/checks.md"),
        "the walk did not find docs/checks.md: wrong root"
    );
    let mut problems = Vec::new();
    for doc in &docs {
        let Ok(text) = std::fs::read_to_string(root.join(doc)) else {
            problems.push(format!("{doc}: cannot be read"));
            continue;
        };
        for (line, target) in links(&text) {
            if let Some(why) = broken(&root, doc, &target) {
                problems.push(format!("{doc}:{line}: ({target}): {why}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} link(s) do not resolve:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn no_document_cites_a_path_of_one_machine() {
    // Built with `concat!` so that this file does not match itself.
    let machine = [
        concat!("/wo", "rk/"),
        concat!("/ro", "ot/"),
        concat!("/ho", "me/"),
        concat!("..", "/shared"),
    ];
    let root = repo_root();
    let mut problems = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(root.join(&doc)).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if machine.iter().any(|m| line.contains(m)) {
                problems.push(format!("{doc}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "documents cite paths of one machine; cite the repository's own paths or a public source:\n{}",
        problems.join("\n")
    );
}

#[test]
fn anchors_are_spelled_as_github_spells_them() {
    assert_eq!(slug("5.4 stable-item-type"), "54-stable-item-type");
    assert_eq!(
        slug("Full-screen clients (`[tui]`)"),
        "full-screen-clients-tui"
    );
    assert_eq!(slug("`subject-kind`"), "subject-kind");
    assert_eq!(slug("See [the table](x.md) here"), "see-the-table-here");
    let text = "# A\n## A\n```\n# not a heading\n```\n<a id=\"here\"></a>\n";
    let found = anchors(text);
    assert_eq!(
        found,
        ["a", "a-1", "here"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "see [a](x.md#b) and `[c](not.md)`\n```\n[d](code.md)\n```\n[e]: ref.md\n![img](pic.png \"title\")\n";
    let found: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(found, ["x.md#b", "ref.md", "pic.png"]);
}

#[test]
fn a_broken_link_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.md"), "# Top\n").expect("write");
    let root = dir.path();
    assert_eq!(broken(root, "a.md", "a.md#top"), None);
    assert_eq!(broken(root, "a.md", "#top"), None);
    assert_eq!(broken(root, "a.md", "https://example.org/x"), None);
    assert!(broken(root, "a.md", "a.md#bottom").is_some());
    assert!(broken(root, "a.md", "missing.md").is_some());
}

#[test]
fn a_generated_section_is_replaced_between_its_markers() {
    let doc = "before\n<!-- generated: t (how) -->\nold\n<!-- end generated: t -->\nafter\n";
    assert_eq!(
        splice(doc, "t", "new\n").as_deref(),
        Ok("before\n<!-- generated: t (how) -->\nnew\n<!-- end generated: t -->\nafter\n")
    );
    assert!(splice("no markers", "t", "x").is_err());
    assert_eq!(
        rule_ranges(&[59, 56, 57, 58, 190, 7, 8]),
        "R7, R8, R56–R59, R190"
    );
    assert_eq!(cell("yopo <prompt>\n | x"), "yopo &lt;prompt&gt; \\| x");
    assert_eq!(cell("  "), "—");
}
