//! The run journal: `events.jsonl` as the durable record of a run, and reading it back to
//! resume.
//!
//! [`Journal`] appends events through one writer thread with group commit: everything queued
//! while the previous `fdatasync` ran is written and synced together, then acknowledged, so
//! the cost of durability is one sync per batch, not per event. A completed task's section is
//! made durable (temporary file, fsync, rename, directory fsync) *before* its `task_completed`
//! event is queued, and that event carries the file's name and hash, so [`Replay`] can trust a
//! completion only when the file it names is present and intact. See `docs/durability.md`.

mod lock;
mod replay;
mod writer;

pub use lock::{LockError, RunLock};
pub use replay::{CompletedTask, Replay, ReplayError, section_hash};
pub use writer::{Ack, Journal, JournalError, JournalMirror};
pub(crate) use writer::{cut_torn_tail, sync_dir};
