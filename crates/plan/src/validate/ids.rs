//! Task ids to task indices.
//!
//! Most plans number their tasks 1..N in declaration order (the research-plan format asks
//! for it, and generated plans do): then an id's index is its number minus one, with no
//! table at all. A million-task plan otherwise spends a fifth of `validate` building and
//! probing a hash table of a million keys (one string each), cache miss after cache miss.
//! Any other plan gets that table, keyed by [`TaskId::key`] with the standard library's
//! keyed hasher: ids come from model output and from HTTP clients, so collisions must not be
//! something a plan can arrange.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::{self, Write as _};

use crate::model::{PlanSpec, TaskId};

#[derive(Clone, Debug)]
pub(crate) enum IdIndex {
    /// Task `i` has the id `i + 1` (an integer), for every task: `n` tasks.
    Sequential(usize),
    /// `TaskId::key()` -> index of the first task with that key.
    Keys(HashMap<String, usize>),
}

impl IdIndex {
    /// The index of `spec`'s ids, and for each task a later duplicate of, where its key was
    /// first defined (empty when no task can be a duplicate). Empty ids are left out: they
    /// are reported as such, not as duplicates of each other.
    pub(crate) fn build(spec: &PlanSpec) -> (IdIndex, Vec<Option<usize>>) {
        let n = spec.tasks.len();
        let sequential =
            spec.tasks.iter().enumerate().all(
                |(i, t)| matches!(t.id, TaskId::Int(k) if usize::try_from(k).ok() == Some(i + 1)),
            );
        if sequential {
            return (IdIndex::Sequential(n), Vec::new());
        }
        let mut index: HashMap<String, usize> = HashMap::with_capacity(n);
        let mut first_definition: Vec<Option<usize>> = vec![None; n];
        for (i, task) in spec.tasks.iter().enumerate() {
            if super::is_empty_id(&task.id) {
                continue;
            }
            match index.entry(task.id.key().into_owned()) {
                Entry::Occupied(e) => first_definition[i] = Some(*e.get()),
                Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
        (IdIndex::Keys(index), first_definition)
    }

    /// The index of the task whose id has this key (`"7"` finds the task with id `7`).
    pub(crate) fn get_key(&self, key: &str) -> Option<usize> {
        match self {
            IdIndex::Keys(map) => map.get(key).copied(),
            // Only the decimal form `i64::to_string` gives matches: no sign, no leading zero.
            IdIndex::Sequential(n) => {
                let b = key.as_bytes();
                if b.is_empty() || b.len() > 19 || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit)
                {
                    return None;
                }
                let k: usize = key.parse().ok()?;
                (k <= *n).then(|| k - 1)
            }
        }
    }

    /// The index of the task with this id (by key, so `1` and `"1"` are the same task).
    pub(crate) fn get(&self, id: &TaskId) -> Option<usize> {
        match (self, id) {
            (IdIndex::Sequential(n), TaskId::Int(k)) => {
                let k = usize::try_from(*k).ok()?;
                (1..=*n).contains(&k).then(|| k - 1)
            }
            (_, TaskId::Str(s)) => self.get_key(s),
            (IdIndex::Keys(map), TaskId::Int(k)) => {
                // No allocation for the key: an i64 has at most 20 characters.
                let mut buf = KeyBuf::default();
                let _ = write!(buf, "{k}");
                map.get(buf.as_str()).copied()
            }
        }
    }
}

/// A stack buffer just big enough for any i64 in decimal.
#[derive(Default)]
struct KeyBuf {
    bytes: [u8; 20],
    len: usize,
}

impl KeyBuf {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl fmt::Write for KeyBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaskSpec;

    fn spec(ids: &[TaskId]) -> PlanSpec {
        PlanSpec {
            tasks: ids
                .iter()
                .map(|id| TaskSpec::new(id.clone(), "d", Vec::new()))
                .collect(),
            ..PlanSpec::default()
        }
    }

    /// The sequential index answers exactly as the table would for the same plan.
    #[test]
    fn sequential_index_agrees_with_the_table() {
        let s = spec(&[1.into(), 2.into(), 3.into()]);
        let (seq, dups) = IdIndex::build(&s);
        assert!(matches!(seq, IdIndex::Sequential(3)));
        assert!(dups.is_empty());
        let table = IdIndex::Keys(
            s.tasks
                .iter()
                .enumerate()
                .map(|(i, t)| (t.id.key().into_owned(), i))
                .collect(),
        );
        let keys = [
            "1",
            "2",
            "3",
            "0",
            "4",
            "-1",
            "01",
            "+1",
            " 1",
            "1 ",
            "",
            "a",
            "١",
            "99999999999999999999",
            "9223372036854775807",
            "3.0",
        ];
        for key in keys {
            assert_eq!(seq.get_key(key), table.get_key(key), "key {key:?}");
            let as_str = TaskId::Str(key.to_owned());
            assert_eq!(seq.get(&as_str), table.get(&as_str), "id {key:?}");
        }
        for k in [-1, 0, 1, 3, 4, i64::MAX, i64::MIN] {
            assert_eq!(seq.get(&k.into()), table.get(&k.into()), "id {k}");
        }
    }

    #[test]
    fn other_plans_get_the_table_with_duplicates() {
        let (index, dups) = IdIndex::build(&spec(&[2.into(), "a".into(), "2".into()]));
        assert!(matches!(index, IdIndex::Keys(_)));
        assert_eq!(dups, vec![None, None, Some(0)]);
        assert_eq!(index.get(&"2".into()), Some(0));
        assert_eq!(index.get(&2.into()), Some(0));
        assert_eq!(index.get_key("a"), Some(1));
        // Ids 1..N out of order are not sequential.
        let (index, _) = IdIndex::build(&spec(&[2.into(), 1.into()]));
        assert!(matches!(index, IdIndex::Keys(_)));
        assert_eq!(index.get(&1.into()), Some(1));
    }
}
