//! The one TLS crypto provider behind every HTTP client planwave builds.
//!
//! rustls needs a crypto provider. reqwest's default one is aws-lc-rs, whose C library
//! (`aws-lc-sys`) was the slowest part of a first build; ring builds in a fraction of the time
//! and is what the NATS client uses too, so the whole process has exactly one provider. reqwest
//! is built without a provider of its own (`rustls-no-provider`) and takes the process default,
//! which [`install`] sets: every HTTP client in the workspace is built through [`http_client`]
//! (or after [`install`]), so none can start without it.
//!
//! This crate knows nothing of models, tools or queues: only which provider and when.

use std::sync::Once;

/// Makes rustls's ring provider the process default, once. Idempotent and cheap after the first
/// call; another provider installed first (by an embedding program) is left in place.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means a default is already installed: that one serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder whose TLS uses the process's one provider.
pub fn http_client() -> reqwest::ClientBuilder {
    install();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_the_ring_provider_installed() {
        let client = super::http_client().build();
        assert!(client.is_ok(), "{:?}", client.err());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
