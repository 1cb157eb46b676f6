//! The book: every session's charges, gathered a transcript at a time,
//! then settled — each reply once across the home, each charge priced —
//! and written out as the reports.
//!
//! A reply copied into several files (a resumed or forked Claude
//! session's history, a copied codex rollout) has one key in all of them
//! (`Charge::key`): it counts in the session that began first, the one
//! that spent it, and nowhere else. A charge without a key is its file's
//! alone.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use std::hash::{Hash, Hasher};
use std::rc::Rc;

use crate::chat::dedupe::Ids;
use crate::chat::digest::{FileId, Seen};
use crate::chat::usage::{Charge, Counts, Usage, KINDS};
use crate::harness::Harness;
use crate::localtime::{civil_from_days, days_from_civil, Zone};

use super::prices::{dollars, Prices};
use super::table;
use super::Report;

/// How long a block of Claude's plans runs, from the hour of its first
/// reply; a reply this long after the last one starts a new block.
pub(crate) const BLOCK_SECS: u32 = 5 * 3600;

/// One session's spending, as gathered.
pub(crate) struct Session {
    pub harness: Harness,
    pub id: Box<[u8]>,
    pub cwd: Box<[u8]>,
    /// When its transcripts were last written (their newest mtime).
    pub last_active: u32,
    /// Its transcripts' usages (kept by their digests or indexes, shared,
    /// not copied), each with the book's number for each of its models.
    parts: Vec<(Rc<Usage>, Vec<u32>)>,
    /// Its earliest charge's time.
    first: u32,
}

/// What a report adds up: tokens by kind, and what they cost where it is
/// known.
#[derive(Clone, Copy, Default)]
struct Sum {
    counts: Counts,
    cost: u128,
    /// Some of it has no price.
    unknown: bool,
    /// Any of it was priced.
    priced: bool,
}

impl Sum {
    fn add(&mut self, c: &Counts, cost: Option<u128>) {
        for (a, b) in self.counts.iter_mut().zip(c) {
            *a = a.saturating_add(*b);
        }
        match cost {
            Some(p) => {
                self.cost += p;
                self.priced = true;
            }
            None => self.unknown = true,
        }
    }

    fn merge(&mut self, o: &Sum) {
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a = a.saturating_add(b);
        }
        self.cost += o.cost;
        self.unknown |= o.unknown;
        self.priced |= o.priced;
    }

    /// The tokens, then the cost: `?` where nothing of it has a price,
    /// `+?` after what is known where some of it has none.
    fn cells(&self) -> Vec<String> {
        let mut out: Vec<String> = self.counts.iter().map(u64::to_string).collect();
        out.push(match (self.priced, self.unknown) {
            (_, false) => dollars(self.cost),
            (false, true) => "?".into(),
            (true, true) => format!("{}+?", dollars(self.cost)),
        });
        out
    }
}

/// Every session's charges, gathered.
pub(crate) struct Book {
    sessions: Vec<Session>,
    models: Vec<Box<[u8]>>,
    model_ids: HashMap<Box<[u8]>, u32>,
    /// What was added, as a hash of each transcript's identity and state
    /// (`FileId`, `Seen`): the same home, unchanged, has the same one.
    /// `None` once a transcript came without one (a live index).
    print: Option<u64>,
}

impl Default for Book {
    fn default() -> Book {
        Book { sessions: Vec::new(), models: Vec::new(), model_ids: HashMap::new(), print: Some(0x9a6e_5eed) }
    }
}

impl Book {
    /// A transcript of session (`h`, `id`) said `usage` (the session's own
    /// or a subagent's; they come one after another), its records naming
    /// `cwd`; it was last written at `mtime`.
    /// `file` is the transcript as its digest knows it, if it does.
    pub(crate) fn add(
        &mut self,
        h: Harness,
        id: &[u8],
        cwd: &[u8],
        mtime: u32,
        usage: Rc<Usage>,
        file: Option<(FileId, Seen)>,
    ) {
        self.print = self.print.zip(file).map(|(p, (f, seen))| {
            let mut hs = std::hash::DefaultHasher::new();
            (p, h, id, f, seen.size, seen.mtime_ns, seen.ctime_ns).hash(&mut hs);
            hs.finish()
        });
        let same = self.sessions.last().is_some_and(|s| s.harness == h && &*s.id == id);
        if !same {
            let s = Session {
                harness: h,
                id: id.into(),
                cwd: cwd.into(),
                last_active: mtime,
                parts: Vec::new(),
                first: u32::MAX,
            };
            self.sessions.push(s);
        }
        // Each of the usage's models, by its slot, as the book's.
        let models: Vec<u32> =
            (0..usage.models().count()).map(|slot| self.model_id(usage.model_name(slot as u8))).collect();
        let first = usage.charges().iter().map(|c| c.time).min().unwrap_or(u32::MAX);
        let s = self.sessions.last_mut().expect("pushed above");
        s.first = s.first.min(first);
        s.parts.push((usage, models));
        s.last_active = s.last_active.max(mtime);
        if s.cwd.is_empty() {
            s.cwd = cwd.into();
        }
    }

    /// The hash of everything added, if every transcript had a digest.
    pub(crate) fn fingerprint(&self) -> Option<u64> {
        self.print
    }

    fn model_id(&mut self, name: &[u8]) -> u32 {
        if let Some(&m) = self.model_ids.get(name) {
            return m;
        }
        let m = self.models.len() as u32;
        self.models.push(name.into());
        self.model_ids.insert(name.into(), m);
        m
    }

    /// Each reply once, in the session that began first; each charge
    /// priced and summed into every report's rows: a slice at a time
    /// (`Settling::step`), so a home of a million replies is not one turn
    /// of the loop.
    pub(crate) fn settle(mut self, prices: &Prices, zone: &Zone, now: u32) -> Settling {
        self.sessions.sort_by_cached_key(|s| (s.first, s.harness, s.id.clone()));
        let rows: Vec<_> = self.models.iter().map(|m| prices.find(m).cloned()).collect();
        let unpriced = (0..self.models.len()).filter(|&m| rows[m].is_none()).map(|m| self.models[m].clone()).collect();
        let rows_of = self.sessions.iter().map(|_| SessionSum::default()).collect();
        Settling {
            sessions: self.sessions,
            models: self.models,
            rows,
            zone: zone.clone(),
            keys: HashSet::default(),
            day_at: HashMap::new(),
            last_day: None,
            next: 0,
            finished: false,
            out: Settled {
                days: Vec::new(),
                sessions: Vec::new(),
                rows_of,
                claude: Vec::new(),
                recent: BTreeMap::new(),
                now,
                copies: 0,
                unpriced,
                prices: prices.clone(),
                models: Vec::new(),
            },
        }
    }
}

/// How far back the hours `block` sums are kept: a block open now began
/// at most its length ago, at an hour.
pub(crate) const RECENT_SECS: u32 = BLOCK_SECS + 3600;

/// Charges settled in one step: a few milliseconds of the loop.
pub(crate) const SETTLE_SLICE: usize = 50_000;

/// A book being settled, a slice of charges at a time.
pub(crate) struct Settling {
    sessions: Vec<Session>,
    models: Vec<Box<[u8]>>,
    rows: Vec<Option<super::prices::Row>>,
    zone: Zone,
    /// Keys of the replies counted (they are hashes already).
    keys: HashSet<u64, Ids>,
    /// Where each (day, harness, model) is summed in `Settled::days`, and
    /// the last one used.
    day_at: HashMap<(i64, Harness, u32), usize>,
    last_day: Option<((i64, Harness, u32), usize)>,
    /// The next session to settle.
    next: usize,
    finished: bool,
    out: Settled,
}

impl Settling {
    /// Settles sessions until about `budget` charges are done: the reports'
    /// text once every session is.
    pub(crate) fn step(&mut self, budget: usize) -> Option<&Settled> {
        let mut done = 0;
        while done < budget {
            let Some(s) = self.sessions.get_mut(self.next) else {
                self.finish();
                return Some(&self.out);
            };
            let parts = std::mem::take(&mut s.parts);
            let (h, i) = (s.harness, self.next);
            let mut n = 0;
            for (usage, models) in &parts {
                n += usage.charges().len();
                for c in usage.charges() {
                    self.charge(h, i, c, models[usize::from(c.slot)]);
                }
            }
            done += n + 1;
            self.next += 1;
        }
        None
    }

    /// Charge `c` of session `i` (harness `h`), its model the book's `model`:
    /// left out if its reply was counted in a session before; else priced
    /// and summed by day, session and, for Claude, block.
    fn charge(&mut self, h: Harness, i: usize, c: &Charge, model: u32) {
        if c.key != 0 && !self.keys.insert(c.key) {
            self.out.copies += 1;
            return;
        }
        let cost = self.rows[model as usize].as_ref().map(|r| Prices::cost(r, h, c));
        let day = (day_of(&self.zone, c.time), h, model);
        // A session's charges run in order: most share the last one's day
        // and model.
        let at = match self.last_day {
            Some((key, at)) if key == day => at,
            _ => {
                let next = self.out.days.len();
                let at = *self.day_at.entry(day).or_insert(next);
                if at == next {
                    self.out.days.push((day, Sum::default()));
                }
                self.last_day = Some((day, at));
                at
            }
        };
        self.out.days[at].1.add(&c.counts, cost);
        let row = &mut self.out.rows_of[i];
        row.sum.add(&c.counts, cost);
        row.started = row.started.min(c.time);
        if !row.models.contains(&model) {
            row.models.push(model);
        }
        if h == Harness::Claude {
            self.out.claude.push(c.time);
            if c.time.saturating_add(RECENT_SECS) >= self.out.now {
                self.out.recent.entry(c.time - c.time % 3600).or_default().add(&c.counts, cost);
            }
        }
    }

    /// The reports, settled (`step` said they are).
    pub(crate) fn into_settled(self) -> Settled {
        self.out
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.out.claude.sort_unstable();
        self.out.models = std::mem::take(&mut self.models);
        self.out.sessions = self
            .sessions
            .iter_mut()
            .map(|s| SessionHead {
                harness: s.harness,
                id: std::mem::take(&mut s.id),
                cwd: std::mem::take(&mut s.cwd),
                last_active: s.last_active,
            })
            .collect();
        self.keys = HashSet::default();
        self.day_at = HashMap::new();
    }
}

/// What the sessions report says of a session besides its sums.
struct SessionHead {
    harness: Harness,
    id: Box<[u8]>,
    cwd: Box<[u8]>,
    last_active: u32,
}

/// A session's sums.
struct SessionSum {
    sum: Sum,
    started: u32,
    models: Vec<u32>,
}

impl Default for SessionSum {
    fn default() -> SessionSum {
        SessionSum { sum: Sum::default(), started: u32::MAX, models: Vec::new() }
    }
}

/// The columns of `block`, and of a `/usage/wait` line.
pub(crate) const BLOCK_HEADER: [&str; 11] =
    ["harness", "began", "ends", KINDS[0], KINDS[1], KINDS[2], KINDS[3], KINDS[4], "cost", "per_hour", "at_end"];

/// The block as `/usage/wait` reports it (`Settled::block_line`).
pub(crate) struct BlockLine {
    pub line: Vec<u8>,
    pub key: std::rc::Rc<[u8]>,
    pub ends: Option<u32>,
}

/// The book settled: every report's rows, summed.
pub(crate) struct Settled {
    /// By (day, harness, model): what daily, weekly and monthly sum.
    days: Vec<((i64, Harness, u32), Sum)>,
    sessions: Vec<SessionHead>,
    rows_of: Vec<SessionSum>,
    /// The times of Claude Code's charges, in order: where its blocks
    /// begin.
    claude: Vec<u32>,
    /// What Claude Code spent in each of the last hours before `now`, by
    /// the hour: what the block open now holds.
    recent: BTreeMap<u32, Sum>,
    /// The time the reports are as of (`block`'s now).
    pub now: u32,
    /// Charges left out as copies of a reply counted in another file.
    pub copies: u64,
    unpriced: BTreeSet<Box<[u8]>>,
    prices: Prices,
    models: Vec<Box<[u8]>>,
}

/// The local day of `t` in `zone`, as days since 1970-01-01.
fn day_of(zone: &Zone, t: u32) -> i64 {
    let t = i64::from(t);
    (t + i64::from(zone.offset_at(t))).div_euclid(86_400)
}

/// The period of report `r` day `day` falls in, as its first day.
fn period(r: Report, day: i64) -> i64 {
    match r {
        // Weeks begin on Monday (ISO 8601); 1970-01-01 was a Thursday.
        Report::Weekly => day - (day + 3).rem_euclid(7),
        Report::Monthly => {
            let (y, m, _) = civil_from_days(day);
            days_from_civil(y, m, 1)
        }
        _ => day,
    }
}

/// The time of day and the calendar, in a zone.
pub(crate) struct Clock<'a> {
    pub zone: &'a Zone,
    /// Now, Unix seconds (for `block`).
    pub now: u32,
}

impl Clock<'_> {
    fn date(day: i64) -> String {
        let (y, m, d) = civil_from_days(day);
        format!("{y:04}-{m:02}-{d:02}")
    }

    /// `2026-12-01T10:04`, local.
    fn stamp(&self, t: u32) -> String {
        let local = i64::from(t) + i64::from(self.zone.offset_at(i64::from(t)));
        let (day, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        format!("{}T{:02}:{:02}", Self::date(day), secs / 3600, secs % 3600 / 60)
    }

    fn period_name(r: Report, first_day: i64) -> String {
        let d = Self::date(first_day);
        if r == Report::Monthly {
            d[..7].to_string()
        } else {
            d
        }
    }
}

const KIND_COLS: [&str; 5] = KINDS;

impl Settled {
    /// The text of report `r`.
    pub(crate) fn render(&self, r: Report, clock: &Clock) -> Vec<u8> {
        match r {
            Report::Daily | Report::Weekly | Report::Monthly => self.periods(r),
            Report::Sessions => self.sessions(clock),
            Report::Projects => self.projects(),
            Report::Block => self.block(clock),
            Report::Prices => self.prices(),
        }
    }

    fn model(&self, m: u32) -> String {
        String::from_utf8_lossy(&self.models[m as usize]).into_owned()
    }

    fn periods(&self, r: Report) -> Vec<u8> {
        let mut sums: HashMap<(i64, Harness, u32), Sum> = HashMap::new();
        for &((day, h, m), sum) in &self.days {
            sums.entry((period(r, day), h, m)).or_default().merge(&sum);
        }
        let mut by: Vec<(&(i64, Harness, u32), &Sum)> = sums.iter().collect();
        by.sort_by_key(|(key, _)| (key.0, key.1, self.model(key.2)));
        let mut rows = Vec::new();
        let (mut total, mut period_total, mut current) = (Sum::default(), Sum::default(), None);
        let flush = |rows: &mut Vec<Vec<String>>, day: Option<i64>, sum: &Sum| {
            if let Some(day) = day {
                let mut row = vec![Clock::period_name(r, day), "total".into(), "-".into()];
                row.extend(sum.cells());
                rows.push(row);
            }
        };
        for (&(day, h, m), sum) in by {
            if current != Some(day) {
                flush(&mut rows, current, &period_total);
                (current, period_total) = (Some(day), Sum::default());
            }
            period_total.merge(sum);
            total.merge(sum);
            let mut row = vec![Clock::period_name(r, day), h.name().into(), self.model(m)];
            row.extend(sum.cells());
            rows.push(row);
        }
        flush(&mut rows, current, &period_total);
        let mut row = vec!["all".into(), "total".into(), "-".into()];
        row.extend(total.cells());
        rows.push(row);
        let first = match r {
            Report::Weekly => "week",
            Report::Monthly => "month",
            _ => "day",
        };
        let header: Vec<&str> = [first, "harness", "model"].into_iter().chain(KIND_COLS).chain(["cost"]).collect();
        table::render(&header, &rows)
    }

    fn sessions(&self, clock: &Clock) -> Vec<u8> {
        let mut rows = Vec::new();
        let mut total = Sum::default();
        for (s, r) in self.sessions.iter().zip(&self.rows_of) {
            total.merge(&r.sum);
            let started = if r.started == u32::MAX { "-".into() } else { clock.stamp(r.started) };
            let names: Vec<String> = r.models.iter().map(|&m| self.model(m)).collect();
            let mut row = vec![
                s.harness.name().into(),
                String::from_utf8_lossy(&s.id).into_owned(),
                started,
                clock.stamp(s.last_active),
                if names.is_empty() { "-".into() } else { names.join(",") },
            ];
            row.extend(r.sum.cells());
            row.push(cwd(&s.cwd));
            rows.push(row);
        }
        let mut row = vec!["total".into(), format!("{}", self.sessions.len()), "-".into(), "-".into(), "-".into()];
        row.extend(total.cells());
        row.push("-".into());
        rows.push(row);
        let header: Vec<&str> = ["harness", "session", "started", "last_active", "models"]
            .into_iter()
            .chain(KIND_COLS)
            .chain(["cost", "cwd"])
            .collect();
        table::render(&header, &rows)
    }

    fn projects(&self) -> Vec<u8> {
        let mut by: BTreeMap<&[u8], (BTreeSet<Harness>, usize, Sum)> = BTreeMap::new();
        for (s, r) in self.sessions.iter().zip(&self.rows_of) {
            let e = by.entry(&s.cwd).or_default();
            e.0.insert(s.harness);
            e.1 += 1;
            e.2.merge(&r.sum);
        }
        let mut rows = Vec::new();
        let mut total = Sum::default();
        for (dir, (hs, n, sum)) in &by {
            total.merge(sum);
            let names: Vec<&str> = hs.iter().map(|h| h.name()).collect();
            let mut row = vec![names.join(","), n.to_string()];
            row.extend(sum.cells());
            row.push(cwd(dir));
            rows.push(row);
        }
        let mut row = vec!["total".into(), self.sessions.len().to_string()];
        row.extend(total.cells());
        row.push("-".into());
        rows.push(row);
        let header: Vec<&str> = ["harness", "sessions"].into_iter().chain(KIND_COLS).chain(["cost", "cwd"]).collect();
        table::render(&header, &rows)
    }

    /// The 5-hour window Claude's plans meter, as of now: its replies, when
    /// it began (the hour of its first) and ends, the rate of spending so
    /// far and where the window ends at that rate. Claude Code's replies
    /// only. No window is open when the last reply is a block's length
    /// ago: the row says `none`.
    fn block(&self, clock: &Clock) -> Vec<u8> {
        table::render(&BLOCK_HEADER, &[self.block_row(clock).0])
    }

    /// `block`'s row, and when its window ends (none open: `None`).
    fn block_row(&self, clock: &Clock) -> (Vec<String>, Option<u32>) {
        let (mut start, mut last) = (None::<u32>, 0u32);
        for &t in &self.claude {
            if !start.is_some_and(|s| t < s + BLOCK_SECS && t < last + BLOCK_SECS) {
                start = Some(t - t % 3600);
            }
            last = t;
        }
        let mut sum = Sum::default();
        if let Some(s) = start {
            for (_, h) in self.recent.range(s..) {
                sum.merge(h);
            }
        }
        match start.filter(|&s| clock.now < s + BLOCK_SECS) {
            None => {
                let mut r = vec!["claude".into(), "none".into(), "-".into()];
                r.extend(Sum::default().cells());
                r.extend(["0.0000".into(), "0.0000".into()]);
                (r, None)
            }
            Some(s) => {
                let elapsed = u128::from(clock.now.saturating_sub(s).max(60));
                let per_hour = sum.cost * 3600 / elapsed;
                let at_end = sum.cost + per_hour * u128::from(s + BLOCK_SECS - clock.now.max(s)) / 3600;
                let mut r = vec!["claude".into(), clock.stamp(s), clock.stamp(s + BLOCK_SECS)];
                r.extend(sum.cells());
                let mark = if sum.unknown { "+?" } else { "" };
                r.extend([format!("{}{mark}", dollars(per_hour)), format!("{}{mark}", dollars(at_end))]);
                (r, Some(s + BLOCK_SECS))
            }
        }
    }

    /// `/usage/wait`'s view of the block: its row as one line, the cells
    /// that say it changed (all but the rate and the projection, which
    /// move with the clock alone), and when it ends.
    pub(crate) fn block_line(&self, clock: &Clock) -> BlockLine {
        let (row, ends) = self.block_row(clock);
        let mut line = row.join(" ").into_bytes();
        line.push(b'\n');
        let key = row[..row.len() - 2].join(" ").into_bytes().into();
        BlockLine { line, key, ends }
    }

    fn prices(&self) -> Vec<u8> {
        let mut rows = Vec::new();
        let per_m = |p: u64| {
            let s = format!("{}.{:06}", p / 1_000_000, p % 1_000_000);
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        for r in self.prices.rows() {
            let mut tiers = vec![("-".to_string(), r.base)];
            if let Some((above, long)) = r.long {
                tiers.push((format!(">{above}"), long));
            }
            for (prompt, t) in tiers {
                let cells = [t.input, t.output, t.cache_read, t.write_5m, t.write_1h].map(per_m);
                let mut row = vec![r.model.clone(), prompt];
                row.extend(cells);
                row.extend([r.read.clone(), r.source.clone()]);
                rows.push(row);
            }
        }
        for m in &self.unpriced {
            let mut row = vec![String::from_utf8_lossy(m).into_owned(), "-".into()];
            row.extend(std::iter::repeat_n("?".to_string(), 5));
            row.extend(["-".into(), "unpriced: seen in a transcript, in no row of the table".into()]);
            rows.push(row);
        }
        let header = ["model", "prompt", "input", "output", "cache_read", "write_5m", "write_1h", "read", "source"];
        table::render(&header, &rows)
    }
}

/// A working directory as a cell: `-` for none; control bytes shown as `?`
/// so a row stays one line.
fn cwd(dir: &[u8]) -> String {
    if dir.is_empty() {
        return "-".into();
    }
    String::from_utf8_lossy(dir).chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}
