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

impl CostEstimate {
    /// Some call had a price: `total` means something. `false` when every call with tokens
    /// missed the table (then `total` is 0 for want of a price, not because it was free).
    pub fn priced(&self) -> bool {
        !self.by_model.is_empty() || self.unpriced_models.is_empty()
    }

    /// What a person reads: `0.0123 USD`, `0.0123 USD (unpriced: m)` when some calls had no
    /// price, and `unpriced (no price for m)` when none had one, never a silent `0.0000`.
    pub fn label(&self) -> String {
        let missing = self.unpriced_models.join(", ");
        if !self.priced() {
            format!("unpriced (no price for {missing})")
        } else if missing.is_empty() {
            format!("{:.4} {}", self.total, self.currency)
        } else {
            format!("{:.4} {} (unpriced: {missing})", self.total, self.currency)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_without_any_price_reads_unpriced_not_zero() {
        let mut c = CostEstimate {
            currency: "USD".into(),
            unpriced_models: vec!["/models/x.gguf".into()],
            ..CostEstimate::default()
        };
        assert!(!c.priced());
        assert_eq!(c.label(), "unpriced (no price for /models/x.gguf)");
        c.by_model.insert("m".into(), 0.5);
        c.total = 0.5;
        assert_eq!(c.label(), "0.5000 USD (unpriced: /models/x.gguf)");
        c.unpriced_models.clear();
        assert_eq!(c.label(), "0.5000 USD");
    }
}
