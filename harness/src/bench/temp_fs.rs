//! The filesystem the cases' directories go on (the system's temporary directory), named in the
//! benchmark's output because it shapes the cases series.
//!
//! Every case makes a directory tree and a socket there and removes them afterwards. On ext4
//! *without a journal*, the kernel does not reuse an inode freed in the last one to six minutes:
//! it skips each of them, one by one, to find a free one (`find_inode_bit` and
//! `recently_deleted` in the Linux kernel's fs/ext4/ialloc.c, which check only when
//! `s_journal` is `NULL`). A run of thousands of cases therefore pays more per directory the
//! longer it runs, a cost of the machine, not of the harness (docs/performance.md, "Number of
//! cases"). Journaled ext4, the default of `mkfs.ext4`, and tmpfs do not do this.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where the cases' directories go and what that filesystem is.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TempFs {
    pub path: String,
    /// The filesystem type as the kernel names it (`ext4`, `tmpfs`, `xfs` …), when found.
    pub fs_type: Option<String>,
    /// For ext4, whether it has a journal; `None` for other types or when it cannot be told.
    pub journal: Option<bool>,
}

impl TempFs {
    /// The system's temporary directory (`TMPDIR`, else `/tmp`), as the runner uses it.
    pub fn probe() -> TempFs {
        let dir = std::env::temp_dir();
        let path = dir.canonicalize().unwrap_or(dir);
        let mount = std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .and_then(|info| mount_of(&info, &path));
        let journal = mount
            .as_ref()
            .filter(|m| m.fs_type == "ext4")
            .and_then(|m| ext4_has_journal(&m.device));
        TempFs {
            path: path.to_string_lossy().into_owned(),
            fs_type: mount.map(|m| m.fs_type),
            journal,
        }
    }

    /// Whether the cases series here includes the kernel's skipping of freed inodes.
    pub fn skips_freed_inodes(&self) -> bool {
        self.fs_type.as_deref() == Some("ext4") && self.journal == Some(false)
    }

    /// `ext4, no journal`, `tmpfs` …, for the table.
    pub fn describe(&self) -> String {
        match (&self.fs_type, self.journal) {
            (None, _) => "filesystem unknown".into(),
            (Some(fs), Some(true)) => format!("{fs}, journaled"),
            (Some(fs), Some(false)) => format!("{fs}, no journal"),
            (Some(fs), None) => fs.clone(),
        }
    }
}

/// One line of `/proc/self/mountinfo`, the parts used here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    point: PathBuf,
    /// `major:minor` of the filesystem's device.
    device: String,
    fs_type: String,
}

/// The mount `path` is on: the one with the longest mount point containing it, the latest of
/// those when several are mounted on one point (the last one hides the others).
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    mountinfo
        .lines()
        .filter_map(parse_line)
        .filter(|m| path.starts_with(&m.point))
        .fold(None, |best: Option<Mount>, m| match best {
            Some(b) if b.point.components().count() > m.point.components().count() => Some(b),
            _ => Some(m),
        })
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`: the device is the third
/// field, the mount point the fifth (spaces written as `\040`), the type the first after `-`.
fn parse_line(line: &str) -> Option<Mount> {
    let mut fields = line.split(' ');
    let device = fields.nth(2)?.to_owned();
    let point = unescape(fields.nth(1)?);
    let fs_type = fields.skip_while(|f| *f != "-").nth(1)?.to_owned();
    Some(Mount {
        point: PathBuf::from(point),
        device,
        fs_type,
    })
}

/// mountinfo writes space, tab, newline and backslash in paths as three octal digits.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(byte) => {
                out.push(byte as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// An ext4 filesystem's journal shows as `/proc/fs/jbd2/<device name>-<inode>`; the device's
/// name is found from its number in `/sys/dev/block`.
fn ext4_has_journal(device: &str) -> Option<bool> {
    let link = std::fs::read_link(Path::new("/sys/dev/block").join(device)).ok()?;
    let name = link.file_name()?.to_string_lossy().into_owned();
    let journals: Vec<String> = std::fs::read_dir("/proc/fs/jbd2")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    Some(has_journal(&name, &journals))
}

fn has_journal(device_name: &str, journals: &[String]) -> bool {
    journals.iter().any(|j| {
        j.strip_prefix(device_name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|inode| !inode.is_empty() && inode.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
23 22 0:21 / /dev/shm rw,nosuid,nodev shared:2 - tmpfs tmpfs rw
24 22 0:22 / /tmp rw shared:3 - tmpfs tmpfs rw
25 22 7:0 / /mnt/my\\040disk rw,relatime shared:4 - ext4 /dev/loop0 rw
26 22 7:1 / /mnt/my\\040disk rw,relatime shared:5 - xfs /dev/loop1 rw
";

    fn found(path: &str) -> Option<(String, String, String)> {
        mount_of(MOUNTINFO, Path::new(path))
            .map(|m| (m.point.to_string_lossy().into_owned(), m.device, m.fs_type))
    }

    #[test]
    fn a_path_is_on_the_longest_mount_point_that_contains_it() {
        let m = |p: &str, d: &str, t: &str| Some((p.to_owned(), d.to_owned(), t.to_owned()));
        assert_eq!(found("/tmp/acp-case-x"), m("/tmp", "0:22", "tmpfs"));
        assert_eq!(found("/home/someone/project"), m("/", "254:0", "ext4"));
        assert_eq!(found("/dev/shm"), m("/dev/shm", "0:21", "tmpfs"));
        // `/tmpfoo` is not below `/tmp`: components, not characters.
        assert_eq!(found("/tmpfoo"), m("/", "254:0", "ext4"));
        // An escaped space, and the later of two mounts on one point.
        assert_eq!(found("/mnt/my disk/x"), m("/mnt/my disk", "7:1", "xfs"));
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let info = "garbage\n1 2\n22 1 254:0 / / rw - ext4 /dev/vda rw\n30 22 0:9 / /x rw\n";
        let m = mount_of(info, Path::new("/x/y")).expect("the root mount");
        assert_eq!(
            (m.point, m.fs_type),
            (PathBuf::from("/"), "ext4".to_owned())
        );
        assert_eq!(unescape("a\\134b\\"), "a\\b\\");
    }

    #[test]
    fn a_journal_is_told_by_its_jbd2_entry() {
        let journals = ["loop0-8".to_owned(), "sda1-8".to_owned()];
        assert!(has_journal("loop0", &journals));
        assert!(has_journal("sda1", &journals));
        assert!(!has_journal("vda", &journals));
        // `sda` is not `sda1`.
        assert!(!has_journal("sda", &journals));
        let no_journal = TempFs {
            path: "/tmp".into(),
            fs_type: Some("ext4".into()),
            journal: Some(false),
        };
        assert!(no_journal.skips_freed_inodes());
        assert_eq!(no_journal.describe(), "ext4, no journal");
        let journaled = TempFs {
            journal: Some(true),
            ..no_journal.clone()
        };
        assert!(!journaled.skips_freed_inodes());
        assert_eq!(journaled.describe(), "ext4, journaled");
    }

    /// On this machine: whatever the temporary directory is on, the probe names a type.
    #[test]
    fn the_probe_names_the_temporary_directorys_filesystem() {
        let fs = TempFs::probe();
        if Path::new("/proc/self/mountinfo").exists() {
            assert!(fs.fs_type.is_some(), "{fs:?}");
        }
        assert!(!fs.path.is_empty());
    }
}
