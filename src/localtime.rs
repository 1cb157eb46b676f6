//! `localtime`: the local zone's offset from UTC at an instant, for `ls -l`
//! and for the days, weeks and months of `/usage`'s reports.
//!
//! `ls -l` shows a file's time as the user's clock would, but this crate has
//! no unsafe to call localtime(3) with and no date crate, so the zone is read
//! the way the C library reads it: `$TZ` (a zoneinfo name, an absolute or
//! `:`-prefixed path, or a POSIX rule such as `CET-1CEST,M3.5.0,M10.5.0/3`),
//! else `/etc/localtime`. A TZif file's transitions answer for the past; its
//! footer rule answers past the last transition, which in a "slim" zoneinfo
//! file is every recent year. Anything unreadable is UTC: an hour off in a
//! listing beats no listing.
//!
//! Also the civil-calendar arithmetic (Howard Hinnant's `days_from_civil`)
//! that `format` needs to print a date.

use std::io::Read;

/// Larger than any real zone file (the largest are a few KiB); a file past
/// it is not a zone file and is not read whole.
const TZIF_BYTES_MAX: u64 = 256 * 1024;
/// Where zone names in `$TZ` are looked up.
const ZONEINFO_DIR: &str = "/usr/share/zoneinfo";
/// A TZif header: magic, version, 15 reserved bytes, six counts.
const TZIF_HEADER_LEN: usize = 44;
/// A POSIX rule naming a DST zone but no dates gets the US dates, as glibc's
/// built-in default does.
const DEFAULT_DST_DATES: &str = "M3.2.0,M11.1.0";
const SECS_PER_DAY: i64 = 86_400;

/// A time zone: offsets east of UTC, in seconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Zone {
    /// Transition instants, ascending.
    transitions: Vec<i64>,
    /// For each transition, the index into `offsets` it switches to.
    kinds: Vec<u8>,
    offsets: Vec<i32>,
    /// The rule for instants past the last transition (or for all of them).
    rule: Option<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    std: i32,
    dst: Option<Dst>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Dst {
    offset: i32,
    /// When DST starts, as a date and seconds after its local (standard)
    /// midnight; and when it ends, in local daylight time.
    start: (Date, i64),
    end: (Date, i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Date {
    /// `Jn`: day 1..=365, February 29 never counted.
    Julian1(u16),
    /// `n`: day 0..=365, February 29 counted.
    Julian0(u16),
    /// `Mm.w.d`: weekday d (0 = Sunday) of week w (5 = last) of month m.
    MonthWeekDay { month: u32, week: u32, weekday: u32 },
}

impl Zone {
    pub fn utc() -> Zone {
        Zone::default()
    }

    /// The zone `$TZ` names, else `/etc/localtime`, else UTC.
    pub fn local() -> Zone {
        let tz = std::env::var("TZ").ok();
        Zone::from_tz(tz.as_deref()).unwrap_or_else(Zone::utc)
    }

    /// The zone `tz` names, as `$TZ` would (a zoneinfo name, a path, a
    /// POSIX rule); `None` if it names none this machine has.
    pub fn named(tz: &str) -> Option<Zone> {
        Zone::from_tz(Some(tz))
    }

    fn from_tz(tz: Option<&str>) -> Option<Zone> {
        let Some(tz) = tz else {
            return read_tzif("/etc/localtime");
        };
        let tz = tz.strip_prefix(':').unwrap_or(tz);
        if tz.is_empty() {
            return Some(Zone::utc());
        }
        if tz.starts_with('/') {
            return read_tzif(tz);
        }
        let named = match tz.split('/').any(|part| part == "..") {
            true => None,
            false => read_tzif(&format!("{ZONEINFO_DIR}/{tz}")),
        };
        named.or_else(|| Some(Zone { rule: Some(parse_rule(tz)?), ..Zone::utc() }))
    }

    /// Seconds east of UTC at instant `t`.
    pub(crate) fn offset_at(&self, t: i64) -> i32 {
        let past_transitions = self.transitions.last().is_none_or(|&last| t >= last);
        if let (true, Some(rule)) = (past_transitions, &self.rule) {
            return rule.offset_at(t);
        }
        // RFC 8536: before the first transition, local time type 0 applies.
        let i = self.transitions.partition_point(|&x| x <= t);
        let kind = if i == 0 { 0 } else { self.kinds[i - 1] as usize };
        self.offsets.get(kind).copied().unwrap_or(0)
    }
}

impl Rule {
    fn offset_at(&self, t: i64) -> i32 {
        let Some(dst) = &self.dst else {
            return self.std;
        };
        let (year, _, _) = civil_from_days((t + self.std as i64).div_euclid(SECS_PER_DAY));
        let start = dst.start.0.day(year) * SECS_PER_DAY + dst.start.1 - self.std as i64;
        let end = dst.end.0.day(year) * SECS_PER_DAY + dst.end.1 - dst.offset as i64;
        // Southern zones start DST late in the year and end it early.
        let in_dst = match start <= end {
            true => start <= t && t < end,
            false => !(end <= t && t < start),
        };
        if in_dst {
            dst.offset
        } else {
            self.std
        }
    }
}

impl Date {
    /// The date in `year`, as days since 1970-01-01.
    fn day(self, year: i64) -> i64 {
        let jan1 = days_from_civil(year, 1, 1);
        match self {
            Date::Julian1(n) => {
                let leap_skip = (is_leap(year) && n >= 60) as i64;
                jan1 + n as i64 - 1 + leap_skip
            }
            Date::Julian0(n) => jan1 + n as i64,
            Date::MonthWeekDay { month, week, weekday } => {
                let first = days_from_civil(year, month, 1);
                let month_len = days_from_civil(year + (month == 12) as i64, month % 12 + 1, 1) - first;
                let first_weekday = (first + 4).rem_euclid(7); // 1970-01-01 was a Thursday
                let mut day = (weekday as i64 - first_weekday).rem_euclid(7) + 7 * (week as i64 - 1);
                while day >= month_len {
                    day -= 7;
                }
                first + day
            }
        }
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let march_based_month = (month as i64 + 9) % 12;
    let day_of_year = (153 * march_based_month + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date (year, month 1..=12, day 1..=31) of a day since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_based_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * march_based_month + 2) / 5 + 1) as u32;
    let month = if march_based_month < 10 { march_based_month + 3 } else { march_based_month - 9 } as u32;
    let year = year_of_era + era * 400 + (month <= 2) as i64;
    (year, month, day)
}

fn read_tzif(path: &str) -> Option<Zone> {
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(TZIF_BYTES_MAX).read_to_end(&mut bytes).ok()?;
    parse_tzif(&bytes)
}

/// The six counts of a TZif header (RFC 8536 §3.1), in file order.
struct Counts {
    isut: usize,
    isstd: usize,
    leap: usize,
    time: usize,
    types: usize,
    chars: usize,
}

impl Counts {
    fn parse(b: &[u8]) -> Option<(u8, Counts)> {
        if b.len() < TZIF_HEADER_LEN || &b[..4] != b"TZif" {
            return None;
        }
        let count = |i: usize| u32::from_be_bytes(b[20 + 4 * i..24 + 4 * i].try_into().unwrap()) as usize;
        let counts = Counts {
            isut: count(0),
            isstd: count(1),
            leap: count(2),
            time: count(3),
            types: count(4),
            chars: count(5),
        };
        Some((b[4], counts))
    }

    /// The bytes of the data block after the header, for `time_len`-byte
    /// times (4 in the v1 block, 8 in the v2+ block).
    fn data_len(&self, time_len: usize) -> usize {
        self.time * (time_len + 1) + self.types * 6 + self.chars + self.leap * (time_len + 4) + self.isstd + self.isut
    }
}

/// A TZif file: the v1 block's 32-bit data for a version-1 file, else the
/// v2+ block's 64-bit data and the footer rule.
fn parse_tzif(b: &[u8]) -> Option<Zone> {
    let (version, v1) = Counts::parse(b)?;
    if version == 0 {
        return parse_block(b.get(TZIF_HEADER_LEN..)?, &v1, 4);
    }
    let b = b.get(TZIF_HEADER_LEN + v1.data_len(4)..)?;
    let (_, v2) = Counts::parse(b)?;
    let mut zone = parse_block(&b[TZIF_HEADER_LEN..], &v2, 8)?;
    let footer = b.get(TZIF_HEADER_LEN + v2.data_len(8)..)?;
    let rule = footer.strip_prefix(b"\n").and_then(|f| f.split(|&c| c == b'\n').next());
    zone.rule = rule.and_then(|r| std::str::from_utf8(r).ok()).and_then(parse_rule);
    Some(zone)
}

fn parse_block(b: &[u8], counts: &Counts, time_len: usize) -> Option<Zone> {
    if b.len() < counts.data_len(time_len) || counts.types == 0 {
        return None;
    }
    let (times, rest) = b.split_at(counts.time * time_len);
    let (kinds, rest) = rest.split_at(counts.time);
    let transitions = times
        .chunks(time_len)
        .map(|t| match time_len {
            4 => i32::from_be_bytes(t.try_into().unwrap()) as i64,
            _ => i64::from_be_bytes(t.try_into().unwrap()),
        })
        .collect();
    if kinds.iter().any(|&k| k as usize >= counts.types) {
        return None;
    }
    let offsets =
        rest[..counts.types * 6].chunks(6).map(|ty| i32::from_be_bytes(ty[..4].try_into().unwrap())).collect();
    Some(Zone { transitions, kinds: kinds.to_vec(), offsets, rule: None })
}

/// A POSIX TZ rule (`std offset [dst [offset] [,start[/time],end[/time]]]`,
/// with RFC 8536's extension of hours past 24 and negative times).
fn parse_rule(s: &str) -> Option<Rule> {
    let mut p = RuleParser { s: s.as_bytes(), at: 0 };
    p.name()?;
    let std = -p.offset()?;
    if p.done() {
        return Some(Rule { std, dst: None });
    }
    p.name()?;
    let offset = match p.done() || p.peek() == Some(b',') {
        true => std + 3600,
        false => -p.offset()?,
    };
    if p.done() {
        p = RuleParser { s: DEFAULT_DST_DATES.as_bytes(), at: 0 };
    } else {
        p.eat(b',')?;
    }
    let start = p.date_time()?;
    p.eat(b',')?;
    let end = p.date_time()?;
    p.done().then_some(Rule { std, dst: Some(Dst { offset, start, end }) })
}

struct RuleParser<'a> {
    s: &'a [u8],
    at: usize,
}

impl RuleParser<'_> {
    fn done(&self) -> bool {
        self.at == self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| self.at += 1)
    }

    /// A zone abbreviation: letters, or anything in `<...>`.
    fn name(&mut self) -> Option<()> {
        let start = self.at;
        if self.eat(b'<').is_some() {
            while self.peek()? != b'>' {
                self.at += 1;
            }
            self.at += 1;
            return Some(());
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    fn number(&mut self) -> Option<i64> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) && self.at - start < 4 {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at]).ok()?.parse().ok()
    }

    /// `[+-]hh[:mm[:ss]]` in seconds, signed as written (a zone offset is
    /// POSIX's, positive west; `parse_rule` turns it east).
    fn offset(&mut self) -> Option<i32> {
        let sign = match self.peek() {
            Some(b'-') => -1,
            _ => 1,
        };
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.at += 1;
        }
        let mut secs = self.number()? * 3600;
        for unit in [60, 1] {
            if self.eat(b':').is_none() {
                break;
            }
            secs += self.number()? * unit;
        }
        i32::try_from(sign * secs).ok()
    }

    /// A date and its optional `/time` (default 02:00).
    fn date_time(&mut self) -> Option<(Date, i64)> {
        let date = if self.eat(b'J').is_some() {
            Date::Julian1(u16::try_from(self.number()?).ok().filter(|n| (1..=365).contains(n))?)
        } else if self.eat(b'M').is_some() {
            let month = self.number()?;
            self.eat(b'.')?;
            let week = self.number()?;
            self.eat(b'.')?;
            let weekday = self.number()?;
            let valid = (1..=12).contains(&month) && (1..=5).contains(&week) && (0..=6).contains(&weekday);
            valid.then_some(Date::MonthWeekDay { month: month as u32, week: week as u32, weekday: weekday as u32 })?
        } else {
            Date::Julian0(u16::try_from(self.number()?).ok().filter(|n| *n <= 365)?)
        };
        let time = match self.eat(b'/') {
            Some(()) => self.offset()? as i64,
            None => 7200,
        };
        Some((date, time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds since the epoch of a UTC date and time.
    fn utc(year: i64, month: u32, day: u32, hour: i64, min: i64) -> i64 {
        days_from_civil(year, month, day) * SECS_PER_DAY + hour * 3600 + min * 60
    }

    fn rule_zone(rule: &str) -> Zone {
        Zone { rule: Some(parse_rule(rule).unwrap()), ..Zone::utc() }
    }

    #[test]
    fn civil_dates_round_trip_through_day_numbers() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for day in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
    }

    #[test]
    fn central_europe_changes_at_one_utc_on_the_last_sundays() {
        let cet = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
        assert_eq!(cet.offset_at(utc(2024, 1, 15, 12, 0)), 3600);
        assert_eq!(cet.offset_at(utc(2024, 3, 31, 0, 59)), 3600);
        assert_eq!(cet.offset_at(utc(2024, 3, 31, 1, 0)), 7200);
        assert_eq!(cet.offset_at(utc(2024, 10, 27, 0, 59)), 7200);
        assert_eq!(cet.offset_at(utc(2024, 10, 27, 1, 0)), 3600);
    }

    #[test]
    fn us_eastern_changes_at_two_local_on_the_second_and_first_sundays() {
        let eastern = rule_zone("EST5EDT,M3.2.0,M11.1.0");
        assert_eq!(eastern.offset_at(utc(2024, 3, 10, 6, 59)), -5 * 3600);
        assert_eq!(eastern.offset_at(utc(2024, 3, 10, 7, 0)), -4 * 3600);
        assert_eq!(eastern.offset_at(utc(2024, 11, 3, 5, 59)), -4 * 3600);
        assert_eq!(eastern.offset_at(utc(2024, 11, 3, 6, 0)), -5 * 3600);
    }

    #[test]
    fn a_dst_zone_without_dates_gets_the_us_dates() {
        assert_eq!(parse_rule("EST5EDT"), parse_rule("EST5EDT,M3.2.0,M11.1.0"));
    }

    #[test]
    fn southern_summer_spans_the_new_year() {
        let sydney = rule_zone("AEST-10AEDT,M10.1.0,M4.1.0/3");
        assert_eq!(sydney.offset_at(utc(2024, 1, 10, 0, 0)), 11 * 3600);
        assert_eq!(sydney.offset_at(utc(2024, 7, 10, 0, 0)), 10 * 3600);
        assert_eq!(sydney.offset_at(utc(2024, 12, 31, 23, 0)), 11 * 3600);
    }

    #[test]
    fn fixed_zones_with_quoted_names_and_minutes() {
        assert_eq!(rule_zone("<+0330>-3:30").offset_at(0), 3 * 3600 + 1800);
        assert_eq!(rule_zone("UTC0").offset_at(1_700_000_000), 0);
    }

    #[test]
    fn malformed_rules_are_refused() {
        for bad in ["", "5", "CET", "CET-1CEST,M3.5", "CET-1CEST,M13.1.0,M10.5.0", "CET-1 trailing"] {
            assert_eq!(parse_rule(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tzif_transitions_answer_the_past_and_the_footer_rule_the_rest() {
        let file = tzif_v2(&[(utc(2000, 1, 1, 0, 0), 1)], &[0, 3600], "CET-1CEST,M3.5.0,M10.5.0/3");
        let zone = parse_tzif(&file).unwrap();
        assert_eq!(zone.offset_at(utc(1999, 6, 1, 0, 0)), 0);
        assert_eq!(zone.offset_at(utc(2024, 7, 1, 0, 0)), 7200);
        assert_eq!(zone.offset_at(utc(2024, 1, 1, 0, 0)), 3600);
    }

    #[test]
    fn tzif_that_is_not_one_is_refused() {
        assert_eq!(parse_tzif(b"TZif2 but truncated"), None);
        assert_eq!(parse_tzif(b"#!/bin/sh\n"), None);
    }

    /// A version-2 TZif file with an empty v1 block (as "slim" files have).
    fn tzif_v2(transitions: &[(i64, u8)], offsets: &[i32], footer: &str) -> Vec<u8> {
        let header = |time: usize, types: usize| {
            let mut h = b"TZif2".to_vec();
            h.extend_from_slice(&[0; 15]);
            for count in [0, 0, 0, time, types, 1] {
                h.extend_from_slice(&(count as u32).to_be_bytes());
            }
            h
        };
        let mut file = header(0, 1);
        file.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        file.extend(header(transitions.len(), offsets.len()));
        transitions.iter().for_each(|(t, _)| file.extend_from_slice(&t.to_be_bytes()));
        transitions.iter().for_each(|(_, k)| file.push(*k));
        offsets.iter().for_each(|o| file.extend(o.to_be_bytes().into_iter().chain([0, 0])));
        file.push(0);
        file.extend(format!("\n{footer}\n").bytes());
        file
    }
}
