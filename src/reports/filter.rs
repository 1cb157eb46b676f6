//! `9agents usage`'s `--since` and `--until`: a report's rows kept by
//! their dates, its totals summed again from what is kept. Pure: the
//! report's text in, the text to print out.
//!
//! A daily or weekly row is kept when its period begins within the dates
//! (both inclusive, `YYYY-MM-DD`); a monthly row when its month is within
//! their months; a session when it started within them (a session with
//! no tokens has no start, and is left out once a date is given). The
//! other reports have no dates to filter by.

use super::table;
use super::Report;

/// Keep `text`'s rows within `since`..=`until` and total them again; an
/// error for a report without dates or a date that is not `YYYY-MM-DD`.
pub fn filter(r: Report, text: &[u8], since: Option<&str>, until: Option<&str>) -> Result<Vec<u8>, String> {
    if since.is_none() && until.is_none() {
        return Ok(text.to_vec());
    }
    for d in since.iter().chain(until.iter()) {
        if !is_date(d) {
            return Err(format!("{d:?} is not a date (YYYY-MM-DD)"));
        }
    }
    let within = |date: &str| {
        let cut = |d: &str| if r == Report::Monthly { d[..7].to_string() } else { d.to_string() };
        since.is_none_or(|s| date >= cut(s).as_str()) && until.is_none_or(|u| date <= cut(u).as_str())
    };
    let text = String::from_utf8_lossy(text);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    let rows: Vec<Vec<String>> = lines.map(|l| split(l, header.len())).collect();
    let out = match r {
        Report::Daily | Report::Weekly | Report::Monthly => {
            let mut kept: Vec<Vec<String>> =
                rows.into_iter().filter(|row| row[0] != "all" && within(&row[0])).collect();
            let totals: Vec<&Vec<String>> = kept.iter().filter(|row| row[1] == "total").collect();
            let grand = sum(&totals, 3);
            let mut last = vec!["all".to_string(), "total".into(), "-".into()];
            last.extend(grand);
            kept.push(last);
            kept
        }
        Report::Sessions => {
            let mut kept: Vec<Vec<String>> =
                rows.into_iter().filter(|row| row[0] != "total" && row[2].get(..10).is_some_and(within)).collect();
            let all: Vec<&Vec<String>> = kept.iter().collect();
            let mut last = vec!["total".to_string(), kept.len().to_string(), "-".into(), "-".into(), "-".into()];
            last.extend(sum(&all, 5));
            last.push("-".into());
            kept.push(last);
            kept
        }
        _ => return Err(format!("{} has no dates to keep rows by", r.name())),
    };
    Ok(table::render(&header, &out))
}

/// A row's cells: the header's count (a short line's missing ones empty,
/// so a report from a server that wrote less is filtered, not a panic),
/// the last one the rest of the line.
fn split(line: &str, cols: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(cols);
    let mut rest = line.trim_start();
    while out.len() + 1 < cols && !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = rest[end..].trim_start();
    }
    out.push(rest.to_string());
    out.resize(cols.max(CELLS_READ), String::new());
    out
}

/// Cells a row is read for, whatever its header says: sessions' total
/// is summed from its sixth cell to its eleventh.
const CELLS_READ: usize = 11;

/// The five token columns from `first` and the cost after them, summed.
fn sum(rows: &[&Vec<String>], first: usize) -> Vec<String> {
    let mut tokens = [0u64; 5];
    let (mut cost, mut priced, mut unknown) = (0u128, false, false);
    for row in rows {
        for (t, cell) in tokens.iter_mut().zip(&row[first..first + 5]) {
            *t += cell.parse::<u64>().unwrap_or(0);
        }
        let c = &row[first + 5];
        unknown |= c.ends_with('?');
        if let Some(known) = c.strip_suffix("+?").or((!c.ends_with('?')).then_some(c.as_str())) {
            let (whole, frac) = known.split_once('.').unwrap_or((known, "0"));
            cost +=
                whole.parse::<u128>().unwrap_or(0) * 10_000 + format!("{frac:0<4}")[..4].parse::<u128>().unwrap_or(0);
            priced = true;
        }
    }
    let mut out: Vec<String> = tokens.iter().map(u64::to_string).collect();
    let dollars = format!("{}.{:04}", cost / 10_000, cost % 10_000);
    out.push(match (priced, unknown) {
        (_, false) => dollars,
        (false, true) => "?".into(),
        (true, true) => format!("{dollars}+?"),
    });
    out
}

fn is_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAILY: &str = "\
day         harness  model    input  output  cache_read  cache_write  reasoning  cost
2026-11-29  claude   opus     1      2       3           4            0          1.0000
2026-11-29  total    -        1      2       3           4            0          1.0000
2026-11-30  codex    gpt-9    10     20      0           0            0          ?
2026-11-30  total    -        10     20      0           0            0          ?
2026-12-01  claude   opus     100    200     0           0            0          2.5000
2026-12-01  total    -        100    200     0           0            0          2.5000
all         total    -        111    222     3           4            0          3.5000+?
";

    fn rows(t: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(t).lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
    }

    #[test]
    fn rows_outside_the_dates_go_and_the_grand_total_is_summed_again() {
        let t = filter(Report::Daily, DAILY.as_bytes(), Some("2026-11-30"), None).unwrap();
        let r = rows(&t);
        assert_eq!(r.len(), 6, "{r:?}");
        assert_eq!(r.last().unwrap(), "all total - 110 220 0 0 0 2.5000+?");
        let t = filter(Report::Daily, DAILY.as_bytes(), None, Some("2026-11-29")).unwrap();
        assert_eq!(rows(&t).last().unwrap(), "all total - 1 2 3 4 0 1.0000");
    }

    #[test]
    fn a_month_is_kept_by_its_month_and_sessions_by_their_start() {
        let monthly = "month harness model input output cache_read cache_write reasoning cost\n\
            2026-11 claude m 1 1 1 1 0 1.0000\n2026-11 total - 1 1 1 1 0 1.0000\nall total - 1 1 1 1 0 1.0000\n";
        let t = filter(Report::Monthly, monthly.as_bytes(), Some("2026-11-15"), None).unwrap();
        assert_eq!(rows(&t).len(), 4, "the month of the 15th is kept");
        let sessions =
            "harness session started last_active models input output cache_read cache_write reasoning cost cwd\n\
            claude a 2026-11-01T10:00 2026-11-01T11:00 m 1 1 0 0 0 1.0000 /home/u/my dir\n\
            claude b 2026-12-01T10:00 2026-12-01T11:00 m 2 2 0 0 0 2.0000 /w\n\
            dsh c - 2026-12-01T11:00 - 0 0 0 0 0 0.0000 /w\n\
            total 3 - - - 3 3 0 0 0 3.0000 -\n";
        let t = filter(Report::Sessions, sessions.as_bytes(), Some("2026-11-30"), None).unwrap();
        assert_eq!(
            rows(&t),
            [
                "harness session started last_active models input output cache_read cache_write reasoning cost cwd",
                "claude b 2026-12-01T10:00 2026-12-01T11:00 m 2 2 0 0 0 2.0000 /w",
                "total 1 - - - 2 2 0 0 0 2.0000 -"
            ]
        );
        let t = filter(Report::Sessions, sessions.as_bytes(), None, Some("2026-11-02")).unwrap();
        assert!(String::from_utf8_lossy(&t).contains("/home/u/my dir"), "the cwd is the rest of the line");
    }

    #[test]
    fn a_short_or_strange_row_is_filtered_not_a_panic() {
        let daily = "day harness model input output cache_read cache_write reasoning cost\n2026-12-01\n\nall total\n";
        let t = filter(Report::Daily, daily.as_bytes(), Some("2026-11-01"), None).unwrap();
        assert!(rows(&t).last().unwrap().starts_with("all total - 0 0 0 0 0"), "{:?}", rows(&t));
        let sessions =
            "harness session started last_active models input output cache_read cache_write reasoning cost cwd\n\
            claude a 2026-11-0\u{e9}1T10:00\nclaude b\n";
        let t = filter(Report::Sessions, sessions.as_bytes(), Some("2026-11-01"), None).unwrap();
        assert_eq!(rows(&t).len(), 2, "only the header and the total: {:?}", rows(&t));
    }

    #[test]
    fn a_report_without_dates_or_a_bad_date_is_an_error() {
        assert!(filter(Report::Projects, b"x\n", Some("2026-11-30"), None).is_err());
        assert!(filter(Report::Daily, DAILY.as_bytes(), Some("yesterday"), None).is_err());
        assert_eq!(filter(Report::Projects, b"x\n", None, None).unwrap(), b"x\n", "no dates: as it is");
    }
}
