//! Runs that ask for the provider's Batch API (`"options": {"batch_api": true}`): the
//! server's Batch API clients, one per batching setting asked for (linger, poll), each shared
//! by every run that asks for it, so runs started together share their provider batches.
//! Each run joins its client as its own job (its record in its run directory, its events
//! naming only the batches holding its calls), as a CLI run does.

use std::sync::{Mutex, PoisonError};

use planwave_config::Settings;
use planwave_llm::batch::BatchConfig;
use planwave_runner::ops::{ProviderBatches, Resources, Silent};

/// Clients kept; a run asking for yet another setting gets a client of its own.
const MAX_CLIENTS: usize = 16;

#[derive(Default)]
pub struct BatchClients {
    clients: Mutex<Vec<(BatchConfig, ProviderBatches)>>,
}

impl BatchClients {
    /// `shared` with its model client replaced by the Batch API client `settings` ask for;
    /// `None` when they ask for none.
    pub fn resources(&self, shared: &Resources, settings: &Settings) -> Option<Resources> {
        let cfg = settings.batch_api?;
        let client = self.client(cfg, settings)?;
        Some(Resources {
            provider: client.as_provider(),
            batch: Some(client),
            batch_job: None,
            ..shared.clone()
        })
    }

    fn client(&self, cfg: BatchConfig, settings: &Settings) -> Option<ProviderBatches> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, c)) = clients.iter().find(|(c, _)| *c == cfg) {
            return Some(c.clone());
        }
        // Built as the shared client was (the same HTTP client settings): it fails only where
        // that one could not have been built either.
        let client = match ProviderBatches::from_settings(settings, &Silent) {
            Ok(c) => c?,
            Err(e) => {
                tracing::warn!("the Batch API client: {e}");
                return None;
            }
        };
        if clients.len() < MAX_CLIENTS {
            clients.push((cfg, client.clone()));
        }
        Some(client)
    }
}
