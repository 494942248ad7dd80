//! What a run's model calls cost, as `run.json` records it (the prices are the model
//! client's: `planwave_llm::PriceTable::estimate` makes it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The estimated cost of a run, as recorded in `run.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostEstimate {
    pub currency: String,
    pub total: f64,
    /// Cost per model that has a price.
    pub by_model: BTreeMap<String, f64>,
    /// Models that were called but have no price in the table (their cost is not counted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
    /// What the same calls would have cost with no prompt cache (every prompt token at the
    /// input price): `total` against it is what caching saved.
    #[serde(default)]
    pub uncached_total: f64,
    /// What the same calls would cost through the Batch API, when `[prices] batch_discount`
    /// is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_api_total: Option<f64>,
    /// The calls went through the Batch API: `total`, `by_model` and `uncached_total` are at
    /// the batch price (`batch_discount` taken off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch_api: bool,
}
