//! Model prices: what a model call costs, from a `[prices]` table declared
//! in a case or in `worldline.toml` (US dollars per million tokens, keyed
//! by model name or glob). Views multiply a call's recorded usage by them;
//! nothing recorded or replayed depends on them.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `[prices."MODEL"]`: one model's price.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// US dollars per million prompt (input) tokens.
    pub input_per_mtok: f64,
    /// US dollars per million completion (output) tokens.
    pub output_per_mtok: f64,
}

/// `[prices]`: model name (or glob, `gpt-4o*`) → price.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Prices(pub BTreeMap<String, Price>);

impl Prices {
    /// A problem with the table (a negative or non-finite price), if any,
    /// with where its value is written in `text`, the file that declares
    /// the table (none when it cannot be found there).
    pub fn check(&self, text: &str) -> Result<(), (Option<usize>, String)> {
        for (model, p) in &self.0 {
            for (key, v) in [
                ("input_per_mtok", p.input_per_mtok),
                ("output_per_mtok", p.output_per_mtok),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return Err((
                        value_at(text, model, key),
                        format!(
                            "[prices.\"{model}\"] {key} = {v}: give US dollars per million tokens, 0 or more"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The price of `model`: its own key, else the first glob (in key
    /// order) that matches it.
    pub fn of(&self, model: &str) -> Option<Price> {
        self.0.get(model).copied().or_else(|| {
            self.0
                .iter()
                .find(|(k, _)| {
                    k.contains(['*', '?']) && wildmatch::WildMatch::new(k).matches(model)
                })
                .map(|(_, p)| *p)
        })
    }

    /// What `input` prompt and `output` completion tokens of `model` cost,
    /// in US dollars (none when the table has no price for it).
    pub fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        self.of(model).map(|p| {
            (input as f64 * p.input_per_mtok + output as f64 * p.output_per_mtok) / 1_000_000.0
        })
    }

    /// These prices over `base`'s (a case's over the project's).
    pub fn over(&self, base: &Prices) -> Prices {
        let mut all = base.0.clone();
        all.extend(self.0.iter().map(|(k, v)| (k.clone(), *v)));
        Prices(all)
    }
}

/// Where `[prices."MODEL"] KEY`'s value starts in `text`.
fn value_at(text: &str, model: &str, key: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    fn table<'a, 'i>(v: &'a toml::Spanned<DeValue<'i>>) -> Option<&'a DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        }
    }
    let doc = DeTable::parse(text).ok()?.into_inner();
    let prices = table(doc.get("prices")?)?;
    let price = table(prices.get(model)?)?;
    Some(price.get(key)?.span().start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Prices {
        #[derive(Deserialize)]
        struct Doc {
            prices: Prices,
        }
        toml::from_str::<Doc>(text).unwrap().prices
    }

    #[test]
    fn a_model_is_priced_by_its_name_then_by_the_first_glob() {
        let p = table(
            "[prices.\"gpt-4o\"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10.0\n[prices.\"gpt-*\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
        );
        assert_eq!(p.cost("gpt-4o", 1_000_000, 100_000), Some(3.5));
        assert_eq!(p.cost("gpt-5", 500_000, 500_000), Some(1.5));
        assert_eq!(p.cost("claude", 1, 1), None);
        let case = table("[prices.\"gpt-5\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n");
        assert_eq!(case.over(&p).cost("gpt-5", 9, 9), Some(0.0));
        let text = "[prices.m]\ninput_per_mtok = 1\noutput_per_mtok = 2\n\n[prices.\"n*\"]\noutput_per_mtok = 0\ninput_per_mtok = -1\n";
        let (at, message) = table(text).check(text).unwrap_err();
        assert!(message.contains("input_per_mtok = -1"), "{message}");
        // At its value, not the first `[prices]` header.
        assert_eq!(at, text.find("-1"));
    }
}
