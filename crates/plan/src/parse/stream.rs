//! A plan's tasks as its text streams in (LLMCompiler-style dispatch): each object of the
//! `tasks` (or `steps`) array is handed out, normalized as [`super::parse_plan`] would, as soon
//! as its closing brace arrives. Prose, a ```json fence and a `{"plan": ...}` wrapper around
//! the JSON are passed over. Nothing here validates the graph: the caller decides when a task
//! may start, and the whole answer is still parsed and validated once it has ended.

use serde_json::Value;

use super::normalize;
use crate::model::{PlanFormat, TaskSpec};

/// One task object complete in the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedTask {
    /// 1-based position in the array.
    pub position: usize,
    pub task: TaskSpec,
    /// Characters of the answer received when it was complete.
    pub at_char: usize,
}

/// Where the scanner is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Looking for `"tasks"`/`"steps"` followed by `:` and `[`.
    Seeking,
    /// Inside the task array, which sits at this nesting depth.
    InArray(usize),
    /// The array closed: later text is not looked at.
    Done,
}

/// Incremental scanner of a plan's task array.
#[derive(Debug)]
pub struct TaskStream {
    text: String,
    /// Bytes of `text` already scanned.
    scanned: usize,
    chars: usize,
    phase: Phase,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Start of the string being read, and the last complete string (a candidate key).
    string_start: usize,
    last_string: Option<(usize, usize)>,
    /// The last string was `tasks`/`steps` and a `:` followed it.
    key_colon: Option<PlanFormat>,
    /// Byte offset of the task object being read.
    object_start: Option<usize>,
    format: Option<PlanFormat>,
    position: usize,
    /// Byte offsets of the `{` and `[` open around the scanner (`None` for a `[`).
    opens: Vec<Option<usize>>,
    /// The object holding the task array, up to the array's `[`.
    header: Option<(usize, usize)>,
}

impl Default for TaskStream {
    fn default() -> Self {
        TaskStream::new()
    }
}

impl TaskStream {
    pub fn new() -> TaskStream {
        TaskStream {
            text: String::new(),
            scanned: 0,
            chars: 0,
            phase: Phase::Seeking,
            depth: 0,
            in_string: false,
            escaped: false,
            string_start: 0,
            last_string: None,
            key_colon: None,
            object_start: None,
            format: None,
            position: 0,
            opens: Vec::new(),
            header: None,
        }
    }

    /// The plan object's text before its task array, closed with an empty array
    /// (`{"topic": ..., "tasks": []}`): what is known of the plan besides its tasks once the
    /// array has begun. Keys after the array are not in it.
    pub fn header(&self) -> Option<String> {
        let (start, end) = self.header?;
        Some(format!("{}[]}}", &self.text[start..end]))
    }

    /// The format of the array found (`tasks` or `steps`), once found.
    pub fn format(&self) -> Option<PlanFormat> {
        self.format
    }

    /// The whole answer so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Adds `delta` and returns the task objects it completed, in order. An object that is
    /// not a usable task (no id, say) is passed over: the final parse reports it.
    pub fn push(&mut self, delta: &str) -> Vec<StreamedTask> {
        self.text.push_str(delta);
        let mut out = Vec::new();
        let bytes_from = self.scanned;
        let chunk: Vec<(usize, char)> = self.text[bytes_from..]
            .char_indices()
            .map(|(i, c)| (i + bytes_from, c))
            .collect();
        for (at, c) in chunk {
            self.chars += 1;
            if let Some(done) = self.step(at, c) {
                out.push(done);
            }
        }
        self.scanned = self.text.len();
        out
    }

    fn step(&mut self, at: usize, c: char) -> Option<StreamedTask> {
        if self.phase == Phase::Done {
            return None;
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_string = false;
                self.last_string = Some((self.string_start, at));
            }
            return None;
        }
        match c {
            '"' => {
                self.in_string = true;
                self.string_start = at + 1;
                self.key_colon = None;
            }
            ':' => {
                self.key_colon = self.last_string.and_then(|(s, e)| match &self.text[s..e] {
                    "tasks" => Some(PlanFormat::Research),
                    "steps" => Some(PlanFormat::Steps),
                    _ => None,
                });
                self.last_string = None;
            }
            '[' | '{' => {
                if c == '[' && self.phase == Phase::Seeking && self.key_colon.is_some() {
                    self.format = self.key_colon;
                    self.phase = Phase::InArray(self.depth + 1);
                    self.header = self.opens.iter().rev().find_map(|o| *o).map(|s| (s, at));
                } else if c == '{'
                    && self.phase == Phase::InArray(self.depth)
                    && self.object_start.is_none()
                {
                    self.object_start = Some(at);
                }
                self.depth += 1;
                self.opens.push((c == '{').then_some(at));
                self.key_colon = None;
                self.last_string = None;
            }
            ']' | '}' => {
                self.depth = self.depth.saturating_sub(1);
                self.opens.pop();
                self.key_colon = None;
                self.last_string = None;
                if let Phase::InArray(d) = self.phase {
                    if c == ']' && self.depth + 1 == d {
                        self.phase = Phase::Done;
                    } else if c == '}' && self.depth == d {
                        let start = self.object_start.take()?;
                        let object = self.text[start..=at].to_owned();
                        return self.task(&object);
                    }
                }
            }
            c if c.is_whitespace() => {}
            _ => {
                self.key_colon = None;
                self.last_string = None;
            }
        }
        None
    }

    fn task(&mut self, object: &str) -> Option<StreamedTask> {
        self.position += 1;
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(object) else {
            return None;
        };
        let format = self.format.unwrap_or_default();
        let task = normalize::one_task(map, self.position, format).ok()?;
        Some(StreamedTask {
            position: self.position,
            task,
            at_char: self.chars,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaskId;

    /// Feeds `text` in pieces of `n` characters; returns the ids and when each came.
    fn feed(text: &str, n: usize) -> Vec<(TaskId, usize)> {
        let mut s = TaskStream::new();
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        for piece in chars.chunks(n) {
            let delta: String = piece.iter().collect();
            out.extend(s.push(&delta).into_iter().map(|t| (t.task.id, t.at_char)));
        }
        out
    }

    const PLAN: &str = "Here is the plan:\n```json\n{\"topic\": \"t {x}\", \"tasks\": [\n  {\"id\": 1, \"description\": \"a \\\"quoted\\\" }\", \"dependencies\": [], \"hints\": {\"data_needs\": [\"x\"]}},\n  {\"id\": 2, \"description\": \"b\", \"dependencies\": [1]}\n]}\n```\nDone.";

    #[test]
    fn each_task_comes_when_its_object_closes_whatever_the_chunking() {
        for n in [1, 3, 7, 1000] {
            let got = feed(PLAN, n);
            let ids: Vec<TaskId> = got.iter().map(|(id, _)| id.clone()).collect();
            assert_eq!(ids, vec![TaskId::Int(1), TaskId::Int(2)], "chunks of {n}");
            assert!(got[0].1 < got[1].1);
        }
        let mut s = TaskStream::new();
        s.push(&PLAN[..PLAN.find("{\"id\": 1").expect("task 1")]);
        assert_eq!(
            s.header().as_deref(),
            Some("{\"topic\": \"t {x}\", \"tasks\": []}")
        );
        // Task 1 comes with the brace that closes it, well before the answer ends.
        let closing = PLAN.find("},\n  {\"id\": 2").expect("end of task 1") + 1;
        assert_eq!(feed(PLAN, 1)[0].1, PLAN[..closing].chars().count());
    }

    #[test]
    fn steps_wrappers_and_unusable_objects() {
        let text = r#"{"plan": {"steps": [{"step_id": "a", "tool": "echo", "params": {"m": "{{x.result}}"}}, {"no_id": true}, {"step_id": "b", "depends_on": ["a"]}]}}"#;
        let mut s = TaskStream::new();
        let got = s.push(text);
        assert_eq!(s.format(), Some(PlanFormat::Steps));
        let ids: Vec<(usize, TaskId)> = got
            .iter()
            .map(|t| (t.position, t.task.id.clone()))
            .collect();
        assert_eq!(ids, vec![(1, TaskId::from("a")), (3, TaskId::from("b"))]);
        assert_eq!(got[1].task.dependencies, vec![TaskId::from("a")]);
        // After the array closes nothing more is read.
        assert!(
            s.push(r#", "tasks": [{"id": 9, "description": "late"}]"#)
                .is_empty()
        );
    }

    #[test]
    fn a_truncated_answer_yields_only_the_complete_tasks() {
        let cut = &PLAN[..PLAN.find("\"b\"").expect("b")];
        assert_eq!(feed(cut, 5).len(), 1);
    }
}
