//! What `{program}` stands for in a client profile: the variable the profile names, else the
//! copy `acp-harness install` put in the cache, else the profile's own `program`.

use std::path::Path;

use anyhow::Result;

use super::profile::ProfileFile;

/// `{program}`'s value: `$program_env` if set; else the copy `acp-harness install` put in the
/// cache for the profile's `[install]`, if it is there (the version the profile and its
/// baseline were written for); else `program` (relative paths against the profile's folder,
/// a bare name from `PATH`).
pub(super) fn resolve_program(file: &ProfileFile, path: &Path) -> Result<Option<String>> {
    resolve_program_in(file, path, super::install::cache_dir().as_deref())
}

/// [`resolve_program`] with the cache it looks in.
fn resolve_program_in(
    file: &ProfileFile,
    path: &Path,
    cache: Option<&Path>,
) -> Result<Option<String>> {
    if let Some(var) = &file.program_env {
        if let Ok(value) = std::env::var(var) {
            if !value.trim().is_empty() {
                return Ok(Some(value));
            }
        }
    }
    let installed = file
        .install
        .as_ref()
        .zip(cache)
        .map(|(install, cache)| install.program(cache))
        .filter(|program| program.is_file());
    if let Some(program) = installed {
        return Ok(Some(program.to_string_lossy().into_owned()));
    }
    let Some(program) = &file.program else {
        return match &file.program_env {
            Some(var) => Err(anyhow::anyhow!(
                "{}: set {var} to the client's program (the profile names no default `program`)",
                path.display()
            )),
            None => Ok(None),
        };
    };
    Ok(Some(relative_to(program, path)))
}

/// `./x` and `../x` relative to the profile's folder, made absolute: the client, its cancel
/// command and its observer program run in the case's directories, where a path relative to the
/// harness's working directory (`--client clients/x/x.toml`) names nothing. Anything else as
/// written.
pub(super) fn relative_to(program: &str, profile: &Path) -> String {
    if program.starts_with("./") || program.starts_with("../") {
        let base = match profile.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        base.join(program).to_string_lossy().into_owned()
    } else {
        program.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_spec::profile::read;

    /// A profile whose client is installed in the cache runs that copy (the version its
    /// baseline was written for) without a variable to point at it; `$program_env` still wins.
    #[test]
    fn the_installed_copy_in_the_cache_is_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cli.toml");
        let var = "ACP_HARNESS_TEST_PROGRAM_c41e";
        std::fs::write(
            &path,
            format!(
                r#"name = "cli"
program = "cli"
program_env = "{var}"
argv = ["{{program}}", "--agent", "{{agent}}", "{{prompt}}"]
control = "none"
install = {{ npm = "cli@1.0.0", bin = "node_modules/.bin/cli" }}
"#
            ),
        )
        .unwrap();
        let file = read(&path).unwrap();
        let cache = dir.path().join("cache");
        let resolve = || resolve_program_in(&file, &path, Some(&cache)).unwrap();
        assert_eq!(
            resolve().as_deref(),
            Some("cli"),
            "not installed: from PATH"
        );
        let installed = cache.join("cli@1.0.0/node_modules/.bin/cli");
        std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
        std::fs::write(&installed, "#!/bin/sh\n").unwrap();
        assert_eq!(resolve(), Some(installed.to_string_lossy().into_owned()));
        // SAFETY: only this test reads or writes this variable.
        unsafe { std::env::set_var(var, "/opt/cli") };
        let chosen = resolve();
        unsafe { std::env::remove_var(var) };
        assert_eq!(chosen.as_deref(), Some("/opt/cli"));
    }
}
