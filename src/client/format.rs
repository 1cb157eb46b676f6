//! What the subcommands print: `ls -l` lines as Plan 9's `ls -l` and
//! plan9port's `9p ls -l` print them, and `stat`'s every field, one per line.
//! Pure functions of a stat, the clock and the zone, so they are tested
//! without a server.
//!
//! ```text
//! d-r-xr-xr-x M 0 ava ava     0 Nov 29 19:52 claude
//! --r--r--r-- M 0 ava ava  1234 Mar  3  2023 history
//! ```

use std::borrow::Cow;
use std::fmt::Write;

use super::OwnedStat;
use crate::localtime::{civil_from_days, Zone};
use crate::proto::{self, Dialect};

/// Plan 9's `ls`: a time more than 180 days old or more than a day ahead
/// shows its year in place of its clock time.
const RECENT_PAST_SECS: i64 = 180 * 86_400;
const RECENT_FUTURE_SECS: i64 = 86_400;
/// The device type character: what a Plan 9 kernel shows for any file
/// reached through a mount (`#M`), which is how a user reaches ours.
const MOUNT_TYPE_CHAR: char = 'M';
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// A mode as `%M` prints it: the file's kind, `l` for exclusive use, and
/// three `rwx` triples (plan9port's `dirmodefmt`, .u's special files
/// included).
pub(crate) fn mode_string(mode: u32) -> String {
    let kinds = [
        (proto::DMDIR, 'd'),
        (proto::DMAPPEND, 'a'),
        (proto::DMAUTH, 'A'),
        (proto::DMDEVICE, 'D'),
        (proto::DMSYMLINK, 'L'),
        (proto::DMSOCKET, 'S'),
        (proto::DMNAMEDPIPE, 'P'),
    ];
    let kind = kinds.iter().find(|(bit, _)| mode & bit != 0).map_or('-', |&(_, c)| c);
    let mut s = String::with_capacity(11);
    s.push(kind);
    s.push(if mode & proto::DMEXCL != 0 { 'l' } else { '-' });
    for shift in [6, 3, 0] {
        let bits = mode >> shift;
        for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
            s.push(if bits & bit != 0 { c } else { '-' });
        }
    }
    s
}

/// A name as one line and one shell word: quoted rc-style (`'...'`, a
/// quote doubled) when it is empty or holds a space, a control character
/// or a quote, as Plan 9's `ls` does; other names print as they are.
pub(crate) fn quote(name: &str) -> Cow<'_, str> {
    let plain = !name.is_empty() && !name.chars().any(|c| c <= ' ' || c == '\'' || c == '\u{7f}');
    match plain {
        true => Cow::Borrowed(name),
        false => Cow::Owned(format!("'{}'", name.replace('\'', "''"))),
    }
}

/// `Mon DD HH:MM` for a recent time, `Mon DD  YYYY` otherwise, in the
/// local time of `utc_offset` seconds east.
pub(crate) fn listing_time(mtime: i64, now: i64, utc_offset: i32) -> String {
    let local = mtime + utc_offset as i64;
    let (year, month, day) = civil_from_days(local.div_euclid(86_400));
    let month = MONTHS[month as usize - 1];
    let recent = now - RECENT_PAST_SECS <= mtime && mtime <= now + RECENT_FUTURE_SECS;
    if recent {
        let secs = local.rem_euclid(86_400);
        format!("{month} {day:>2} {:02}:{:02}", secs / 3600, secs / 60 % 60)
    } else {
        format!("{month} {day:>2} {year:>5}")
    }
}

/// `ls -l` of `entries`: one line each, the dev, uid, gid and length
/// columns padded to the widest so they line up.
pub(crate) fn long_listing(entries: &[OwnedStat], now: i64, zone: &Zone) -> String {
    let widest = |f: &dyn Fn(&OwnedStat) -> usize| entries.iter().map(f).max().unwrap_or(0);
    let dev_w = widest(&|e| e.dev.to_string().len());
    let uid_w = widest(&|e| e.uid.chars().count());
    let gid_w = widest(&|e| e.gid.chars().count());
    let len_w = widest(&|e| e.length.to_string().len());
    let mut out = String::new();
    for e in entries {
        let time = listing_time(e.mtime as i64, now, zone.offset_at(e.mtime as i64));
        let _ = writeln!(
            out,
            "{} {MOUNT_TYPE_CHAR} {:>dev_w$} {:<uid_w$} {:<gid_w$} {:>len_w$} {time} {}",
            mode_string(e.mode),
            e.dev,
            e.uid,
            e.gid,
            e.length,
            quote(&e.name),
        );
    }
    out
}

/// Every field of a stat, one `label value` line each, in stat(5)'s order
/// after the name. The 9P2000.u fields appear only in that dialect.
pub(crate) fn stat_fields(s: &OwnedStat, dialect: Dialect) -> String {
    let mut out = String::new();
    let mut field = |label: &str, value: &dyn std::fmt::Display| {
        let line = format!("{label:<11} {value}");
        let _ = writeln!(out, "{}", line.trim_end());
    };
    field("name", &s.name);
    field("type", &s.ty);
    field("dev", &s.dev);
    field("qid.path", &format_args!("{:#018x}", s.qid.path));
    field("qid.version", &s.qid.version);
    field("qid.type", &format_args!("{:#04x}", s.qid.ty));
    field("mode", &format_args!("0{:o} {}", s.mode, mode_string(s.mode)));
    field("atime", &s.atime);
    field("mtime", &s.mtime);
    field("length", &s.length);
    field("uid", &s.uid);
    field("gid", &s.gid);
    field("muid", &s.muid);
    if dialect == Dialect::P2000u {
        field("extension", &s.extension);
        field("n_uid", &s.n_uid);
        field("n_gid", &s.n_gid);
        field("n_muid", &s.n_muid);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Qid, DMDIR, NONUNAME};

    /// 2024-11-29 19:52 UTC.
    const NOW: i64 = 1_732_909_920;

    fn entry(name: &str, mode: u32, length: u64, mtime: i64) -> OwnedStat {
        OwnedStat {
            ty: 0,
            dev: 0,
            qid: Qid { ty: (mode >> 24) as u8, version: 3, path: 0x2a },
            mode,
            atime: mtime as u32,
            mtime: mtime as u32,
            length,
            name: name.into(),
            uid: "ava".into(),
            gid: "agents".into(),
            muid: "ava".into(),
            extension: String::new(),
            n_uid: 1000,
            n_gid: 1000,
            n_muid: NONUNAME,
        }
    }

    #[test]
    fn modes_print_as_plan9_prints_them() {
        assert_eq!(mode_string(DMDIR | 0o555), "d-r-xr-xr-x");
        assert_eq!(mode_string(0o444), "--r--r--r--");
        assert_eq!(mode_string(proto::DMAPPEND | proto::DMEXCL | 0o620), "alrw--w----");
        assert_eq!(mode_string(proto::DMSYMLINK | 0o777), "L-rwxrwxrwx");
    }

    #[test]
    fn recent_times_show_the_clock_and_old_ones_the_year() {
        assert_eq!(listing_time(NOW, NOW, 0), "Nov 29 19:52");
        assert_eq!(listing_time(NOW - 179 * 86_400, NOW, 0), "Jun  3 19:52");
        assert_eq!(listing_time(NOW - 181 * 86_400, NOW, 0), "Jun  1  2024");
        assert_eq!(listing_time(1_000_000_000, NOW, 0), "Sep  9  2001");
    }

    #[test]
    fn a_time_more_than_a_day_ahead_shows_its_year() {
        assert_eq!(listing_time(NOW + 3600, NOW, 0), "Nov 29 20:52");
        assert_eq!(listing_time(NOW + 2 * 86_400, NOW, 0), "Dec  1  2024");
    }

    #[test]
    fn times_are_shown_in_the_zone_given() {
        assert_eq!(listing_time(NOW, NOW, 3600), "Nov 29 20:52");
        assert_eq!(listing_time(NOW, NOW, -20 * 3600), "Nov 28 23:52");
    }

    #[test]
    fn a_directory_line_reads_like_plan9_ls() {
        let line = long_listing(&[entry("claude", DMDIR | 0o555, 0, NOW)], NOW, &Zone::utc());
        assert_eq!(line, "d-r-xr-xr-x M 0 ava agents 0 Nov 29 19:52 claude\n");
    }

    #[test]
    fn columns_line_up_across_entries() {
        let mut long_uid = entry("history", 0o444, 123_456, 1_000_000_000);
        long_uid.uid = "someone".into();
        let listing = long_listing(&[entry("README", 0o444, 7, NOW), long_uid], NOW, &Zone::utc());
        let want = "\
--r--r--r-- M 0 ava     agents      7 Nov 29 19:52 README
--r--r--r-- M 0 someone agents 123456 Sep  9  2001 history
";
        assert_eq!(listing, want);
    }

    #[test]
    fn names_with_spaces_or_quotes_are_quoted_rc_style() {
        assert_eq!(quote("rollout-2024.jsonl"), "rollout-2024.jsonl");
        assert_eq!(quote("my notes"), "'my notes'");
        assert_eq!(quote("it's"), "'it''s'");
        assert_eq!(quote("two\nlines"), "'two\nlines'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn stat_prints_every_field_and_the_u_fields_only_in_u() {
        let st = entry("claude", DMDIR | 0o555, 0, NOW);
        let plain = stat_fields(&st, Dialect::P2000);
        assert!(plain.contains("mode        020000000555 d-r-xr-xr-x\n"), "{plain}");
        assert!(plain.contains("qid.path    0x000000000000002a\n"), "{plain}");
        assert!(plain.contains("qid.type    0x80\n"), "{plain}");
        assert!(!plain.contains("n_uid"), "{plain}");
        let u = stat_fields(&st, Dialect::P2000u);
        assert_eq!(u.lines().count(), plain.lines().count() + 4);
        assert!(u.ends_with("n_muid      4294967295\n"), "{u}");
    }
}
