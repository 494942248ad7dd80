//! The run directory: every file a run writes, confined to one output directory.
//!
//! Names derived from task ids or model output go through [`sanitize_file_stem`], and every
//! write goes through [`RunDir::write`], which refuses paths that leave the directory.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use planwave_record::RunResult;

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("cannot create output directory {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to write {0:?}: it is outside the output directory")]
    Escape(String),
    #[error(
        "{0} is a symbolic link; planwave does not follow links inside a run directory (files would land elsewhere): remove it"
    )]
    Symlink(PathBuf),
}

/// Where a queue worker copies a whole run directory as it is written (a goal job's rounds,
/// planner files and journals), so another machine can rebuild it and resume. Paths are
/// relative to the directory the mirror was attached to.
pub trait DirMirror: Send + Sync {
    /// A file written (whole) at `rel`; returns once stored. An error fails the write.
    fn file(&self, rel: &str, bytes: &[u8]) -> Result<(), String>;
    /// The mirror of the journal at `rel` (its lines, appended).
    fn journal(&self, rel: &str) -> std::sync::Arc<dyn crate::JournalMirror>;
}

#[derive(Clone)]
struct Mirrored {
    mirror: std::sync::Arc<dyn DirMirror>,
    /// This directory's path below the mirrored one (`""` or ending in `/`).
    prefix: String,
}

impl std::fmt::Debug for Mirrored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mirrored({:?})", self.prefix)
    }
}

#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
    /// fsync each file before renaming it into place, and its directory after.
    durable: bool,
    mirror: Option<Mirrored>,
}

impl RunDir {
    /// Creates (if needed) `root` and `root/sections`. `root` itself may be a link (the
    /// user's choice of directory); nothing inside it may be.
    pub fn create(root: impl Into<PathBuf>) -> Result<RunDir, RunDirError> {
        let root = root.into();
        let sections = root.join("sections");
        refuse_link(&sections)?;
        fs::create_dir_all(&sections).map_err(|source| RunDirError::Create {
            path: root.clone(),
            source,
        })?;
        Ok(RunDir {
            root,
            durable: false,
            mirror: None,
        })
    }

    /// A run directory inside this one (`rounds/2`, `jobs/<id>`), with no link on the way.
    pub fn child(&self, rel: &str) -> Result<RunDir, RunDirError> {
        let path = self.path(rel)?;
        self.refuse_links_within(&path)?;
        let mut child = RunDir::create(path)?.with_durable(self.durable);
        child.mirror = self.mirror.as_ref().map(|m| Mirrored {
            mirror: m.mirror.clone(),
            prefix: format!("{}{}/", m.prefix, rel.trim_end_matches('/')),
        });
        Ok(child)
    }

    /// Every file written through this directory and its children, and every journal opened
    /// in them (see [`RunDir::journal_mirror`]), also goes to `mirror`.
    pub fn with_mirror(mut self, mirror: std::sync::Arc<dyn DirMirror>) -> RunDir {
        self.mirror = Some(Mirrored {
            mirror,
            prefix: String::new(),
        });
        self
    }

    /// The mirror for the journal at `rel`, when this directory is mirrored.
    pub fn journal_mirror(&self, rel: &str) -> Option<std::sync::Arc<dyn crate::JournalMirror>> {
        self.mirror
            .as_ref()
            .map(|m| m.mirror.journal(&format!("{}{rel}", m.prefix)))
    }

    /// Every existing component of `path` below the root must be a real directory or file.
    fn refuse_links_within(&self, path: &Path) -> Result<(), RunDirError> {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return Ok(());
        };
        let mut at = self.root.clone();
        for c in rel.components() {
            at.push(c);
            refuse_link(&at)?;
        }
        Ok(())
    }

    pub fn with_durable(mut self, durable: bool) -> RunDir {
        self.durable = durable;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a relative path inside the directory; rejects absolute paths and `..`.
    pub fn path(&self, rel: &str) -> Result<PathBuf, RunDirError> {
        let p = Path::new(rel);
        if p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(RunDirError::Escape(rel.to_owned()));
        }
        Ok(self.root.join(p))
    }

    /// [`RunDir::path`] for a file that will be opened in place (the journal): refused when it
    /// or a directory on the way is a link.
    pub fn path_no_links(&self, rel: &str) -> Result<PathBuf, RunDirError> {
        let path = self.path(rel)?;
        self.refuse_links_within(&path)?;
        Ok(path)
    }

    /// Writes a file atomically: a temporary file in the same directory, renamed into place,
    /// so a reader (or a crash) never sees half a file.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        self.write_synced(rel, bytes, self.durable)
    }

    /// [`RunDir::write`] without syncing, for a file whose content is made durable elsewhere:
    /// a completed section, whose text the journal commits with the completion (one sync per
    /// completion instead of three: file, directory, journal).
    pub fn write_unsynced(&self, rel: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        self.write_synced(rel, bytes, false)
    }

    fn write_synced(&self, rel: &str, bytes: &[u8], sync: bool) -> Result<(), RunDirError> {
        let path = self.path(rel)?;
        // The rename below replaces a link at `path` itself; a linked directory on the way
        // would move the file elsewhere.
        if let Some(parent) = path.parent() {
            self.refuse_links_within(parent)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let err = |source| RunDirError::Write {
            path: path.clone(),
            source,
        };
        // A leftover temporary file of a killed run with our pid is ours to replace; a link
        // planted there is removed, never followed (O_NOFOLLOW on a fresh name).
        if fs::symlink_metadata(&tmp).is_ok() {
            fs::remove_file(&tmp).map_err(err)?;
        }
        let mut f = open_new(&tmp).map_err(err)?;
        f.write_all(bytes).map_err(err)?;
        if sync {
            f.sync_all().map_err(err)?;
        }
        drop(f);
        fs::rename(&tmp, &path).map_err(err)?;
        if sync {
            // The rename itself is only durable once the directory entry is synced.
            let dir = path.parent().unwrap_or(&self.root);
            crate::journal::sync_dir(dir).map_err(err)?;
        }
        if let Some(m) = &self.mirror {
            m.mirror
                .file(&format!("{}{rel}", m.prefix), bytes)
                .map_err(|e| err(std::io::Error::other(e)))?;
        }
        Ok(())
    }

    /// Removes the temporary files a killed run left (`NAME.tmp<pid>`, see [`RunDir::write`])
    /// at the top and in `sections/`; returns how many.
    pub fn remove_leftover_temps(&self) -> usize {
        let mut removed = 0;
        for dir in [self.root.clone(), self.root.join("sections")] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.filter_map(Result::ok) {
                if is_leftover_temp(&e.file_name()) && fs::remove_file(e.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Makes every file written so far durable at once: `syncfs` of the run directory's
    /// filesystem on Linux (one call, whatever the number of files), else each section file.
    pub fn sync_written(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let dir = fs::File::open(&self.root)?;
            // SAFETY: syncfs on a descriptor we own for the duration of the call.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            for e in fs::read_dir(self.root.join("sections"))?.flatten() {
                fs::File::open(e.path())?.sync_all()?;
            }
            crate::journal::sync_dir(&self.root.join("sections"))
        }
    }

    pub fn is_durable(&self) -> bool {
        self.durable
    }

    pub fn write_json<T: serde::Serialize>(&self, rel: &str, value: &T) -> Result<(), RunDirError> {
        let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| RunDirError::Write {
            path: self.root.join(rel),
            source: e.into(),
        })?;
        bytes.push(b'\n');
        self.write(rel, &bytes)
    }

    pub fn write_run(&self, run: &RunResult) -> Result<(), RunDirError> {
        self.write_json("run.json", run)
    }
}

/// Whether `name` is a temporary file of [`RunDir::write`] (`NAME.tmp<pid>`), which only a
/// killed write leaves behind.
pub fn is_leftover_temp(name: &std::ffi::OsStr) -> bool {
    Path::new(name)
        .extension()
        .and_then(|x| x.to_str())
        .and_then(|x| x.strip_prefix("tmp"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

fn refuse_link(path: &Path) -> Result<(), RunDirError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(RunDirError::Symlink(path.to_path_buf())),
        _ => Ok(()),
    }
}

/// Creates a file that did not exist, without following a link at its name.
fn open_new(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// A file name stem from untrusted text (a task id): ASCII letters, digits, `-` and `_`
/// survive, anything else (dots included, so no `..` or hidden files) becomes `_`; at most 64
/// bytes. When anything had to
/// change, a short hash of the original is appended so two ids never share a file.
pub fn sanitize_file_stem(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let changed = s != raw || s.is_empty() || s.len() > 64;
    s.truncate(64);
    if changed {
        let h = planwave_record::stable_hash(0, raw, 0);
        s = format!("{s}-{:08x}", (h & 0xffff_ffff) as u32);
    }
    s
}

/// Unique section file names for a plan's ids, `sections/<stem>.md`.
pub fn section_files<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.map(|id| {
        let mut stem = sanitize_file_stem(id);
        // Windows-reserved and case-colliding names are not a concern for the stems we emit,
        // but two sanitized stems could still collide by hash; disambiguate deterministically.
        let mut n = 1;
        while !seen.insert(stem.to_ascii_lowercase()) {
            n += 1;
            stem = format!("{}-{n}", sanitize_file_stem(id));
        }
        format!("sections/{stem}.md")
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_stay_inside_and_distinct() {
        let ids = ["1", "../../etc/passwd", "a/b", "a_b", ".hidden", "", "数据"];
        let files = section_files(ids.iter().copied());
        assert_eq!(files[0], "sections/1.md");
        assert_eq!(files[3], "sections/a_b.md");
        for f in &files {
            let stem = f
                .strip_prefix("sections/")
                .unwrap_or("")
                .trim_end_matches(".md");
            assert!(
                !stem.is_empty() && !stem.starts_with('.') && !stem.contains('/'),
                "{f}"
            );
        }
        let unique: HashSet<_> = files.iter().collect();
        assert_eq!(unique.len(), files.len());
    }

    #[test]
    fn write_refuses_escapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rd = RunDir::create(dir.path().join("out")).expect("create");
        assert!(matches!(
            rd.write("../x", b"x"),
            Err(RunDirError::Escape(_))
        ));
        assert!(matches!(
            rd.write("/etc/x", b"x"),
            Err(RunDirError::Escape(_))
        ));
        rd.write("sections/a.md", b"hi").expect("write");
        assert_eq!(
            std::fs::read(dir.path().join("out/sections/a.md")).expect("read"),
            b"hi"
        );
    }
}
