//! The price table: what a token of each kind costs, per model, as the
//! providers publish it (`data/prices.txt`, compiled in; `--prices FILE`
//! replaces or extends it), and what a charge costs by it.
//!
//! Prices are kept as whole pico-dollars a token ($1 a million tokens is
//! 1,000,000), so a cost is an exact integer sum, never a float's
//! rounding; a price with more than six decimals is refused.

use crate::chat::usage::Charge;
use crate::harness::Harness;

/// The table shipped with the daemon.
pub(crate) const BUILT_IN: &str = include_str!("../../data/prices.txt");

/// Rows a table may hold: a file past it is not a price table.
pub(crate) const PRICE_ROWS_MAX: usize = 4096;

/// Pico-dollars a token, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rates {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub write_5m: u64,
    pub write_1h: u64,
}

/// A model's prices: its base rates, and those of a request whose prompt
/// is over a number of tokens, if the provider prices those apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub model: String,
    pub base: Rates,
    pub long: Option<(u64, Rates)>,
    pub source: String,
    pub read: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prices {
    rows: Vec<Row>,
}

impl Prices {
    /// The built-in table.
    pub fn built_in() -> Prices {
        let mut p = Prices::default();
        p.extend(BUILT_IN).expect("data/prices.txt parses (a test holds it)");
        p
    }

    /// Adds the rows of `text` (a model named again takes its new row);
    /// an error names the line that is not a row.
    pub fn extend(&mut self, text: &str) -> Result<(), String> {
        let (mut source, mut read) = (String::from("-"), String::from("-"));
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            let at = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(s) = line.strip_prefix("@source ") {
                source = s.trim().to_string();
                continue;
            }
            if let Some(r) = line.strip_prefix("@read ") {
                read = r.trim().to_string();
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let (model, above, prices) = match words.as_slice() {
                [m, a, rest @ ..] if a.starts_with('>') => {
                    (*m, Some(a[1..].parse::<u64>().map_err(|_| at("not a token count after >"))?), rest)
                }
                [m, rest @ ..] => (*m, None, rest),
                [] => continue,
            };
            let [i, o, r, w5, w1] = prices else { return Err(at("a row is a model and five prices")) };
            let pico = |w: &str| pico_of(w).ok_or_else(|| at("not a price"));
            let rates = Rates {
                input: pico(i)?,
                output: pico(o)?,
                cache_read: pico(r)?,
                write_5m: pico(w5)?,
                write_1h: pico(w1)?,
            };
            match above {
                Some(n) => match self.rows.iter_mut().rev().find(|r| r.model == model) {
                    Some(row) => row.long = Some((n, rates)),
                    None => return Err(at("a `>` row before its model's own row")),
                },
                None => {
                    self.rows.retain(|r| r.model != model);
                    if self.rows.len() >= PRICE_ROWS_MAX {
                        return Err(at("more rows than a price table holds"));
                    }
                    let row = Row {
                        model: model.to_string(),
                        base: rates,
                        long: None,
                        source: source.clone(),
                        read: read.clone(),
                    };
                    self.rows.push(row);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The row for a model as a transcript names it: the row of that name,
    /// or of the name without a dated snapshot's `-YYYYMMDD` suffix or a
    /// bracketed variant (`[1m]`). No nearer guess: a model without its own
    /// row has no price.
    pub(crate) fn find(&self, model: &[u8]) -> Option<&Row> {
        let model = std::str::from_utf8(model).ok()?;
        let base = model.find('[').map_or(model, |b| &model[..b]);
        let undated = match base.rsplit_once('-') {
            Some((stem, date)) if date.len() == 8 && date.bytes().all(|c| c.is_ascii_digit()) => stem,
            _ => base,
        };
        [model, base, undated].into_iter().find_map(|m| self.rows.iter().find(|r| r.model == m))
    }

    /// What `c`, spent through harness `h`, cost by `row`, in pico-dollars.
    /// The counts mean what each harness's do (docs/USAGE.md): codex's
    /// input holds its cached input, Claude's and pi's do not.
    pub(crate) fn cost(row: &Row, h: Harness, c: &Charge) -> u128 {
        let [input, output, read, write, _reasoning] = c.counts.map(u128::from);
        let w1h = u128::from(c.write_1h).min(write);
        // Codex: cached input is within input, its cache writes too (an
        // OpenAI model prices a write as input).
        let (fresh, read, w5, w1h, prompt) = match h {
            Harness::Codex => (input.saturating_sub(read), read, 0, 0, input),
            _ => (input, read, write - w1h, w1h, input + read + write),
        };
        let r = match row.long {
            Some((above, long)) if prompt > u128::from(above) => long,
            _ => row.base,
        };
        let p = |n: u64| u128::from(n);
        fresh * p(r.input) + output * p(r.output) + read * p(r.cache_read) + w5 * p(r.write_5m) + w1h * p(r.write_1h)
    }
}

/// `1.25` as pico-dollars a token ($ a million tokens times a million).
fn pico_of(w: &str) -> Option<u64> {
    let (whole, frac) = w.split_once('.').unwrap_or((w, ""));
    if whole.is_empty() && frac.is_empty() || frac.len() > 6 {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(frac) {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let frac: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<6}").parse().ok()? };
    whole.checked_mul(1_000_000)?.checked_add(frac)
}

/// Pico-dollars as dollars, to four places (rounded half up).
pub(crate) fn dollars(pico: u128) -> String {
    let cents_100 = (pico + 50_000_000) / 100_000_000;
    format!("{}.{:04}", cents_100 / 10_000, cents_100 % 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(counts: [u64; 5], write_1h: u64) -> Charge {
        Charge { key: 1, time: 0, slot: 0, counts, write_1h }
    }

    #[test]
    fn the_built_in_table_parses_and_dates_every_row() {
        let p = Prices::built_in();
        assert!(p.rows().len() >= 20);
        for r in p.rows() {
            assert!(r.source.starts_with("https://"), "{}: {}", r.model, r.source);
            assert_eq!(r.read.len(), 10, "{}: read {}", r.model, r.read);
        }
    }

    #[test]
    fn a_model_meets_its_row_by_name_dated_snapshot_or_variant_and_nothing_nearer() {
        let p = Prices::built_in();
        let model = |m: &str| p.find(m.as_bytes()).map(|r| r.model.as_str());
        assert_eq!(model("claude-opus-4-5-20251101"), Some("claude-opus-4-5"));
        assert_eq!(model("claude-sonnet-4-5[1m]"), Some("claude-sonnet-4-5"));
        assert_eq!(model("gpt-5-codex"), Some("gpt-5-codex"));
        assert_eq!(model("claude-opus-4-9"), None, "no guess from claude-opus-4");
        assert_eq!(model("gpt-5.5"), None);
        assert_eq!(model("<synthetic>"), None);
    }

    #[test]
    fn claude_counts_are_priced_by_kind_with_hour_long_writes_apart() {
        let p = Prices::built_in();
        let opus = p.find(b"claude-opus-4-5").unwrap();
        // 1M input $5, 1M output $25, 1M read $0.50, 1M written: 0.6M for
        // 5 minutes ($3.75) and 0.4M for an hour ($4).
        let c = charge([1_000_000, 1_000_000, 1_000_000, 1_000_000, 7], 400_000);
        assert_eq!(dollars(Prices::cost(opus, Harness::Claude, &c)), "38.2500");
    }

    #[test]
    fn codex_input_holds_its_cached_input() {
        let p = Prices::built_in();
        let gpt = p.find(b"gpt-5").unwrap();
        // 1M input of which 0.8M cached: 0.2M at $1.25, 0.8M at $0.125.
        let c = charge([1_000_000, 100_000, 800_000, 0, 50_000], 0);
        assert_eq!(dollars(Prices::cost(gpt, Harness::Codex, &c)), "1.3500");
    }

    #[test]
    fn a_long_prompt_is_priced_at_its_tier_whole() {
        let p = Prices::built_in();
        let s = p.find(b"claude-sonnet-4-5").unwrap();
        let short = charge([100_000, 1_000_000, 100_000, 0, 0], 0);
        let long = charge([100_000, 1_000_000, 100_001, 0, 0], 0);
        assert_eq!(dollars(Prices::cost(s, Harness::Claude, &short)), "15.3300");
        assert_eq!(dollars(Prices::cost(s, Harness::Claude, &long)), "23.1600");
    }

    #[test]
    fn a_file_replaces_or_extends_and_a_bad_line_is_named() {
        let mut p = Prices::built_in();
        p.extend("@source mine\n@read 2026-12-01\ngpt-5.5 2 16 0.2 2 2\nclaude-opus-4-5 1 1 1 1 1\n").unwrap();
        assert_eq!(p.find(b"gpt-5.5").unwrap().base.output, 16_000_000);
        assert_eq!(p.find(b"claude-opus-4-5").unwrap().base.input, 1_000_000);
        assert_eq!(p.find(b"claude-opus-4-5").unwrap().source, "mine");
        let e = Prices::default().extend("# x\nm 1 2 3\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(Prices::default().extend("m 1 2 3 4 0.0000001\n").is_err(), "past a pico-dollar");
        assert!(Prices::default().extend("m >5 1 2 3 4 5\n").is_err(), "a tier before its row");
    }

    #[test]
    fn dollars_round_half_up_to_four_places() {
        assert_eq!(dollars(0), "0.0000");
        assert_eq!(dollars(50_000_000), "0.0001");
        assert_eq!(dollars(49_999_999), "0.0000");
        assert_eq!(dollars(12_345_678_900_000), "12.3457");
    }
}
