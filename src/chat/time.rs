//! Record timestamps: a message's mtime is when its record says it was
//! said, so `ls -lt chat/` reads as the conversation's timeline.

/// `2026-09-24T12:51:26.691Z` (or with a `+hh:mm` offset, or none: UTC)
/// as Unix seconds; `None` for anything else, or a time outside 1970–2106.
pub fn parse_time(s: &[u8]) -> Option<u32> {
    if s.len() < 19 || s[4] != b'-' || s[7] != b'-' || !matches!(s[10], b'T' | b't' | b' ') {
        return None;
    }
    if s[13] != b':' || s[16] != b':' {
        return None;
    }
    let y = digits(&s[0..4])?;
    let mo = digits(&s[5..7])?;
    let d = digits(&s[8..10])?;
    let (hh, mi, ss) = (digits(&s[11..13])?, digits(&s[14..16])?, digits(&s[17..19])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || hh > 23 || mi > 59 || ss > 60 {
        return None;
    }
    let t = days_from_civil(y, mo, d) * 86_400 + hh * 3600 + mi * 60 + ss - offset(&s[19..])?;
    u32::try_from(t).ok()
}

fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |v, &c| c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0')))
}

/// Seconds east of UTC the rest of a timestamp says (after the seconds
/// and any fraction): `Z`, nothing, or `±hh:mm`.
fn offset(rest: &[u8]) -> Option<i64> {
    let frac =
        if rest.first() == Some(&b'.') { 1 + rest[1..].iter().take_while(|c| c.is_ascii_digit()).count() } else { 0 };
    match &rest[frac..] {
        [] | [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let secs = digits(&[*h1, *h2])? * 3600 + digits(&[*m1, *m2])? * 60;
            Some(if *sign == b'+' { secs } else { -secs })
        }
        _ => None,
    }
}

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn timestamps_read_as_unix_seconds() {
        assert_eq!(parse_time(b"1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(parse_time(b"2026-09-24T12:51:26.691Z"), Some(1_790_254_286));
        assert_eq!(parse_time(b"2026-09-24T12:51:26"), Some(1_790_254_286));
        assert_eq!(parse_time(b"2026-09-24T14:51:26.5+02:00"), Some(1_790_254_286));
        assert_eq!(parse_time(b"2024-02-29T00:00:00Z"), Some(1_709_164_800));
    }

    #[test]
    fn anything_else_is_no_time() {
        for bad in [
            &b"2026-09-24"[..],
            b"not a time at all, no",
            b"2026-13-24T12:51:26Z",
            b"2026-09-24T12:51:26Zjunk",
            b"1969-12-31T23:59:59Z",
            b"2026-09-24T12:5x:26Z",
        ] {
            assert_eq!(parse_time(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
