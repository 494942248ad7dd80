//! A goal run's `.dir` subject read as a live run: the reflective loop writes no single
//! journal but one per round (and the loop's last lines at the top), each mirrored in
//! pieces with the directory's files (see `dir_mirror`). [`DirFollow`] turns those pieces,
//! in stream order, into what `serve --nats` shows: the journals' lines, whole, in the order
//! they were committed, and each round's plan as the engine writes it before the pass that
//! runs it. Everything else (sections, reports, planner files) is left to the stored run
//! directory.
//!
//! Pieces are input from outside: one that does not decode is reported by its size, a line
//! or a plan that grows without end is cut at a bound (kept as many bytes as the server
//! would show anyway).

use std::collections::HashMap;

use bytes::Bytes;

use crate::dir_mirror::Piece;

/// Longest unfinished line kept per journal: a longer line is shown as unreadable anyway
/// (the server shows lines up to 256 KiB); only its first bytes are kept.
const MAX_PARTIAL: usize = 1 << 20;
/// Largest plan file assembled from pieces (a plan of 1,000 tasks is far smaller).
const MAX_PLAN: usize = 16 << 20;

/// What one message of a run's journal subject means for its live view.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed {
    /// Lines of the run's events, each ending in a newline.
    Lines(Bytes),
    /// A round's plan, as its execution wrote it (`rounds/<k>/plan.json`): a new pass
    /// starts with it.
    Plan(Bytes),
    /// A message that is no piece of a run directory, with its size.
    Unreadable(usize),
}

/// Pieces of a goal run's directory, in stream order, to [`Followed`] items.
#[derive(Default)]
pub struct DirFollow {
    /// Per journal: the end of its last piece after its last newline.
    partial: HashMap<String, Vec<u8>>,
    /// A round's plan whose pieces have not all arrived.
    plans: HashMap<String, Vec<u8>>,
}

/// Whether `path` is a round's plan: `…rounds/<k>/plan.json`.
fn is_round_plan(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    parts.next() == Some("plan.json")
        && parts
            .next()
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        && parts.next() == Some("rounds")
}

impl DirFollow {
    /// What the message `payload` adds (`None`: nothing to show, such as a section file or
    /// a line not finished yet).
    pub fn piece(&mut self, payload: &[u8]) -> Option<Followed> {
        let Some((piece, data)) = Piece::decode(payload) else {
            return Some(Followed::Unreadable(payload.len()));
        };
        if piece.journal {
            return self.lines(piece.path, &data);
        }
        // A file written whole at a journal's path (a round's journal copied to the top)
        // starts that file again: its lines are not the run's events.
        self.partial.remove(&piece.path);
        if is_round_plan(&piece.path) {
            return self.plan(piece.path, piece.append, data);
        }
        None
    }

    fn lines(&mut self, path: String, data: &[u8]) -> Option<Followed> {
        let partial = self.partial.entry(path).or_default();
        let Some(end) = data.iter().rposition(|&b| b == b'\n') else {
            keep(partial, data);
            return None;
        };
        let mut out = std::mem::take(partial);
        out.extend_from_slice(&data[..=end]);
        keep(partial, &data[end + 1..]);
        Some(Followed::Lines(Bytes::from(out)))
    }

    fn plan(&mut self, path: String, append: bool, data: Vec<u8>) -> Option<Followed> {
        let bytes = match self.plans.remove(&path) {
            Some(mut so_far) if append => {
                so_far.extend_from_slice(&data);
                so_far
            }
            _ => data,
        };
        // A plan cut into pieces is complete when it parses: a prefix of a JSON object
        // never does.
        if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() {
            return Some(Followed::Plan(Bytes::from(bytes)));
        }
        if bytes.len() <= MAX_PLAN {
            self.plans.insert(path, bytes);
        }
        None
    }
}

/// Appends to an unfinished line up to [`MAX_PARTIAL`] bytes.
fn keep(partial: &mut Vec<u8>, more: &[u8]) {
    let room = MAX_PARTIAL.saturating_sub(partial.len());
    partial.extend_from_slice(&more[..more.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;

    fn piece(path: &str, append: bool, journal: bool, data: &[u8]) -> Vec<u8> {
        serde_json::to_vec(&Piece {
            path: path.into(),
            append,
            journal,
            data: base64::engine::general_purpose::STANDARD.encode(data),
        })
        .unwrap()
    }

    fn lines(s: &str) -> Option<Followed> {
        Some(Followed::Lines(Bytes::copy_from_slice(s.as_bytes())))
    }

    #[test]
    fn journal_lines_come_whole_plans_when_complete_and_files_not_at_all() {
        let mut f = DirFollow::default();
        let j1 = "jobs/g/rounds/1/events.jsonl";
        let j2 = "jobs/g/rounds/2/events.jsonl";
        assert_eq!(
            f.piece(&piece(j1, true, true, b"{\"a\":1}\n{\"b\"")),
            lines("{\"a\":1}\n")
        );
        // Another journal's lines in between keep their own unfinished line apart.
        assert_eq!(
            f.piece(&piece(j2, true, true, b"{\"c\":3}\n")),
            lines("{\"c\":3}\n")
        );
        assert_eq!(f.piece(&piece(j1, true, true, b":2")), None);
        assert_eq!(
            f.piece(&piece(j1, true, true, b"}\n")),
            lines("{\"b\":2}\n")
        );
        assert_eq!(
            f.piece(&piece("jobs/g/rounds/1/sections/1.md", false, false, b"x")),
            None
        );
        assert_eq!(
            f.piece(&piece("jobs/g/plan.json", false, false, b"{}")),
            None
        );
        let plan = br#"{"topic":"t","tasks":[]}"#;
        assert_eq!(
            f.piece(&piece(
                "jobs/g/rounds/1/plan.json",
                false,
                false,
                &plan[..9]
            )),
            None
        );
        assert_eq!(
            f.piece(&piece("jobs/g/rounds/1/plan.json", true, false, &plan[9..])),
            Some(Followed::Plan(Bytes::copy_from_slice(plan)))
        );
        assert_eq!(f.piece(b"\xffjunk"), Some(Followed::Unreadable(5)));
        assert_eq!(
            f.piece(&piece("jobs/g/rounds/x/plan.json", false, false, plan)),
            None
        );
    }

    #[test]
    fn an_endless_line_is_kept_bounded() {
        let mut f = DirFollow::default();
        let path = "rounds/1/events.jsonl";
        let big = vec![b'x'; 600 * 1024];
        for _ in 0..4 {
            assert_eq!(f.piece(&piece(path, true, true, &big)), None);
        }
        let Some(Followed::Lines(l)) = f.piece(&piece(path, true, true, b"\n")) else {
            panic!("the line ends");
        };
        assert_eq!(l.len(), MAX_PARTIAL + 1);
    }
}
