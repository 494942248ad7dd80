//! `[prices]`: cached-input prices and the batch discount reach the engine's price table,
//! and values that make no sense are refused with their names.

use super::*;

#[test]
fn cached_prices_and_the_batch_discount_reach_the_price_table() {
    let file = ConfigFile::parse(
        r#"
[prices]
batch_discount = 0.5

[prices.models."gpt-4.1"]
input_per_mtok = 2.0
cached_input_per_mtok = 0.5
output_per_mtok = 8.0
"#,
        None,
    )
    .expect("parses");
    let s = resolve_settings(&file, &env(&[]), &Flags::default()).expect("settings");
    let p = s.run.prices.price("gpt-4.1-2025-04-14").expect("priced");
    assert_eq!(p.cached_input_per_mtok, Some(0.5));
    assert_eq!(p.cache_write_per_mtok, None);
    assert_eq!(s.run.prices.batch_discount, Some(0.5));
}

#[test]
fn a_discount_of_one_or_more_and_negative_prices_are_refused() {
    let file = ConfigFile::parse(
        r#"
[prices]
batch_discount = 1.0

[prices.models.m]
input_per_mtok = 1.0
cached_input_per_mtok = -0.1
output_per_mtok = 2.0
"#,
        None,
    )
    .expect("parses");
    let err = resolve_settings(&file, &env(&[]), &Flags::default()).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "[prices] batch_discount: 1 is not a share between 0 and 1 (0.5 = half price); \
         [prices.models.\"m\"] cached_input_per_mtok: -0.1 is not a non-negative price"
    );
}
