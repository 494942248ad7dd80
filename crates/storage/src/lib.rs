//! A run's files. [`RunDir`] is the output directory every whole file of a run is written
//! through (atomic, confined to the directory, no links followed, durable on request, copied
//! to a [`DirMirror`] when one is attached); [`Journal`] appends `events.jsonl` with group
//! commit and acknowledges an event once it is durable (and stored by a [`JournalMirror`]);
//! [`Replay`] reads a journal back into the tasks a resume need not run again; [`RunLock`]
//! keeps a second process out of a run directory; [`JsonlSink`] writes the same event lines
//! to any stream (`--events`); [`read_run`] reads a finished run's `run.json` back.
//!
//! It depends on `planwave-record` for the values it writes and reads, and deliberately knows
//! nothing of actors, scheduling, models or rendering: the engine decides *when* a file is
//! written or an event journaled, this crate only how it becomes durable and confined. No
//! async: writers run on their own threads and block only those.

mod append_file;
mod journal;
mod jsonl;
mod run_file;
mod rundir;
mod writer_thread;

pub use append_file::open_append;
pub use journal::{
    Ack, CompletedTask, Journal, JournalError, JournalMirror, LockError, Replay, ReplayError,
    RunLock, section_hash,
};
pub use jsonl::{JsonlOptions, JsonlSink};
pub use run_file::{ReadRunError, read_run};
pub use rundir::{
    DirMirror, RunDir, RunDirError, is_leftover_temp, sanitize_file_stem, section_files,
};
