//! Per-model prices (from the config file) and the cost of a set of calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Usage;

/// Price of one model, per million tokens. Reasoning tokens are billed as output, which is
/// how OpenAI and DeepSeek bill them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl ModelPrice {
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_mtok
            + (usage.completion_tokens + usage.reasoning_tokens) as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Model name -> price. Empty means "no cost estimate".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    #[serde(default)]
    pub currency: Option<String>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrice>,
}

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
}

impl PriceTable {
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The price of `model`: an exact match, else the longest configured name that prefixes
    /// it (so `gpt-4o-mini` prices `gpt-4o-mini-2024-07-18`, a dated name servers report).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.models.get(model).or_else(|| {
            self.models
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len())
                .map(|(_, p)| p)
        })
    }

    /// Cost of `(model, usage)` pairs; `None` when the table is empty.
    pub fn estimate<'a>(
        &self,
        calls: impl IntoIterator<Item = (&'a str, Usage)>,
    ) -> Option<CostEstimate> {
        if self.is_empty() {
            return None;
        }
        let mut est = CostEstimate {
            currency: self.currency.clone().unwrap_or_else(|| "USD".into()),
            ..CostEstimate::default()
        };
        for (model, usage) in calls {
            match self.price(model) {
                Some(p) => {
                    let c = p.cost(&usage);
                    est.total += c;
                    *est.by_model.entry(model.to_owned()).or_default() += c;
                }
                None => {
                    if usage.total() > 0 && !est.unpriced_models.iter().any(|m| m == model) {
                        est.unpriced_models.push(model.to_owned());
                    }
                }
            }
        }
        Some(est)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_per_model_with_prefix_match_and_unpriced() {
        let mut t = PriceTable::default();
        t.models.insert(
            "gpt-4o-mini".into(),
            ModelPrice {
                input_per_mtok: 0.15,
                output_per_mtok: 0.60,
            },
        );
        let u = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            reasoning_tokens: 500_000,
        };
        let est = t
            .estimate([("gpt-4o-mini-2024-07-18", u), ("other", u)])
            .expect("estimate");
        assert!((est.total - 0.75).abs() < 1e-9, "{est:?}");
        assert_eq!(est.unpriced_models, vec!["other".to_string()]);
        assert!(PriceTable::default().estimate([("x", u)]).is_none());
    }
}
