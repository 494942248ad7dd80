//! Who answered a run's model calls: [`ProviderInfo`] as a provider reports it, and
//! [`ProviderInfoRecord`] as `run.json` keeps it.

use serde::{Deserialize, Serialize};

/// Who answers, for run records and user-facing output. Never holds credentials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProviderInfo {
    /// `sim`, `openai`, ...
    pub provider: String,
    pub model: String,
    /// True when no real model is involved; the CLI says so in its output.
    pub simulated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// How answers that must be JSON were asked for (`json_schema`, `json_object`, `none`),
    /// as the server was found to take it; `None` for providers that take no
    /// `response_format` (the simulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
}

/// [`ProviderInfo`] as recorded in `run.json` (owned, deserializable).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInfoRecord {
    pub provider: String,
    pub model: String,
    pub simulated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<String>,
}

impl From<ProviderInfo> for ProviderInfoRecord {
    fn from(p: ProviderInfo) -> Self {
        ProviderInfoRecord {
            provider: p.provider,
            model: p.model,
            simulated: p.simulated,
            base_url: p.base_url,
            response_format: p.response_format,
        }
    }
}
