//! The durable record of what was submitted: for each uploaded batch file its custom ids,
//! then the batch made from it. A process that dies while a batch runs finds the batch again
//! from here on restart, so no request is submitted (or paid for) twice.
//!
//! One JSON object a line, each written and synced before the step it records is relied on:
//! `{"scope": K}` first (the key naming the job in its calls' custom ids, so they are the same
//! in any process), `{"file_id": F, "custom_ids": [...]}` before the batch is created from
//! `F`, then `{"file_id": F, "batch_id": B}` once it is. A file without its batch line (the
//! process died in between) is looked up among the provider's batches by its input file.
//! Where the file lives, how it is opened (no links followed) and where else each line must be
//! stored before it counts (a queue worker's JetStream) is the caller's business:
//! [`LedgerWrite`].

use std::collections::HashMap;
use std::io::Write;

use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    custom_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    batch_id: Option<String>,
}

/// Where a ledger's lines go: appended and durable when `append` returns.
pub trait LedgerWrite: Send {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()>;
}

impl LedgerWrite for std::fs::File {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.write_all(line)?;
        self.sync_data()
    }
}

/// What an earlier process submitted, read back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// custom_id -> the input file it was uploaded in (the latest, when sent again).
    pub files: HashMap<String, String>,
    /// input file -> the batch made from it.
    pub batches: HashMap<String, String>,
    /// The job's key (`None`: a ledger written before keys, whose ids have none).
    pub scope: Option<String>,
}

impl Recorded {
    /// Reads a ledger's text; lines that do not parse (a torn last write) are skipped.
    pub fn parse(text: &str) -> Recorded {
        let mut r = Recorded::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(e) = serde_json::from_str::<Entry>(line) else {
                continue;
            };
            if let Some(k) = e.scope {
                r.scope.get_or_insert(k);
            }
            let Some(file) = e.file_id else { continue };
            for id in e.custom_ids {
                r.files.insert(id, file.clone());
            }
            if let Some(b) = e.batch_id {
                r.batches.insert(file, b);
            }
        }
        r
    }

    /// Files whose batch is not recorded.
    pub fn files_without_batch(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .values()
            .filter(|f| !self.batches.contains_key(*f))
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The open ledger, appended to line by line, each line durable before the call returns.
pub struct Ledger {
    out: Box<dyn LedgerWrite>,
}

impl Ledger {
    pub fn new(out: Box<dyn LedgerWrite>) -> Ledger {
        Ledger { out }
    }

    fn append(&mut self, e: &Entry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(e).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.out.append(&line)
    }

    pub fn record_scope(&mut self, key: &str) -> std::io::Result<()> {
        self.append(&Entry {
            scope: Some(key.to_owned()),
            ..Entry::default()
        })
    }

    pub fn record_file(&mut self, file_id: &str, custom_ids: &[String]) -> std::io::Result<()> {
        self.append(&Entry {
            file_id: Some(file_id.to_owned()),
            custom_ids: custom_ids.to_vec(),
            ..Entry::default()
        })
    }

    pub fn record_batch(&mut self, file_id: &str, batch_id: &str) -> std::io::Result<()> {
        self.append(&Entry {
            file_id: Some(file_id.to_owned()),
            batch_id: Some(batch_id.to_owned()),
            ..Entry::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_reads_back_with_a_torn_last_line_skipped() {
        let text = concat!(
            "{\"scope\":\"k1\"}\n",
            "{\"file_id\":\"f1\",\"custom_ids\":[\"a\",\"b\"]}\n",
            "{\"file_id\":\"f1\",\"batch_id\":\"b1\"}\n",
            "{\"file_id\":\"f2\",\"custom_ids\":[\"b\",\"c\"]}\n",
            "{\"file_id\":\"f2\",\"batch_"
        );
        let r = Recorded::parse(text);
        assert_eq!(r.files.get("a").map(String::as_str), Some("f1"));
        assert_eq!(
            r.files.get("b").map(String::as_str),
            Some("f2"),
            "the latest wins"
        );
        assert_eq!(r.batches.get("f1").map(String::as_str), Some("b1"));
        assert_eq!(r.files_without_batch(), vec!["f2".to_owned()]);
        assert_eq!(r.scope.as_deref(), Some("k1"));
        assert_eq!(Recorded::parse("{\"file_id\":\"f\"}\n").scope, None);
    }
}
