//! The top-level `"id"` of a JSON-RPC message read in pieces, without keeping the message.
//!
//! An answer too large to keep still has to fail the request it answers, and servers put the
//! id first (Python SDK) or last (TypeScript SDK), so the whole line is scanned once, keeping
//! only the id's bytes. Nested `"id"` keys (inside a result) are not the message's id.

/// The longest id kept; a longer one is not a request id planwave sent.
const MAX_ID_BYTES: usize = 128;

#[derive(Default)]
pub(crate) struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    key: Option<Vec<u8>>,
    /// The last key at depth 1 was `"id"` and its `:` has been seen: its value is being kept.
    value: Option<Vec<u8>>,
    id: Option<serde_json::Value>,
}

impl IdScanner {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.id.is_none() {
                self.step(b);
            }
        }
    }

    /// The message's id, when it had one (a number or a string).
    pub fn id(&self) -> Option<serde_json::Value> {
        self.id.clone()
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        if let Some(v) = &mut self.value {
            match b {
                b',' | b'}' if self.depth == 1 => self.finish_value(),
                // An object or array is no request id; its brackets are counted below.
                b'{' | b'[' => self.value = None,
                b'"' => {
                    self.in_string = true;
                    v.push(b);
                    return;
                }
                _ => {
                    v.push(b);
                    return;
                }
            }
        }
        match b {
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1 && b == b'{';
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => self.expect_key = true,
            b':' if self.depth == 1 => {
                let key = self.key.take();
                self.value = key.filter(|k| k == b"id").map(|_| Vec::new());
            }
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn string_byte(&mut self, b: u8) {
        let end = !self.escaped && b == b'"';
        self.escaped = !self.escaped && b == b'\\';
        if let Some(v) = &mut self.value {
            v.push(b);
            if v.len() > MAX_ID_BYTES {
                self.value = None;
            }
        } else if let Some(k) = &mut self.key
            && !end
            && k.len() < 3
        {
            // "id" is two bytes; anything longer only needs to be known as not "id".
            k.push(b);
        }
        if end {
            self.in_string = false;
        }
    }

    fn finish_value(&mut self) {
        let Some(v) = self.value.take() else {
            return;
        };
        self.id = serde_json::from_slice::<serde_json::Value>(&v)
            .ok()
            .filter(|v| v.is_number() || v.is_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str, piece: usize) -> Option<serde_json::Value> {
        let mut s = IdScanner::default();
        for chunk in text.as_bytes().chunks(piece) {
            s.feed(chunk);
        }
        s.id()
    }

    #[test]
    fn finds_the_top_level_id_first_or_last() {
        for piece in [1, 3, 1000] {
            assert_eq!(
                scan(r#"{"jsonrpc":"2.0","id":42,"result":{"id":7}}"#, piece),
                Some(serde_json::json!(42))
            );
            assert_eq!(
                scan(
                    r#"{"result":{"content":[{"id":1,"text":"a \"id\": 5, b"}]},"jsonrpc":"2.0", "id" : "x,}"}"#,
                    piece
                ),
                Some(serde_json::json!("x,}"))
            );
        }
    }

    #[test]
    fn no_id_for_notifications_or_odd_ids() {
        assert_eq!(scan(r#"{"method":"x","params":{"id":3}}"#, 4), None);
        assert_eq!(scan(r#"{"id":{"a":1},"result":1}"#, 4), None);
        assert_eq!(scan(r#"{"idx":1,"result":1}"#, 4), None);
    }
}
