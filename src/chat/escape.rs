//! One JSON escape, the way a message renders it.
//!
//! The indexer measures a string without decoding it (the scan counts
//! escapes in bitmasks) and the renderer decodes it later from wherever a
//! read starts, so both must agree on every escape, valid or not. This is
//! the one definition both use for the escapes that are not a single byte
//! after a backslash: `\uXXXX`, surrogate pairs, and escapes JSON does not
//! have.
//!
//! The rules: `\" \\ \/ \b \f \n \r \t` are their byte; `\uXXXX` is the
//! code point in UTF-8; a high surrogate followed at once by `\uDCxx..`
//! is one code point (12 bytes in, 4 out); a surrogate without its other
//! half is U+FFFD. An escape JSON does not have, or a `\u` without four hex
//! digits, is written as it stands: the backslash and the byte after it,
//! and whatever follows is read afresh. So a malformed string still renders
//! the same bytes wherever a read starts, and is never longer than its
//! measure.

/// What one escape writes, and how many input bytes it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub bytes: [u8; 4],
    /// Bytes written (1 to 4).
    pub out: u8,
    /// Input bytes taken, the backslash included (1, 2, 6 or 12).
    pub taken: u8,
}

impl Unit {
    fn one(b: u8) -> Unit {
        Unit { bytes: [b, 0, 0, 0], out: 1, taken: 2 }
    }

    fn as_written(e: u8) -> Unit {
        Unit { bytes: [b'\\', e, 0, 0], out: 2, taken: 2 }
    }

    pub(super) fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.out)]
    }
}

/// The byte a single-byte escape stands for, if `e` is one.
pub(crate) fn simple(e: u8) -> Option<u8> {
    match e {
        b'"' | b'\\' | b'/' => Some(e),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        _ => None,
    }
}

/// The escape at the start of `b`, which begins with a backslash. A
/// backslash with nothing after it (only a cut read can show one) is
/// written as itself.
pub(crate) fn unit(b: &[u8]) -> Unit {
    let Some(&e) = b.get(1) else {
        return Unit { bytes: [b'\\', 0, 0, 0], out: 1, taken: 1 };
    };
    if let Some(c) = simple(e) {
        return Unit::one(c);
    }
    if e != b'u' {
        return Unit::as_written(e);
    }
    let Some(hi) = hex4(b.get(2..6)) else {
        return Unit::as_written(e);
    };
    let (cp, taken) = match hi {
        0xD800..=0xDBFF => match low_half(b.get(6..12)) {
            Some(lo) => (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12),
            None => (0xFFFD, 6),
        },
        0xDC00..=0xDFFF => (0xFFFD, 6),
        _ => (hi, 6),
    };
    let mut bytes = [0u8; 4];
    let out = char::from_u32(cp).unwrap_or('\u{FFFD}').encode_utf8(&mut bytes).len();
    Unit { bytes, out: out as u8, taken }
}

/// `\uDCxx`..`\uDFxx`: the second half of a surrogate pair.
fn low_half(b: Option<&[u8]>) -> Option<u32> {
    let b = b?;
    if b.first() != Some(&b'\\') || b.get(1) != Some(&b'u') {
        return None;
    }
    hex4(b.get(2..6)).filter(|lo| (0xDC00..=0xDFFF).contains(lo))
}

/// Four hex digits exactly: no sign, no underscore, no fewer.
fn hex4(b: Option<&[u8]>) -> Option<u32> {
    let b = b?;
    let mut v = 0u32;
    for &c in b.get(..4)? {
        v = (v << 4) | char::from(c).to_digit(16)?;
    }
    Some(v)
}

/// Whether the decoded text of a string body ends in a newline. Only an
/// escape can put one there (a line holds no raw newline): `\n`, or
/// `\u000a`, each with an odd run of backslashes before it.
pub(crate) fn ends_in_newline(body: &[u8]) -> bool {
    let escape_before = |at: usize| {
        let run = body[..at].iter().rev().take_while(|&&c| c == b'\\').count();
        run % 2 == 1
    };
    let n = body.len();
    if body.ends_with(b"n") && escape_before(n - 1) {
        return true;
    }
    (body.ends_with(b"u000a") || body.ends_with(b"u000A")) && escape_before(n - 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if body[i] == b'\\' {
                let u = unit(&body[i..]);
                out.extend_from_slice(u.as_slice());
                i += usize::from(u.taken);
            } else {
                out.push(body[i]);
                i += 1;
            }
        }
        out
    }

    #[test]
    fn escapes_json_has_render_as_their_bytes() {
        assert_eq!(render(br#"a\"b\\c\/d\b\f\n\r\t"#), b"a\"b\\c/d\x08\x0c\n\r\t");
        assert_eq!(render(br"caf\u00e9 \ud83d\ude00"), "café 😀".as_bytes());
        assert_eq!(render(br"\u0041\u20AC"), "A€".as_bytes());
    }

    #[test]
    fn a_surrogate_without_its_other_half_is_the_replacement_character() {
        assert_eq!(render(br"\ud83dx"), "\u{FFFD}x".as_bytes());
        assert_eq!(render(br"\ude00"), "\u{FFFD}".as_bytes());
        assert_eq!(render(br"\ud83d\ud83d\ude00"), "\u{FFFD}😀".as_bytes());
        assert_eq!(render(br"\ud83d\u0041"), "\u{FFFD}A".as_bytes());
    }

    #[test]
    fn an_escape_json_does_not_have_is_written_as_it_stands() {
        assert_eq!(render(br"\x\u+0e9\u0_e9\u12"), br"\x\u+0e9\u0_e9\u12");
        assert_eq!(render(br"\u00e9"), "é".as_bytes());
        assert_eq!(unit(b"\\").taken, 1);
    }

    #[test]
    fn only_an_escaped_newline_ends_a_body_in_one() {
        assert!(ends_in_newline(br"ab\n"));
        assert!(!ends_in_newline(br"ab\\n"));
        assert!(ends_in_newline(br"ab\\\n"));
        assert!(ends_in_newline(br"x\u000a"));
        assert!(ends_in_newline(br"\u000A"));
        assert!(!ends_in_newline(br"x\\u000a"));
        assert!(!ends_in_newline(b"n"));
        assert!(!ends_in_newline(b""));
    }
}
