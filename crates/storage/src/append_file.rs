//! A side file a run appends to in place, outside the journal (`provider-batches.jsonl`, the
//! record of submitted provider batches): opened inside the run directory with no link
//! followed, a torn last line cut off (as the journal does), its directory entry synced, what
//! it already holds read back for a resume.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};

use crate::{RunDir, RunDirError};

/// Opens (creating it if needed) `rel` in `dir` for appending, and returns it with the text
/// it already holds. A link at its name or on the way is refused. A last line without its
/// newline (a crash in the middle of a write, never relied on) is cut off first: the next
/// line appended would otherwise be glued to it and lost with it.
pub fn open_append(dir: &RunDir, rel: &str) -> Result<(File, String), RunDirError> {
    let path = dir.path_no_links(rel)?;
    let err = |source| RunDirError::Write {
        path: path.clone(),
        source,
    };
    let mut options = OpenOptions::new();
    options.create(true).read(true).append(true);
    #[cfg(unix)]
    {
        // A link planted at the name would record the batches somewhere else.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(&path).map_err(err)?;
    crate::journal::cut_torn_tail(&mut file).map_err(err)?;
    file.seek(SeekFrom::Start(0)).map_err(err)?;
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(err)?;
    if dir.is_durable()
        && let Some(parent) = path.parent()
    {
        crate::journal::sync_dir(parent).map_err(err)?;
    }
    Ok((file, text))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_appended_to_and_a_link_is_refused() {
        let tmp = std::env::temp_dir().join(format!("pw-append-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let dir = RunDir::create(&tmp).expect("dir");
        {
            use std::io::Write;
            let (mut f, text) = open_append(&dir, "side.jsonl").expect("opens");
            assert_eq!(text, "");
            f.write_all(b"one\n").expect("writes");
        }
        let (_, text) = open_append(&dir, "side.jsonl").expect("opens again");
        assert_eq!(text, "one\n");
        {
            use std::io::Write;
            let (mut f, _) = open_append(&dir, "side.jsonl").expect("opens");
            f.write_all(b"{\"torn").expect("writes");
        }
        {
            use std::io::Write;
            let (mut f, text) = open_append(&dir, "side.jsonl").expect("opens after a tear");
            assert_eq!(text, "one\n", "the torn line is cut");
            f.write_all(b"two\n").expect("writes");
        }
        let (_, text) = open_append(&dir, "side.jsonl").expect("opens again");
        assert_eq!(text, "one\ntwo\n", "the next line stands alone");
        std::os::unix::fs::symlink(tmp.join("side.jsonl"), tmp.join("link.jsonl")).expect("link");
        assert!(
            open_append(&dir, "link.jsonl").is_err(),
            "a link is not followed"
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
