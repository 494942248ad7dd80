//! A run's files as a request reads them: regular files inside the run's directory under
//! `--data`, reached without following a link anywhere. The run directory is opened with
//! `O_NOFOLLOW` (a run directory that is a link is no run), then each component of the
//! file's path relative to the one before it (`openat`, `O_NOFOLLOW`), so a link planted in
//! a run directory, at the file or at a directory on the way, is refused by the open itself:
//! there is no moment between a check and the open for a link to appear. The file is opened
//! non-blocking and must be a regular file (a FIFO in its place would hold the request).
//! `--data` itself is canonical (resolved once at start), and a run directory is one plain
//! name below it (`ids::safe_name`), so what is opened lies inside `--data`.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{CWD, Mode, OFlags, openat};

/// Largest file a request reads whole (a report, `run.json`): larger ones are refused
/// rather than held in memory.
const MAX_READ: u64 = 256 << 20;

/// Whether `dir` is a directory itself (not a link to one).
pub fn is_run_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
}

fn refused(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why.to_owned())
}

/// Opens `rel` (plain names separated by `/`) inside the run directory `dir`, following no
/// link; only a regular file is returned.
pub fn open(dir: &Path, rel: &str) -> io::Result<File> {
    let parts: Vec<&std::ffi::OsStr> = Path::new(rel)
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(refused("not a plain relative path")),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, between)) = parts.split_last() else {
        return Err(refused("an empty path"));
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut at: OwnedFd = openat(CWD, dir, dir_flags, Mode::empty())?;
    for name in between {
        at = openat(&at, *name, dir_flags, Mode::empty())?;
    }
    let fd = openat(
        &at,
        *last,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(refused("not a regular file"));
    }
    Ok(file)
}

/// The whole of `rel` in `dir` (see [`open`]).
pub fn read(dir: &Path, rel: &str) -> io::Result<Vec<u8>> {
    let file = open(dir, rel)?;
    let mut buf = Vec::new();
    file.take(MAX_READ + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_READ {
        return Err(refused("larger than a request reads"));
    }
    Ok(buf)
}

/// [`read`] off the async runtime's threads.
pub async fn read_async(dir: PathBuf, rel: String) -> io::Result<Vec<u8>> {
    tokio::task::spawn_blocking(move || read(&dir, &rel))
        .await
        .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_regular_files_inside_are_opened() {
        let root = std::env::temp_dir().join(format!("pw-run-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let run = root.join("run");
        std::fs::create_dir_all(run.join("sections")).unwrap();
        std::fs::write(run.join("report.md"), "ours").unwrap();
        std::fs::write(run.join("sections/1.md"), "one").unwrap();
        std::fs::write(root.join("secret"), "theirs").unwrap();
        symlink(root.join("secret"), run.join("linked.md")).unwrap();
        symlink(&root, run.join("up")).unwrap();
        symlink(&run, root.join("alias")).unwrap();

        assert_eq!(read(&run, "report.md").unwrap(), b"ours");
        assert_eq!(read(&run, "sections/1.md").unwrap(), b"one");
        for rel in [
            "linked.md",
            "up/secret",
            "../secret",
            "/etc/passwd",
            "sections",
            "",
        ] {
            assert!(read(&run, rel).is_err(), "{rel}");
        }
        assert!(read(&root.join("alias"), "report.md").is_err());
        assert!(is_run_dir(&run) && !is_run_dir(&root.join("alias")));
        let _ = std::fs::remove_dir_all(&root);
    }
}
