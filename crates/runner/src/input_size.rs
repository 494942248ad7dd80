//! Reading plan and job files with a size bound.
//!
//! `validate /dev/zero` once grew past 3 GB: a plan is read whole before it is parsed, so the
//! read itself must stop. The bound is process-wide (like a resource limit) because every
//! reader of plans honours it, from the CLI's `validate` to a batch's plan files (read through
//! [`read_input`], handed to `planwave_batch::resolve_jobs`) and a resume's saved plan; the
//! front end sets it once, before anything is read.

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// Plans and job files larger than this are refused unless the limit is raised.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

static MAX_INPUT_BYTES: OnceLock<u64> = OnceLock::new();

/// Sets the bound for this process; the first call wins (later ones are ignored).
pub fn set_max_input_bytes(bytes: u64) {
    let _ = MAX_INPUT_BYTES.set(bytes);
}

/// The bound in force.
pub fn max_input_bytes() -> u64 {
    *MAX_INPUT_BYTES.get().unwrap_or(&DEFAULT_MAX_INPUT_BYTES)
}

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read: {0}")]
    Read(#[from] std::io::Error),
    #[error(
        "{size} bytes, over the limit of {limit} bytes; raise it with --max-input-bytes or PLANWAVE_MAX_INPUT_BYTES"
    )]
    TooLarge { limit: u64, size: u64 },
    /// A pipe or a device: reading stopped at the limit.
    #[error(
        "more than the limit of {limit} bytes; raise it with --max-input-bytes or PLANWAVE_MAX_INPUT_BYTES"
    )]
    Endless { limit: u64 },
}

/// Reads `path` whole, refusing more than [`max_input_bytes`] without reading further.
pub fn read_input(path: &Path) -> Result<Vec<u8>, InputError> {
    let limit = max_input_bytes();
    let file = std::fs::File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > limit {
        return Err(InputError::TooLarge { limit, size: len });
    }
    read_bounded(file, limit)
}

/// Reads `reader` to its end, or fails once it has given more than `limit` bytes (a pipe or a
/// device such as `/dev/zero` has no length to check first).
pub fn read_bounded(reader: impl Read, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut buf = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(InputError::Endless { limit });
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_stops_one_byte_past_the_limit() {
        let endless = std::io::repeat(b'x');
        let err = read_bounded(endless, 1000).expect_err("too large");
        assert_eq!(
            err.to_string(),
            "more than the limit of 1000 bytes; raise it with --max-input-bytes or PLANWAVE_MAX_INPUT_BYTES"
        );
        assert_eq!(read_bounded(&b"abc"[..], 3).expect("fits"), b"abc");
    }
}
