//! Credentials in URLs kept out of what planwave shows or records: [`redact_url`] for one URL,
//! [`redact_urls_in`] for the URLs inside a message (an HTTP or MCP error's text),
//! [`url_has_secret`] to tell whether a command-line argument needs it, and
//! [`header_is_secret`] for request headers a person gave.
//!
//! It sits below the model client, the MCP client, the queue and the front ends, which all
//! print URLs, so none of them depends on another for it. It knows nothing of HTTP clients,
//! API keys (the model client scrubs those itself) or where the text goes.

mod header_secret;
mod url_secret;

pub use header_secret::{header_is_secret, redact_header};
pub use url_secret::{redact_url, redact_urls_in, url_has_secret};
