//! A task finished in an earlier attempt of a run, carried into the next one.

use std::sync::Arc;

use crate::TaskRecord;

/// Tasks finished in an earlier attempt of this run (resume): not run again.
#[derive(Debug, Clone)]
pub struct Preset {
    pub index: usize,
    pub record: TaskRecord,
    pub section: Arc<str>,
}
