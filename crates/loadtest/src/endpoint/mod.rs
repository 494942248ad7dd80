//! The endpoint behind `--llm-url`: the clients of its completions and embeddings APIs
//! (`text`), the headers added to every request (`headers`), the threads that read its
//! sockets (`io_threads`), and its own figures: `sim-llm serve`'s stats (`stats`) and the
//! Prometheus series scraped during a run (`scrape`).

pub(crate) mod headers;
pub(crate) mod io_threads;
pub(crate) mod scrape;
pub(crate) mod stats;
pub(crate) mod text;
