//! `Usage`: a session's tokens by kind and by model, from the harness's own
//! counts, gathered in the pass that indexes the chat.
//!
//! ```text
//! input 1234
//! output 567
//! cache_read 89000
//! cache_write 1200
//! reasoning 0
//! input.claude-opus-4-5 1234
//! output.claude-opus-4-5 567
//! ...
//! ```
//!
//! The totals come first, always all five kinds; then, for each model in
//! the order the session first used it, the same five as `<kind>.<model>`.
//! A kind has no dot, so the model is everything after the first one. The
//! numbers are what the harness wrote, never priced or re-derived: codex's
//! `input` includes its cached input (its own meaning), Claude's and pi's
//! do not. docs/CHAT.md says, per harness, which records are counted.
//!
//! Memory is the totals and one line of counts per model (a handful): the
//! formats' interpreters keep what their dedupe needs (`Tally`), never a
//! count per message.

/// The kinds of tokens, in the order `render` writes them.
pub const KINDS: [&str; 5] = ["input", "output", "cache_read", "cache_write", "reasoning"];

/// Tokens by kind, in `KINDS`' order.
pub type Counts = [u64; 5];

/// Models one usage names apart. Sessions use a few; past this the rest
/// are counted under `OTHER_MODEL`, and the totals stay exact.
pub const MODELS_MAX: usize = 32;

/// Longest model name kept, in bytes.
pub const MODEL_NAME_MAX: usize = 64;

/// Where the models past `MODELS_MAX` are counted.
pub const OTHER_MODEL: &str = "other";

/// Where counts whose record names no model are counted (a codex rollout
/// before its first `turn_context`).
pub const UNKNOWN_MODEL: &str = "unknown";

/// A session's tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    total: Counts,
    models: Vec<(Vec<u8>, Counts)>,
    /// What was counted, charge by charge, when: the reports of `/usage`
    /// sum these by period and tell copies of one reply in several files
    /// apart by their key. A file's own; `add` leaves them.
    charges: Vec<Charge>,
}

/// One counted spend: a reply (or, for a harness that writes a running
/// total, what the total grew by) at the time of the record that first
/// carried it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    /// The reply's key across a whole home (Claude: `message.id` and
    /// `requestId`; codex: `response_id` and its thread), hashed; 0 for a
    /// spend with no key, which is never a copy of another.
    pub key: u64,
    /// Unix seconds.
    pub time: u32,
    /// Its model: a place in this usage's models (`Usage::model_name`).
    pub slot: u8,
    pub counts: Counts,
    /// Of `cache_write`, what was written for an hour (Claude's
    /// `cache_creation.ephemeral_1h_input_tokens`; priced apart); the rest
    /// was written for five minutes.
    pub write_1h: u64,
}

/// Key-less charges of one model within this many seconds of the last are
/// one charge: a codex rollout's running total grows every few seconds,
/// and what a report needs of a spend with no key is its minute.
pub const CHARGE_MERGE_SECS: u32 = 60;

impl Usage {
    pub fn new() -> Usage {
        Usage::default()
    }

    /// The session's tokens, by kind (in `KINDS`' order).
    pub fn total(&self) -> Counts {
        self.total
    }

    /// The tokens counted under `model`, if it was used.
    pub fn model(&self, model: &[u8]) -> Option<Counts> {
        self.models.iter().find(|(m, _)| m == model).map(|&(_, c)| c)
    }

    /// The models, in the order first used.
    pub fn models(&self) -> impl Iterator<Item = (&[u8], Counts)> {
        self.models.iter().map(|(m, c)| (&m[..], *c))
    }

    /// Nothing counted.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty() && self.total == [0; 5]
    }

    /// Adds another session's counts (a subagent's): totals and models.
    pub fn add(&mut self, other: &Usage) {
        plus(&mut self.total, &other.total);
        for (m, c) in &other.models {
            let slot = self.slot(m);
            plus(&mut self.models[slot].1, c);
        }
    }

    /// The text of the `usage` file: one `name value` per line.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in KINDS.iter().zip(self.total) {
            out.extend_from_slice(format!("{k} {v}\n").as_bytes());
        }
        for (m, c) in &self.models {
            for (k, v) in KINDS.iter().zip(c) {
                out.extend_from_slice(k.as_bytes());
                out.push(b'.');
                out.extend_from_slice(m);
                out.extend_from_slice(format!(" {v}\n").as_bytes());
            }
        }
        out
    }

    /// The place of `raw` among the models, added if new: its name made
    /// safe for a line (anything but printable ASCII other than space is
    /// `-`), cut at `MODEL_NAME_MAX`; empty is `UNKNOWN_MODEL`.
    pub(crate) fn slot(&mut self, raw: &[u8]) -> usize {
        let raw = if raw.is_empty() { UNKNOWN_MODEL.as_bytes() } else { raw };
        let raw = &raw[..raw.len().min(MODEL_NAME_MAX)];
        let safe = |&c: &u8| if c.is_ascii_graphic() { c } else { b'-' };
        // Compared as made safe, without making it: this runs per reply.
        let same = |m: &[u8]| m.len() == raw.len() && m.iter().zip(raw).all(|(&a, b)| a == safe(b));
        if let Some(i) = self.models.iter().position(|(m, _)| same(m)) {
            return i;
        }
        if self.models.len() >= MODELS_MAX - 1 && raw != OTHER_MODEL.as_bytes() {
            return self.slot(OTHER_MODEL.as_bytes());
        }
        self.models.push((raw.iter().map(safe).collect(), [0; 5]));
        self.models.len() - 1
    }

    /// The name of the model at `slot` (a charge's).
    pub fn model_name(&self, slot: u8) -> &[u8] {
        self.models.get(usize::from(slot)).map_or(UNKNOWN_MODEL.as_bytes(), |(m, _)| &m[..])
    }

    /// What was counted, charge by charge, in the order counted.
    pub fn charges(&self) -> &[Charge] {
        &self.charges
    }

    /// Counts `c` (of which `write_1h` of the cache writes were for an
    /// hour) for the model at `slot`, spent at `time` by the reply `key`
    /// (0: none): the charge's place, for `grow` and `take_back`. A key-less
    /// charge of the same model within `CHARGE_MERGE_SECS` of the last one
    /// is added to it.
    pub(crate) fn charge(&mut self, slot: usize, key: u64, time: u32, c: &Counts, write_1h: u64) -> usize {
        self.count(slot, c);
        let slot = slot.min(MODELS_MAX - 1) as u8;
        if let Some(last) = self
            .charges
            .last_mut()
            .filter(|l| key == 0 && l.key == 0 && l.slot == slot && time >= l.time && time - l.time < CHARGE_MERGE_SECS)
        {
            plus(&mut last.counts, c);
            last.write_1h = last.write_1h.saturating_add(write_1h);
            return self.charges.len() - 1;
        }
        self.charges.push(Charge { key, time, slot, counts: *c, write_1h });
        self.charges.len() - 1
    }

    /// Charge `at` is seen again with counts `c`: each field rises to the
    /// larger, and what it rose by is counted.
    pub(crate) fn grow(&mut self, at: usize, c: &Counts, write_1h: u64) {
        let Some(ch) = self.charges.get_mut(at) else { return };
        let grew: Counts = std::array::from_fn(|k| c[k].saturating_sub(ch.counts[k]));
        for (o, n) in ch.counts.iter_mut().zip(c) {
            *o = (*o).max(*n);
        }
        ch.write_1h = ch.write_1h.max(write_1h);
        let slot = usize::from(ch.slot);
        self.count(slot, &grew);
    }

    /// Takes charge `at` back (a record superseded): it counts nothing.
    pub(crate) fn take_back(&mut self, at: usize) {
        let Some(ch) = self.charges.get_mut(at) else { return };
        let (slot, c) = (usize::from(ch.slot), std::mem::take(&mut ch.counts));
        ch.write_1h = 0;
        minus(&mut self.total, &c);
        if let Some((_, m)) = self.models.get_mut(slot) {
            minus(m, &c);
        }
    }

    fn count(&mut self, slot: usize, c: &Counts) {
        plus(&mut self.total, c);
        if let Some((_, m)) = self.models.get_mut(slot) {
            plus(m, c);
        }
    }
}

fn plus(a: &mut Counts, b: &Counts) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.saturating_add(*y);
    }
}

fn minus(a: &mut Counts, b: &Counts) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.saturating_sub(*y);
    }
}

/// A harness that keeps a running total (codex's `token_count` events):
/// what the total grew by is counted for the model of the turn. A total
/// lower than the last in any kind is a reset (a new series from zero):
/// it is counted whole, so nothing spent before it is lost and the totals
/// stay the sum of the per-model lines.
///
/// A fork (`fork`) starts its rollout with its parent's history, token
/// counts included, and its totals continue from the parent's: the counts
/// of the copied history set where the fork starts from and count
/// nothing. A thread that writes its own per-response records
/// (`token_usage_record`) is counted from those (`record`); from its first
/// one on, the running totals count nothing, and in a fork what they
/// counted before it is taken back (in the versions that write records,
/// a fork's copied history is all that comes before its first record).
/// docs/CHAT.md, "Usage", has the rules and the versions they were
/// established for.
#[derive(Default)]
pub(crate) struct Running {
    /// The model of the current turn, once known.
    model: Vec<u8>,
    /// The thread's own id (its first `session_meta`'s), hashed; `None`
    /// until known.
    pub own: Option<u64>,
    /// A fork: the second its rollout began. Token counts no later than
    /// it, before any record later than it, are the copied history's.
    fork: Option<u32>,
    copying: bool,
    last: Counts,
    /// A record of the thread's own was counted: the totals no longer are.
    recorded: bool,
    /// In a fork, the charges the totals made until a record.
    provisional: Vec<usize>,
}

impl Running {
    /// The rollout's first `session_meta`: the thread's id, and whether it
    /// is a fork, made at `time`. Later ones (resumes, a copied parent's)
    /// change nothing.
    pub(crate) fn meta(&mut self, id: u64, forked: bool, time: u32) {
        if self.own.is_some() {
            return;
        }
        self.own = Some(id);
        if forked {
            self.fork = Some(time);
            self.copying = true;
        }
    }

    /// The model of the turn that begins.
    pub(crate) fn set_model(&mut self, model: &[u8]) {
        if !model.is_empty() && model != self.model {
            self.model = model.to_vec();
        }
    }

    /// A running total `t`, in a record written at `time`.
    pub(crate) fn total(&mut self, usage: &mut Usage, t: &Counts, time: u32) {
        if self.recorded {
            return;
        }
        if self.copying {
            if self.fork.is_some_and(|f| time <= f) {
                self.last = *t;
                return;
            }
            self.copying = false;
        }
        let reset = t.iter().zip(&self.last).any(|(now, was)| now < was);
        let grew: Counts = if reset { *t } else { std::array::from_fn(|k| t[k] - self.last[k]) };
        self.last = *t;
        let slot = usage.slot(&self.model);
        let at = usage.charge(slot, 0, time, &grew, 0);
        if self.fork.is_some() && self.provisional.last() != Some(&at) {
            self.provisional.push(at);
        }
    }

    /// Whether a record of `thread` (hashed; 0 when it names none) is this
    /// thread's own: another thread's (a parent's copied, a child's
    /// forwarded) is not.
    pub(crate) fn owns(&self, thread: u64) -> bool {
        thread == 0 || self.own.is_none_or(|o| o == 0 || o == thread)
    }

    /// One response's own record, seen the first time: it spent `c` at
    /// `time`; `key` is the response's, with its thread.
    pub(crate) fn record(&mut self, usage: &mut Usage, key: u64, time: u32, c: &Counts) {
        if !self.recorded {
            self.recorded = true;
            for at in std::mem::take(&mut self.provisional) {
                usage.take_back(at);
            }
        }
        let slot = usage.slot(&self.model);
        usage.charge(slot, key, time, c, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_totals_then_each_model_by_kind() {
        let mut u = Usage::new();
        let a = u.slot(b"opus");
        u.charge(a, 0, 0, &[1, 2, 3, 4, 0], 0);
        let b = u.slot(b"qwen3.5:latest");
        u.charge(b, 0, 0, &[10, 20, 0, 0, 5], 0);
        let want = "input 11\noutput 22\ncache_read 3\ncache_write 4\nreasoning 5\n\
            input.opus 1\noutput.opus 2\ncache_read.opus 3\ncache_write.opus 4\nreasoning.opus 0\n\
            input.qwen3.5:latest 10\noutput.qwen3.5:latest 20\ncache_read.qwen3.5:latest 0\n\
            cache_write.qwen3.5:latest 0\nreasoning.qwen3.5:latest 5\n";
        assert_eq!(String::from_utf8(u.render()).unwrap(), want);
        assert_eq!(String::from_utf8(Usage::new().render()).unwrap().lines().count(), 5, "totals always");
    }

    #[test]
    fn a_running_total_is_counted_by_its_growth_for_the_model_in_use() {
        let (mut u, mut r) = (Usage::new(), Running::default());
        r.set_model(b"a");
        r.total(&mut u, &[10, 1, 0, 0, 0], 0);
        r.set_model(b"b");
        r.total(&mut u, &[15, 3, 0, 0, 0], 0);
        assert_eq!(u.total(), [15, 3, 0, 0, 0]);
        assert_eq!((u.model(b"a"), u.model(b"b")), (Some([10, 1, 0, 0, 0]), Some([5, 2, 0, 0, 0])));
    }

    #[test]
    fn a_reset_is_a_new_series_and_erases_nothing() {
        let (mut u, mut r) = (Usage::new(), Running::default());
        r.set_model(b"m");
        r.total(&mut u, &[16_341, 200, 9_000, 0, 50], 0);
        r.total(&mut u, &[0, 0, 0, 0, 0], 0);
        r.total(&mut u, &[100, 10, 0, 0, 0], 0);
        assert_eq!(u.total(), [16_441, 210, 9_000, 0, 50]);
        assert_eq!(u.model(b"m"), Some(u.total()), "the totals are the sum of the per-model lines");
    }

    #[test]
    fn adding_merges_models_by_name_and_past_the_cap_the_rest_is_other() {
        let mut u = Usage::new();
        for i in 0..MODELS_MAX + 5 {
            let s = u.slot(format!("m{i}").as_bytes());
            u.charge(s, 0, 0, &[1, 0, 0, 0, 0], 0);
        }
        assert_eq!(u.models().count(), MODELS_MAX);
        assert_eq!(u.model(OTHER_MODEL.as_bytes()), Some([6, 0, 0, 0, 0]));
        let mut sum = Usage::new();
        sum.add(&u);
        sum.add(&u);
        assert_eq!(sum.total(), [2 * (MODELS_MAX as u64 + 5), 0, 0, 0, 0]);
        assert_eq!(sum.model(b"m0"), Some([2, 0, 0, 0, 0]));
        let s = sum.slot(b"bad name\n");
        assert_eq!(sum.models().nth(s).unwrap().0, OTHER_MODEL.as_bytes(), "past the cap");
        let mut v = Usage::new();
        let s = v.slot(b"bad name\n");
        assert_eq!(v.models().nth(s).unwrap().0, b"bad-name-");
    }
}
