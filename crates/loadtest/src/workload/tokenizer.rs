//! A model's own tokenizer (`--tokenizer tokenizer.json`, the Hugging Face format): synthetic
//! prompts sized in its tokens, and the tokens of answers counted on the client when the
//! endpoint reports no usage.
//!
//! Loaded with the `tokenizers` crate built without its C and C++ parts (`fancy-regex`, not
//! `onig`; no `esaxx_fast`): what it does here (encode a text, count the ids) needs neither.

use std::path::{Path, PathBuf};

use planwave_llm::ChatMessage;

use super::limits::{MAX_PROMPT_TOKENS, MAX_WORDS_PER_TOKEN};

/// A tokenizer file that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{path}: {problem}")]
pub struct TokenizerError {
    pub path: PathBuf,
    pub problem: String,
}

/// Counts tokens as the model's tokenizer does.
pub struct TokenCounter {
    inner: tokenizers::Tokenizer,
    /// The file it was read from, named by its errors.
    path: PathBuf,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter")
    }
}

impl TokenCounter {
    /// The tokenizer of a `tokenizer.json` file.
    pub fn load(path: &Path) -> Result<TokenCounter, TokenizerError> {
        let mut inner = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError {
            path: path.to_owned(),
            problem: e.to_string(),
        })?;
        // A file's truncation or padding would make every long text count alike: counting
        // is about the text, not about what the model would be fed.
        inner
            .with_truncation(None)
            .map_err(|e| TokenizerError {
                path: path.to_owned(),
                problem: e.to_string(),
            })?
            .with_padding(None);
        Ok(TokenCounter {
            inner,
            path: path.to_owned(),
        })
    }

    /// The tokens of `text`, special tokens left out (a prompt's chat template is the
    /// server's business). A text the tokenizer refuses counts as the usual estimate.
    pub(crate) fn count(&self, text: &str) -> u64 {
        match self.inner.encode(text, false) {
            Ok(e) => e.len() as u64,
            Err(_) => planwave_llm::estimate_tokens(text),
        }
    }

    /// Filler text of the request keyed `key` that is `len` tokens long by this tokenizer, or as near as
    /// words allow without going over (at least one word); refused when `len` is over
    /// [`MAX_PROMPT_TOKENS`] or when the tokenizer's count does not grow with the text (more
    /// than [`MAX_WORDS_PER_TOKEN`] words a token), where the search would never end.
    pub(crate) fn filler(&self, len: u64, key: u64) -> Result<String, TokenizerError> {
        let target = len.max(1);
        let refused = |problem: String| TokenizerError {
            path: self.path.clone(),
            problem,
        };
        if target > MAX_PROMPT_TOKENS {
            return Err(refused(format!(
                "a prompt of {target} tokens is longer than {MAX_PROMPT_TOKENS}"
            )));
        }
        let most = (target * MAX_WORDS_PER_TOKEN) as usize;
        // Words known to give at most `target` tokens, and words known to give more.
        let (mut lo, mut hi): (usize, Option<usize>) = (1, None);
        let mut guess = target as usize;
        // A bracketing search from a proportional guess: a handful of encodes per prompt.
        for _ in 0..24 {
            let n = self.count(&super::synthetic::filler(key, guess));
            if n == target {
                return Ok(super::synthetic::filler(key, guess));
            }
            if n < target {
                if guess >= most {
                    return Err(refused(format!(
                        "{guess} words of filler count as only {n} tokens: its count does not grow with the text, so a prompt of {target} tokens cannot be made"
                    )));
                }
                lo = lo.max(guess);
            } else {
                hi = Some(hi.map_or(guess, |h| h.min(guess)));
            }
            let scaled = (guess as f64 * target as f64 / n.max(1) as f64).round() as usize;
            let next = match hi {
                Some(h) if h <= lo + 1 => break,
                Some(h) => scaled.clamp(lo + 1, h - 1),
                None => scaled.clamp(lo + 1, most),
            };
            if next == guess {
                break;
            }
            guess = next;
        }
        Ok(super::synthetic::filler(key, lo))
    }

    /// One prompt per length, each that many tokens long by this tokenizer.
    pub fn prompts_of_lengths(
        &self,
        lengths: &[u64],
    ) -> Result<Vec<Vec<ChatMessage>>, TokenizerError> {
        lengths
            .iter()
            .enumerate()
            .map(|(i, &len)| Ok(vec![ChatMessage::user(self.filler(len, i as u64)?)]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tokenizer that reads every character as one token (a BPE model without merges, no
    /// pre-tokenizer, unknown characters as `[UNK]`).
    pub(crate) fn char_tokenizer(dir: &Path) -> PathBuf {
        let mut vocab = serde_json::Map::new();
        vocab.insert("[UNK]".into(), 0.into());
        for (i, c) in ('a'..='z').chain([' ']).enumerate() {
            vocab.insert(c.to_string(), (i + 1).into());
        }
        let doc = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
            "model": {"type": "BPE", "dropout": null, "unk_token": "[UNK]",
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []}
        });
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, doc.to_string()).expect("write");
        path
    }

    #[test]
    fn prompts_are_sized_in_the_tokenizer_s_tokens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = TokenCounter::load(&char_tokenizer(dir.path())).expect("loads");
        assert_eq!(t.count("an to"), 5);
        assert_eq!(t.count("A!"), 2, "unknown characters count too");
        for len in [1, 2, 3, 50, 91, 300] {
            let text = t.filler(len, 7).expect("sized");
            let n = t.count(&text);
            assert!(n <= len.max(3) && n + 3 > len, "{len}: {n} ({text:?})");
        }
        assert_eq!(
            t.count(&t.filler(90, 0).expect("sized")),
            90,
            "whole words fit exactly"
        );
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{}").expect("write");
        assert!(TokenCounter::load(&bad).is_err());
    }
}
