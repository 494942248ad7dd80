//! Credentials in URLs kept out of what planwave shows or records: [`redact_url`] for one URL,
//! [`redact_urls_in`] for the URLs inside a message (an HTTP or MCP error's text), and
//! [`url_has_secret`] to tell whether a command-line argument needs it. The whole user part
//! and every query value not on [`HARMLESS_PARAMS`] become `***`.
//!
//! It sits below the model client, the MCP client, the queue and the front ends, which all
//! print URLs, so none of them depends on another for it. It knows nothing of HTTP clients,
//! API keys (the model client scrubs those itself) or where the text goes. Request headers
//! need nothing here: their values are never shown, whatever their names.

mod url_secret;

pub use url_secret::{HARMLESS_PARAMS, redact_url, redact_urls_in, url_has_secret};
