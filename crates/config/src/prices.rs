//! `[prices]` checked into the engine's [`PriceTable`]: every price a non-negative number,
//! the batch discount a share below 1.

use planwave_llm::PriceTable;

use crate::SettingsError;
use crate::file::PricesSection;

pub(crate) fn table(section: &PricesSection) -> Result<PriceTable, SettingsError> {
    let mut problems = Vec::new();
    if let Some(d) = section.batch_discount
        && !(d.is_finite() && (0.0..1.0).contains(&d))
    {
        problems.push(format!(
            "[prices] batch_discount: {d} is not a share between 0 and 1 (0.5 = half price)"
        ));
    }
    for (model, p) in &section.models {
        let prices = [
            ("input_per_mtok", Some(p.input_per_mtok)),
            ("output_per_mtok", Some(p.output_per_mtok)),
            ("cached_input_per_mtok", p.cached_input_per_mtok),
            ("cache_write_per_mtok", p.cache_write_per_mtok),
        ];
        for (name, value) in prices {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                problems.push(format!(
                    "[prices.models.\"{model}\"] {name}: {v} is not a non-negative price"
                ));
            }
        }
    }
    for (alias, model) in &section.aliases {
        if !section.models.contains_key(model) {
            problems.push(format!(
                "[prices.aliases] \"{alias}\" = \"{model}\": no [prices.models.\"{model}\"] to price it"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(SettingsError::Invalid(problems.join("; ")));
    }
    Ok(PriceTable {
        currency: section.currency.clone(),
        models: section.models.clone(),
        batch_discount: section.batch_discount,
        batch_api: false,
        aliases: section.aliases.clone(),
    })
}
