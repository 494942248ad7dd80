//! [`Budget`]: a limit on what the model calls of a run (or of every job of a batch) may
//! spend, in tokens and in money, and [`BudgetedProvider`], which refuses every call once it
//! is reached. A call already under way finishes and is counted; none starts after.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use planwave_record::Usage;

use crate::{ChatRequest, ChatResponse, LlmError, LlmProvider, PriceTable};

/// Cost is counted in billionths of the currency, so it adds up in one atomic.
const NANO: f64 = 1e9;

/// The limits a person set (`--max-tokens-total`, `--max-cost`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetLimits {
    pub max_tokens_total: Option<u64>,
    pub max_cost: Option<f64>,
}

impl BudgetLimits {
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens_total.is_none() && self.max_cost.is_none()
    }
}

/// What has been spent against the limits, shared by every call that counts towards them.
#[derive(Debug)]
pub struct Budget {
    limits: BudgetLimits,
    prices: PriceTable,
    tokens: AtomicU64,
    nano_cost: AtomicU64,
}

impl Budget {
    /// `None` without a limit. The cost of a call is its price in `prices` (by the model it
    /// was sent to); `spent` is what earlier sessions of the same work used (a resume).
    pub fn new(limits: BudgetLimits, prices: PriceTable, spent: (u64, f64)) -> Option<Arc<Budget>> {
        (!limits.is_unlimited()).then(|| {
            Arc::new(Budget {
                limits,
                prices,
                tokens: AtomicU64::new(spent.0),
                nano_cost: AtomicU64::new((spent.1.max(0.0) * NANO) as u64),
            })
        })
    }

    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }

    /// Counts a finished call.
    pub fn charge(&self, model: &str, usage: &Usage) {
        self.tokens.fetch_add(usage.total(), Ordering::Relaxed);
        if let Some(p) = self.prices.price(model) {
            let nano = (p.cost(usage) * NANO).round() as u64;
            self.nano_cost.fetch_add(nano, Ordering::Relaxed);
        }
    }

    pub fn spent_tokens(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }

    pub fn spent_cost(&self) -> f64 {
        self.nano_cost.load(Ordering::Relaxed) as f64 / NANO
    }

    /// Why no call may start any more (`1200 of 1000 tokens spent`), or `None` while some
    /// budget is left.
    pub fn reached(&self) -> Option<String> {
        let tokens = self.spent_tokens();
        if let Some(max) = self.limits.max_tokens_total
            && tokens >= max
        {
            return Some(format!("{tokens} of --max-tokens-total {max} tokens spent"));
        }
        let cost = self.spent_cost();
        if let Some(max) = self.limits.max_cost
            && cost >= max
        {
            let currency = self.prices.currency.as_deref().unwrap_or("USD");
            return Some(format!("{cost:.4} of --max-cost {max} {currency} spent"));
        }
        None
    }
}

/// A provider whose calls count against a [`Budget`]: once it is reached every call is
/// refused with [`LlmError::Budget`] before anything is sent.
pub struct BudgetedProvider {
    inner: Arc<dyn LlmProvider>,
    budget: Arc<Budget>,
}

impl BudgetedProvider {
    pub fn wrap(inner: Arc<dyn LlmProvider>, budget: Arc<Budget>) -> Arc<dyn LlmProvider> {
        Arc::new(BudgetedProvider { inner, budget })
    }
}

#[async_trait]
impl LlmProvider for BudgetedProvider {
    crate::pass_provider_info_to!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Some(why) = self.budget.reached() {
            return Err(LlmError::Budget { message: why });
        }
        let model = self.inner.model_for(request.role);
        let answer = self.inner.chat(request).await;
        if let Ok(a) = &answer {
            self.budget.charge(&model, &a.usage);
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelPrice;

    #[test]
    fn a_budget_is_reached_by_tokens_or_by_cost() {
        let limits = BudgetLimits {
            max_tokens_total: Some(100),
            max_cost: None,
        };
        let b = Budget::new(limits, PriceTable::default(), (40, 0.0)).expect("a budget");
        assert_eq!(b.reached(), None);
        b.charge("m", &Usage::new(50, 10, 0));
        assert_eq!(
            b.reached().as_deref(),
            Some("100 of --max-tokens-total 100 tokens spent")
        );
        let mut prices = PriceTable::default();
        prices.models.insert("m".into(), ModelPrice::new(1.0, 1.0));
        let limits = BudgetLimits {
            max_tokens_total: None,
            max_cost: Some(1.0),
        };
        let b = Budget::new(limits, prices, (0, 0.0)).expect("a budget");
        b.charge("unpriced", &Usage::new(5_000_000, 0, 0));
        assert_eq!(b.reached(), None, "an unpriced model costs nothing known");
        b.charge("m", &Usage::new(1_000_000, 0, 0));
        assert_eq!(
            b.reached().as_deref(),
            Some("1.0000 of --max-cost 1 USD spent")
        );
        assert!(Budget::new(BudgetLimits::default(), PriceTable::default(), (0, 0.0)).is_none());
    }
}
