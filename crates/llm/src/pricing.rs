//! Per-model prices (from the config file) and the cost of a set of calls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use planwave_record::{CostEstimate, Usage};

/// Price of one model, per million tokens. Reasoning tokens are billed as output, which is
/// how OpenAI and DeepSeek bill them. Prompt tokens read from the provider's cache cost
/// `cached_input_per_mtok` and those written to it `cache_write_per_mtok`; either defaults
/// to the input price (no discount, no surcharge).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

impl ModelPrice {
    /// Input and output at these prices, no cache prices.
    pub fn new(input_per_mtok: f64, output_per_mtok: f64) -> ModelPrice {
        ModelPrice {
            input_per_mtok,
            output_per_mtok,
            ..ModelPrice::default()
        }
    }

    pub fn cost(&self, usage: &Usage) -> f64 {
        let prompt = usage.prompt_tokens;
        let cached = usage.cached_tokens.min(prompt);
        let written = usage.cache_write_tokens.min(prompt - cached);
        let fresh = prompt - cached - written;
        let input = self.input_per_mtok;
        (fresh as f64 * input
            + cached as f64 * self.cached_input_per_mtok.unwrap_or(input)
            + written as f64 * self.cache_write_per_mtok.unwrap_or(input)
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
    /// The share taken off every price for requests sent through a provider's Batch API
    /// (0.5 at OpenAI); `None` when not configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_discount: Option<f64>,
    /// The calls went through the Batch API (`--batch-api`): the estimate's totals take
    /// `batch_discount` off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch_api: bool,
    /// Other names of priced models: alias -> the name in `models` (a local server's model
    /// file, a deployment name), so a model configured under any of them is priced.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
}

impl PriceTable {
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The price of `model` (or of the model it is an alias of): an exact match, else the
    /// longest configured name that prefixes it (so `gpt-4o-mini` prices
    /// `gpt-4o-mini-2024-07-18`, a dated name servers report).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        let model = self.aliases.get(model).map_or(model, String::as_str);
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
                    est.uncached_total += p.cost(&Usage {
                        cached_tokens: 0,
                        cache_write_tokens: 0,
                        ..usage
                    });
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
        if self.batch_api {
            let keep = 1.0 - self.batch_discount.unwrap_or(0.0);
            est.total *= keep;
            est.uncached_total *= keep;
            for c in est.by_model.values_mut() {
                *c *= keep;
            }
            est.batch_api = true;
            est.batch_api_total = Some(est.total);
        } else {
            est.batch_api_total = self.batch_discount.map(|d| est.total * (1.0 - d));
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
        t.models
            .insert("gpt-4o-mini".into(), ModelPrice::new(0.15, 0.60));
        let u = Usage::new(1_000_000, 500_000, 500_000);
        let est = t
            .estimate([("gpt-4o-mini-2024-07-18", u), ("other", u)])
            .expect("estimate");
        assert!((est.total - 0.75).abs() < 1e-9, "{est:?}");
        assert_eq!(est.unpriced_models, vec!["other".to_string()]);
        assert!(PriceTable::default().estimate([("x", u)]).is_none());
        assert_eq!(est.batch_api_total, None);
    }

    #[test]
    fn an_alias_is_priced_as_the_model_it_names() {
        let mut t = PriceTable::default();
        t.models.insert("smollm2".into(), ModelPrice::new(1.0, 2.0));
        t.aliases.insert("local".into(), "smollm2".into());
        let u = Usage::new(1_000_000, 1_000_000, 0);
        let est = t.estimate([("local", u)]).expect("estimate");
        assert!((est.total - 3.0).abs() < 1e-9, "{est:?}");
        assert!(est.unpriced_models.is_empty());
    }

    #[test]
    fn calls_through_the_batch_api_cost_the_discounted_price() {
        let mut t = PriceTable {
            batch_discount: Some(0.5),
            batch_api: true,
            ..PriceTable::default()
        };
        t.models.insert("m".into(), ModelPrice::new(2.0, 8.0));
        let est = t
            .estimate([("m", Usage::new(1_000_000, 1_000_000, 0))])
            .expect("estimate");
        assert!((est.total - 5.0).abs() < 1e-9, "{est:?}");
        assert!((est.by_model["m"] - 5.0).abs() < 1e-9, "{est:?}");
        assert!(est.batch_api);
        assert_eq!(est.batch_api_total, Some(est.total));
        // Without a discount configured, the Batch API is priced as the normal path.
        t.batch_discount = None;
        let plain = t
            .estimate([("m", Usage::new(1_000_000, 1_000_000, 0))])
            .expect("estimate");
        assert!((plain.total - 10.0).abs() < 1e-9, "{plain:?}");
    }

    #[test]
    fn cached_tokens_cost_the_cached_price_and_writes_the_write_price() {
        let mut t = PriceTable {
            batch_discount: Some(0.5),
            ..PriceTable::default()
        };
        let price = ModelPrice {
            cached_input_per_mtok: Some(0.5),
            cache_write_per_mtok: Some(2.5),
            ..ModelPrice::new(2.0, 8.0)
        };
        t.models.insert("m".into(), price);
        // 1M prompt tokens: 600k cached, 100k written, 300k fresh; 100k out.
        let u = Usage {
            cached_tokens: 600_000,
            cache_write_tokens: 100_000,
            ..Usage::new(1_000_000, 100_000, 0)
        };
        let est = t.estimate([("m", u)]).expect("estimate");
        let want = 0.3 * 2.0 + 0.6 * 0.5 + 0.1 * 2.5 + 0.1 * 8.0;
        assert!((est.total - want).abs() < 1e-9, "{est:?}");
        assert!((est.uncached_total - (2.0 + 0.8)).abs() < 1e-9, "{est:?}");
        assert_eq!(
            est.batch_api_total.map(|b| (b * 1e6).round()),
            Some((want / 2.0 * 1e6).round())
        );
        // No cached price: cached tokens cost the input price.
        let plain = ModelPrice::new(2.0, 8.0);
        assert!((plain.cost(&u) - 2.8).abs() < 1e-9);
        // Counts that exceed the prompt are capped by it.
        let odd = Usage {
            cached_tokens: 5,
            cache_write_tokens: 5,
            ..Usage::new(6, 0, 0)
        };
        assert!((price.cost(&odd) - (5.0 * 0.5 + 2.5) / 1e6).abs() < 1e-12);
    }
}
