//! The directories of one case: made fresh and empty for it alone, removed with everything in it
//! once it is over.
//!
//! Making and removing them costs more than their few system calls suggest: on ext4 without a
//! journal, every new inode is found by skipping, one by one, the inodes freed in the last minute
//! (`recently_deleted`), so after a few thousand cases a `mkdir` walks thousands of freed inodes
//! (docs/performance.md, "Number of cases"). A run therefore makes no directory a case does not
//! use (`home` only for a client whose profile names `{home}`), and `for_each_case` makes the
//! next case's tree (relay socket included) and removes the last one's while other cases run,
//! not on any case's path.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tempfile::TempDir;

use crate::client_spec::ClientSpec;
use crate::relay_listener::RelayListener;

/// A case's tree: `work/` (the workspace), `outside/`, `client/` (the client's process cwd) and,
/// when the client's profile uses it, `home/`; the relay socket goes next to them.
pub struct CaseDirs {
    /// Removes the tree, with whatever the client left in it, when dropped.
    _dir: TempDir,
    /// The tree's canonical path: clients compare what they are given with what they see.
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub outside: PathBuf,
    /// Created only when the client needs it (see [`needs_home`]); the path is the same either
    /// way, and a client whose profile does not name `{home}` is never told it.
    pub home: PathBuf,
    pub client: PathBuf,
    /// The relay's listener when it was bound ahead ([`CaseDirs::listen`]), or why it could not
    /// be; the case reports that error where it would have bound the socket itself.
    listener: Option<std::io::Result<RelayListener>>,
}

impl CaseDirs {
    /// Makes a fresh tree in the system's temporary directory; `home/` only `with_home`.
    pub fn create(with_home: bool) -> Result<CaseDirs> {
        let dir = tempfile::Builder::new()
            .prefix("acp-case-")
            .tempdir()
            .context("cannot create the case's tempdir")?;
        let root = dir.path().canonicalize()?;
        let (workspace, outside) = (root.join("work"), root.join("outside"));
        let (home, client) = (root.join("home"), root.join("client"));
        std::fs::create_dir(&workspace)?;
        std::fs::create_dir(&outside)?;
        if with_home {
            std::fs::create_dir(&home)?;
        }
        std::fs::create_dir(&client)?;
        Ok(CaseDirs {
            _dir: dir,
            root,
            workspace,
            outside,
            home,
            client,
            listener: None,
        })
    }

    /// Binds the relay socket now (needs a tokio runtime), so that the case finds it ready.
    pub fn listen(mut self) -> CaseDirs {
        self.listener = Some(RelayListener::bind(&self.socket()));
        self
    }

    /// The relay's listener: the one bound ahead, else one bound now. Once only.
    pub fn listener(&mut self) -> std::io::Result<RelayListener> {
        match self.listener.take() {
            Some(bound) => bound,
            None => RelayListener::bind(&self.socket()),
        }
    }

    /// Where the relay listens for the agent the client starts.
    pub fn socket(&self) -> PathBuf {
        self.root.join("agent.sock")
    }
}

/// Whether `client`'s profile names `{home}` anywhere (argv, environment, `[files]`, a cancel
/// command …): only then is it given a home directory. Read from the whole spec as serialised,
/// so a setting added later that may name `{home}` is covered without a change here.
pub fn needs_home(client: &ClientSpec) -> bool {
    serde_json::to_string(client).map_or(true, |spec| spec.contains("{home}"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_tree_is_fresh_empty_and_removed_when_dropped() {
        let dirs = CaseDirs::create(true).unwrap();
        let root = dirs.root.clone();
        assert_eq!(entries(&root), ["client", "home", "outside", "work"]);
        for dir in [&dirs.workspace, &dirs.outside, &dirs.home, &dirs.client] {
            assert!(dir.starts_with(&root), "{}", dir.display());
            assert!(entries(dir).is_empty(), "{} is not empty", dir.display());
        }
        let other = CaseDirs::create(true).unwrap();
        assert_ne!(other.root, root, "two cases share a tree");
        std::fs::write(dirs.workspace.join("left-behind"), "x").unwrap();
        drop(dirs);
        assert!(!root.exists(), "{} was not removed", root.display());
    }

    #[tokio::test]
    async fn the_socket_bound_ahead_is_the_one_the_case_gets() {
        let mut ahead = CaseDirs::create(false).unwrap().listen();
        assert!(ahead.socket().exists(), "not bound ahead");
        assert!(ahead.listener().is_ok());
        let mut now = CaseDirs::create(false).unwrap();
        assert!(!now.socket().exists());
        assert!(now.listener().is_ok());
        assert!(now.socket().exists(), "not bound when asked for");
        // Bound twice at one path: the second bind fails, and that error is the case's.
        assert!(now.listener().is_err());
    }

    #[test]
    fn home_is_made_only_when_asked_for() {
        let dirs = CaseDirs::create(false).unwrap();
        assert_eq!(entries(&dirs.root), ["client", "outside", "work"]);
        assert_eq!(dirs.home, dirs.root.join("home"));
    }

    #[test]
    fn a_client_needs_home_when_its_profile_names_it() {
        let plain = ClientSpec::from_argv(vec!["client".into(), "--stdio".into()]).unwrap();
        assert!(!needs_home(&plain));
        let mut in_argv = plain.clone();
        in_argv.argv.push("--home={home}".into());
        assert!(needs_home(&in_argv));
        let mut in_env = plain.clone();
        in_env.env.insert("HOME".into(), "{home}".into());
        assert!(needs_home(&in_env));
        let mut in_files = plain.clone();
        in_files
            .wire
            .files
            .insert("{home}/.config/x.json".into(), "{}".into());
        assert!(needs_home(&in_files));
        let mut in_cancel = plain;
        in_cancel.wire.cancel =
            crate::client_spec::Cancel::Command(vec!["kill-it".into(), "{home}/pid".into()]);
        assert!(needs_home(&in_cancel));
    }
}
