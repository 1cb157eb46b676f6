//! The reports' rules (docs/USAGE.md), one test each.

use super::book::{Book, Clock};
use super::{Prices, Report};
use crate::chat::usage::Usage;
use crate::harness::Harness;
use crate::localtime::Zone;
use std::rc::Rc;

/// 2026-12-01T10:00:00Z.
const T0: u32 = 1_796_119_200;

fn usage(charges: &[(&str, u64, u32, [u64; 5])]) -> Rc<Usage> {
    let mut u = Usage::new();
    for &(model, key, time, counts) in charges {
        let slot = u.slot(model.as_bytes());
        u.charge(slot, key, time, &counts, 0);
    }
    Rc::new(u)
}

fn text(book: Book, r: Report, zone: &Zone, now: u32) -> String {
    let mut settling = book.settle(&Prices::built_in(), zone, now);
    let settled = settled(&mut settling);
    String::from_utf8(settled.render(r, &Clock { zone, now })).unwrap()
}

/// Settled a charge at a time: the slices add up to the whole.
fn settled(s: &mut super::book::Settling) -> &super::book::Settled {
    let mut steps = 0;
    while s.step(1).is_none() {
        steps += 1;
        assert!(steps < 1_000_000, "settling never ends");
    }
    s.step(1).unwrap()
}

fn lines_with<'a>(t: &'a str, word: &str) -> Vec<&'a str> {
    t.lines().filter(|l| l.split_whitespace().any(|w| w == word)).collect()
}

#[test]
fn a_reply_copied_into_a_later_session_counts_once_in_the_session_that_spent_it() {
    let mut b = Book::default();
    // A resumed session's file repeats the first session's reply 7.
    b.add(
        Harness::Claude,
        b"resumed",
        b"/w",
        T0 + 900,
        usage(&[("claude-opus-4-5", 7, T0, [10, 20, 0, 0, 0]), ("claude-opus-4-5", 8, T0 + 600, [1, 2, 0, 0, 0])]),
        None,
    );
    b.add(Harness::Claude, b"first", b"/w", T0 + 60, usage(&[("claude-opus-4-5", 7, T0, [10, 20, 0, 0, 0])]), None);
    let t = text(b, Report::Sessions, &Zone::utc(), T0);
    let first = lines_with(&t, "first")[0];
    let resumed = lines_with(&t, "resumed")[0];
    assert!(first.contains(" 10 ") && first.contains(" 20 "), "{t}");
    assert!(resumed.contains(" 1 ") && resumed.contains(" 2 ") && !resumed.contains(" 20 "), "{t}");
    let total = t.lines().last().unwrap();
    assert!(total.starts_with("total") && total.contains(" 11 ") && total.contains(" 22 "), "{t}");
}

#[test]
fn charges_without_a_key_count_in_every_file_that_has_them() {
    let mut b = Book::default();
    b.add(Harness::Pi, b"a", b"/w", T0, usage(&[("qwen", 0, T0, [5, 0, 0, 0, 0])]), None);
    b.add(Harness::Pi, b"b", b"/w", T0, usage(&[("qwen", 0, T0, [5, 0, 0, 0, 0])]), None);
    let t = text(b, Report::Daily, &Zone::utc(), T0);
    assert!(lines_with(&t, "all")[0].contains(" 10 "), "{t}");
}

#[test]
fn days_weeks_and_months_are_the_zones() {
    // 2026-11-30T23:30Z is 1 December 00:30 in CET; 2026-11-29T23:30Z, a
    // Sunday, is Monday 30 November 00:30 there.
    let late = T0 - 10 * 3600 - 1800;
    let sunday = late - 86_400;
    let cet = Zone::named("CET-1").unwrap();
    let book = |t: u32| {
        let mut b = Book::default();
        b.add(Harness::Codex, b"s", b"/w", t, usage(&[("gpt-5", 1, t, [100, 1, 0, 0, 0])]), None);
        b
    };
    assert!(text(book(late), Report::Daily, &Zone::utc(), T0).contains("2026-11-30  codex"));
    assert!(text(book(late), Report::Daily, &cet, T0).contains("2026-12-01  codex"));
    assert!(
        text(book(sunday), Report::Weekly, &Zone::utc(), T0).contains("2026-11-23  codex"),
        "weeks begin on Monday"
    );
    assert!(text(book(sunday), Report::Weekly, &cet, T0).contains("2026-11-30  codex"));
    assert!(text(book(late), Report::Monthly, &Zone::utc(), T0).contains("2026-11  codex"));
    assert!(text(book(late), Report::Monthly, &cet, T0).contains("2026-12  codex"));
}

#[test]
fn every_period_has_its_total_and_the_report_a_grand_total_all_marked_in_the_harness_column() {
    let mut b = Book::default();
    b.add(
        Harness::Claude,
        b"s",
        b"/w",
        T0,
        usage(&[
            ("claude-opus-4-5", 1, T0, [1_000_000, 0, 0, 0, 0]),
            ("claude-haiku-4-5", 2, T0 + 86_400, [1_000_000, 0, 0, 0, 0]),
        ]),
        None,
    );
    let t = text(b, Report::Daily, &Zone::utc(), T0);
    let totals = lines_with(&t, "total");
    assert_eq!(totals.len(), 3, "{t}");
    assert!(totals[0].starts_with("2026-12-01") && totals[0].ends_with("5.0000"), "{t}");
    assert!(totals[1].starts_with("2026-12-02") && totals[1].ends_with("1.0000"), "{t}");
    assert!(totals[2].starts_with("all") && totals[2].ends_with("6.0000"), "{t}");
    let rows: Vec<&str> = t.lines().skip(1).filter(|l| l.split_whitespace().nth(1) != Some("total")).collect();
    assert_eq!(rows.len(), 2, "awk '$2 != \"total\"' keeps the rows: {t}");
}

#[test]
fn a_model_without_a_price_costs_unknown_never_zero_and_is_listed_unpriced() {
    let mut b = Book::default();
    b.add(
        Harness::Codex,
        b"s",
        b"/w",
        T0,
        usage(&[("gpt-5", 1, T0, [1_000_000, 0, 0, 0, 0]), ("gpt-9-unreleased", 2, T0 + 1, [1_000_000, 0, 0, 0, 0])]),
        None,
    );
    let mut settling = b.settle(&Prices::built_in(), &Zone::utc(), T0);
    let settled = settled(&mut settling);
    let clock = Clock { zone: &Zone::utc(), now: T0 };
    let daily = String::from_utf8(settled.render(Report::Daily, &clock)).unwrap();
    assert!(lines_with(&daily, "gpt-9-unreleased")[0].ends_with('?'), "{daily}");
    assert!(lines_with(&daily, "all")[0].ends_with("1.2500+?"), "{daily}");
    let prices = String::from_utf8(settled.render(Report::Prices, &clock)).unwrap();
    assert!(lines_with(&prices, "gpt-9-unreleased")[0].contains("unpriced"), "{prices}");
    assert!(lines_with(&prices, "gpt-5")[0].contains("https://"), "{prices}");
}

#[test]
fn a_session_with_no_tokens_is_still_listed() {
    let mut b = Book::default();
    b.add(Harness::Dsh, b"quiet", b"/home/u/a dir", T0, Rc::new(Usage::new()), None);
    let t = text(b, Report::Sessions, &Zone::utc(), T0);
    let row = lines_with(&t, "quiet")[0];
    assert!(row.starts_with("dsh") && row.ends_with("0.0000  /home/u/a dir"), "{t}");
    let p = text(
        {
            let mut b = Book::default();
            b.add(Harness::Dsh, b"quiet", b"/home/u/a dir", T0, Rc::new(Usage::new()), None);
            b
        },
        Report::Projects,
        &Zone::utc(),
        T0,
    );
    assert!(p.lines().nth(1).unwrap().ends_with("/home/u/a dir"), "{p}");
}

#[test]
fn the_block_begins_at_the_hour_of_its_first_reply_and_a_gap_of_five_hours_ends_it() {
    let mut b = Book::default();
    b.add(
        Harness::Claude,
        b"s",
        b"/w",
        T0,
        usage(&[
            ("claude-opus-4-5", 1, T0 - 8 * 3600, [1_000_000, 0, 0, 0, 0]),
            ("claude-opus-4-5", 2, T0 + 1200, [1_000_000, 0, 0, 0, 0]),
            ("claude-opus-4-5", 3, T0 + 1800, [1_000_000, 0, 0, 0, 0]),
        ]),
        None,
    );
    b.add(Harness::Codex, b"c", b"/w", T0, usage(&[("gpt-5", 4, T0 + 1500, [9_000_000, 0, 0, 0, 0])]), None);
    // An hour into the block: $10 spent, $10 an hour, $50 at its end.
    let t = text(b, Report::Block, &Zone::utc(), T0 + 3600);
    let row = t.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..3], ["claude", "2026-12-01T10:00", "2026-12-01T15:00"], "{t}");
    assert_eq!(cells[3], "2000000", "Claude's replies only: {t}");
    assert_eq!(cells[8..], ["10.0000", "10.0000", "50.0000"], "{t}");
    let mut idle = Book::default();
    idle.add(Harness::Claude, b"s", b"/w", T0, usage(&[("claude-opus-4-5", 1, T0, [1, 0, 0, 0, 0])]), None);
    assert!(text(idle, Report::Block, &Zone::utc(), T0 + 5 * 3600).lines().nth(1).unwrap().contains("none"));
}

#[test]
fn the_wait_line_is_the_block_row_changed_only_by_what_was_spent_or_the_window() {
    let mut b = Book::default();
    b.add(Harness::Claude, b"s", b"/w", T0, usage(&[("claude-opus-4-5", 1, T0 + 1200, [1_000_000, 0, 0, 0, 0])]), None);
    let mut settling = b.settle(&Prices::built_in(), &Zone::utc(), T0 + 3600);
    let settled = settled(&mut settling);
    let zone = Zone::utc();
    let at = |now| settled.block_line(&Clock { zone: &zone, now });
    let (early, late) = (at(T0 + 1800), at(T0 + 3 * 3600));
    let text = String::from_utf8(early.line.clone()).unwrap();
    let table = String::from_utf8(settled.render(Report::Block, &Clock { zone: &zone, now: T0 + 1800 })).unwrap();
    assert_eq!(
        text.split_whitespace().collect::<Vec<_>>(),
        table.lines().nth(1).unwrap().split_whitespace().collect::<Vec<_>>(),
        "the line is block's row"
    );
    assert_ne!(early.line, late.line, "the rate moves with the clock");
    assert_eq!(early.key, late.key, "the clock alone is not a change");
    assert_eq!(early.ends, Some(T0 + 5 * 3600), "it ends five hours after the hour of its first reply");
    let ended = at(T0 + 5 * 3600);
    assert_ne!(ended.key, early.key, "a window that ended is a change");
    assert_eq!(ended.ends, None);
}
