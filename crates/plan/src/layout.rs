//! A validated plan's tasks named by id rather than by index: lists of ids for people, and
//! the waves and critical path as one serializable value (`planwave waves --format json`).

use serde::Serialize;

use crate::model::TaskId;
use crate::validated::ValidatedPlan;

/// The waves and the critical path by task id. Field order is the JSON's key order
/// (alphabetical, as `planwave waves --format json` has always printed it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaveLayout<'a> {
    /// The longest chain, root first.
    pub critical_path: Vec<&'a TaskId>,
    /// Tasks per wave, each in declaration order.
    pub waves: Vec<Vec<&'a TaskId>>,
}

impl ValidatedPlan {
    /// The ids of the tasks at these indices (a wave, `critical_path()`, `deps(i)`), in order.
    pub fn ids(&self, indices: &[u32]) -> Vec<&TaskId> {
        indices.iter().map(|&i| self.id(i as usize)).collect()
    }

    /// The same ids as text, joined by `sep`: `1 -> 3 -> 4`.
    pub fn joined_ids(&self, indices: &[u32], sep: &str) -> String {
        let ids: Vec<String> = indices
            .iter()
            .map(|&i| self.id(i as usize).to_string())
            .collect();
        ids.join(sep)
    }

    /// The waves and the critical path by task id.
    pub fn layout(&self) -> WaveLayout<'_> {
        WaveLayout {
            critical_path: self.ids(self.critical_path()),
            waves: self.waves().iter().map(|w| self.ids(w)).collect(),
        }
    }
}
