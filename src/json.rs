//! A small, tolerant JSON reader for harness records: find a key, borrow
//! its value's bytes, unescape a string, read a number. No serde, no tree,
//! no allocation until a string is unescaped.
//!
//! The daemon reads three kinds of JSON written by other programs: Claude
//! Code's `sessions/<pid>.json`, and the first and last records of JSONL
//! transcripts (one object per line). It needs a handful of fields from
//! each, so instead of parsing a document into values it walks the bytes:
//! [`path`] skips every member it does not want and stops at the one it
//! does, handing back the value as a borrowed slice of the input.
//!
//! ```ignore
//! // (crate-internal; the same lines run as a unit test in json/tests.rs)
//! let line = br#"{"type":"assistant","message":{"model":"claude-opus-4-8","content":[]}}"#;
//! let raw = json::path(line, &[b"message", b"model"]).unwrap();
//! assert_eq!(raw, br#""claude-opus-4-8""#);
//! assert_eq!(json::string(raw).unwrap(), b"claude-opus-4-8");
//! ```
//!
//! **Tolerant** means three things. A record cut short is still read up
//! to where it stops: `path` only needs the bytes up to the end of the
//! value it returns, so the `cwd` near the front of a 40 KB codex
//! `session_meta` line is found in the first 4 KB of it. Bytes that are not
//! UTF-8 pass through a string untouched (the daemon deals in bytes, as the
//! filesystem does). And an unknown shape is an answer of `None`, never a
//! panic: every index is checked, nesting is bounded (`DEPTH_MAX`), and the
//! fuzz test below throws random and mangled bytes at every function.
//!
//! What it does not do: a key that appears twice answers its first value
//! (JavaScript's `JSON.parse` keeps the last; no harness writes one twice),
//! and numbers are read only as non-negative integers, which is all a
//! harness record holds that the daemon wants (`pid`, `procStart`).

use std::fmt;

/// Nesting the skipper follows before it gives up on a value. Harness
/// records nest a dozen deep at most (a tool call's input inside a content
/// block inside a message); past this the value answers `TooDeep` rather
/// than costing an unbounded stack. The stack is a bitset, one bit a level.
const DEPTH_MAX: usize = 256;
const DEPTH_WORDS: usize = DEPTH_MAX / 64;
const _: () = assert!(DEPTH_MAX.is_multiple_of(64));

/// Why a value could not be read. Positions are byte offsets into the
/// slice the function was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JsonError {
    /// The input ended inside the value.
    Truncated,
    /// A byte that cannot stand where it stands.
    Unexpected { at: usize },
    /// Nested deeper than `DEPTH_MAX`.
    TooDeep { at: usize },
    /// `string` was given something that is not a JSON string.
    NotString,
    /// A backslash followed by something JSON does not define.
    BadEscape { at: usize },
    /// `\u` not followed by four hex digits.
    BadUnicode { at: usize },
    /// Half of a UTF-16 surrogate pair without the other half.
    LoneSurrogate { at: usize },
    /// A raw control byte (below 0x20) inside a string.
    ControlInString { at: usize },
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            JsonError::Truncated => write!(f, "JSON ends inside a value"),
            JsonError::Unexpected { at } => write!(f, "unexpected byte at {at}"),
            JsonError::TooDeep { at } => write!(f, "nested deeper than {DEPTH_MAX} at {at}"),
            JsonError::NotString => write!(f, "not a JSON string"),
            JsonError::BadEscape { at } => write!(f, "unknown escape at {at}"),
            JsonError::BadUnicode { at } => write!(f, "\\u without four hex digits at {at}"),
            JsonError::LoneSurrogate { at } => write!(f, "unpaired UTF-16 surrogate at {at}"),
            JsonError::ControlInString { at } => write!(f, "raw control byte in a string at {at}"),
        }
    }
}

impl std::error::Error for JsonError {}

/// The raw value of `key` in the top-level object `doc`: a borrowed slice,
/// quotes and all for a string. `None` when `doc` is not an object, has no
/// such key, or ends before the value does.
pub(crate) fn field<'a>(doc: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    path(doc, &[key])
}

/// The raw value at `keys`, each naming a member of the object the one
/// before it found (`&[b"payload", b"cwd"]`). Only the bytes up to the end
/// of that value need be present; an empty `keys` answers the whole
/// top-level value.
pub(crate) fn path<'a>(doc: &'a [u8], keys: &[&[u8]]) -> Option<&'a [u8]> {
    let mut at = skip_ws(doc, skip_bom(doc));
    for key in keys {
        at = member(doc, at, key).ok()??;
    }
    let end = value_end(doc, at).ok()?;
    doc.get(at..end)
}

/// The string at `keys`, unescaped. `None` when absent, not a string, or
/// not a valid one.
pub(crate) fn path_str(doc: &[u8], keys: &[&[u8]]) -> Option<Vec<u8>> {
    string(path(doc, keys)?).ok()
}

/// Whether the value at `keys` is the string `want` (compared after
/// unescaping, without allocating when the string holds no escape).
pub(crate) fn path_is(doc: &[u8], keys: &[&[u8]], want: &[u8]) -> bool {
    path(doc, keys).is_some_and(|raw| str_eq(raw, want))
}

/// Whether the raw value `raw` is a JSON string equal to `want`.
pub(crate) fn str_eq(raw: &[u8], want: &[u8]) -> bool {
    match raw {
        [b'"', body @ .., b'"'] if raw.len() >= 2 && memchr::memchr(b'\\', body).is_none() => body == want,
        _ => string(raw).is_ok_and(|s| s == want),
    }
}

/// A non-negative integer: the raw value is all ASCII digits (a JSON
/// number with no sign, fraction or exponent) and fits a `u64`.
pub(crate) fn u64_of(raw: &[u8]) -> Option<u64> {
    digits_u64(raw)
}

/// ASCII digits as a `u64`; `None` when empty, when anything else is in
/// it, or on overflow. Shared with the registry's string-held numbers.
pub(crate) fn digits_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// Unescape the raw JSON string `raw` (with its quotes) into bytes: every
/// escape JSON defines, `\uXXXX` as UTF-8, surrogate pairs joined. Bytes
/// that are not escapes are copied as they are, UTF-8 or not. A `\u0000`
/// becomes a NUL byte; callers that build names or paths refuse those.
pub(crate) fn string(raw: &[u8]) -> Result<Vec<u8>, JsonError> {
    let body = match raw {
        [b'"', body @ .., b'"'] if raw.len() >= 2 => body,
        _ => return Err(JsonError::NotString),
    };
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let run_end = memchr::memchr(b'\\', &body[i..]).map_or(body.len(), |n| i + n);
        if let Some(n) = body[i..run_end].iter().position(|&b| b < 0x20) {
            return Err(JsonError::ControlInString { at: 1 + i + n });
        }
        out.extend_from_slice(&body[i..run_end]);
        if run_end == body.len() {
            break;
        }
        i = unescape_one(body, run_end, &mut out).map_err(|e| shift(e, 1))?;
    }
    Ok(out)
}

/// One escape at `body[at] == '\\'`: push what it stands for, answer the
/// index after it.
fn unescape_one(body: &[u8], at: usize, out: &mut Vec<u8>) -> Result<usize, JsonError> {
    let simple = match body.get(at + 1) {
        None => return Err(JsonError::BadEscape { at }),
        Some(b'"') => b'"',
        Some(b'\\') => b'\\',
        Some(b'/') => b'/',
        Some(b'b') => 0x08,
        Some(b'f') => 0x0c,
        Some(b'n') => b'\n',
        Some(b'r') => b'\r',
        Some(b't') => b'\t',
        Some(b'u') => return unescape_unicode(body, at, out),
        Some(_) => return Err(JsonError::BadEscape { at }),
    };
    out.push(simple);
    Ok(at + 2)
}

/// `\uXXXX` at `body[at]`, joined with a following `\uXXXX` when it is the
/// high half of a surrogate pair.
fn unescape_unicode(body: &[u8], at: usize, out: &mut Vec<u8>) -> Result<usize, JsonError> {
    let hi = hex4(body, at + 2).ok_or(JsonError::BadUnicode { at })?;
    let (code, next) = match hi {
        0xD800..=0xDBFF => {
            let lo = match body.get(at + 6..at + 8) {
                Some(b"\\u") => hex4(body, at + 8).ok_or(JsonError::BadUnicode { at: at + 6 })?,
                _ => return Err(JsonError::LoneSurrogate { at }),
            };
            if !(0xDC00..=0xDFFF).contains(&lo) {
                return Err(JsonError::LoneSurrogate { at });
            }
            (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), at + 12)
        }
        0xDC00..=0xDFFF => return Err(JsonError::LoneSurrogate { at }),
        _ => (hi, at + 6),
    };
    let c = char::from_u32(code).ok_or(JsonError::BadUnicode { at })?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(next)
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |n, &d| Some(n * 16 + (d as char).to_digit(16)?))
}

fn shift(e: JsonError, by: usize) -> JsonError {
    match e {
        JsonError::BadEscape { at } => JsonError::BadEscape { at: at + by },
        JsonError::BadUnicode { at } => JsonError::BadUnicode { at: at + by },
        JsonError::LoneSurrogate { at } => JsonError::LoneSurrogate { at: at + by },
        other => other,
    }
}

/// The end (exclusive) of the value starting at `doc[at]`, after any
/// whitespace before it is already skipped by the caller.
pub(crate) fn value_end(doc: &[u8], at: usize) -> Result<usize, JsonError> {
    match doc.get(at) {
        None => Err(JsonError::Truncated),
        Some(b'"') => string_end(doc, at),
        Some(b'{' | b'[') => container_end(doc, at),
        Some(b'-' | b'0'..=b'9') => number_end(doc, at),
        Some(b't') => literal_end(doc, at, b"true"),
        Some(b'f') => literal_end(doc, at, b"false"),
        Some(b'n') => literal_end(doc, at, b"null"),
        Some(_) => Err(JsonError::Unexpected { at }),
    }
}

/// Find `key` among the members of the object at `doc[at]`; answer where
/// its value starts. `Ok(None)` when the object ends without it.
fn member(doc: &[u8], at: usize, key: &[u8]) -> Result<Option<usize>, JsonError> {
    if doc.get(at) != Some(&b'{') {
        return Err(JsonError::Unexpected { at });
    }
    let mut i = skip_ws(doc, at + 1);
    if doc.get(i) == Some(&b'}') {
        return Ok(None);
    }
    loop {
        if doc.get(i) != Some(&b'"') {
            return Err(truncated_or(doc, i));
        }
        let key_end = string_end(doc, i)?;
        let matched = str_eq(&doc[i..key_end], key);
        i = skip_ws(doc, key_end);
        if doc.get(i) != Some(&b':') {
            return Err(truncated_or(doc, i));
        }
        i = skip_ws(doc, i + 1);
        if matched {
            return Ok(Some(i));
        }
        i = skip_ws(doc, value_end(doc, i)?);
        match doc.get(i) {
            Some(b',') => i = skip_ws(doc, i + 1),
            Some(b'}') => return Ok(None),
            _ => return Err(truncated_or(doc, i)),
        }
    }
}

fn truncated_or(doc: &[u8], at: usize) -> JsonError {
    if at >= doc.len() {
        JsonError::Truncated
    } else {
        JsonError::Unexpected { at }
    }
}

/// The end of the string at `doc[at] == '"'`, after its closing quote.
fn string_end(doc: &[u8], at: usize) -> Result<usize, JsonError> {
    let mut i = at + 1;
    loop {
        let n = memchr::memchr2(b'"', b'\\', doc.get(i..).unwrap_or(&[])).ok_or(JsonError::Truncated)?;
        i += n;
        if doc[i] == b'"' {
            return Ok(i + 1);
        }
        i += 2; // a backslash and whatever it escapes
    }
}

/// The end of the object or array at `doc[at]`. Strings are skipped whole
/// so brackets inside them do not count; the kind of each open bracket is
/// kept (one bit a level) so `[}` is refused rather than miscounted.
fn container_end(doc: &[u8], at: usize) -> Result<usize, JsonError> {
    let mut stack = [0u64; DEPTH_WORDS];
    let mut depth = 0usize;
    let mut i = at;
    while let Some(&b) = doc.get(i) {
        match b {
            b'"' => {
                i = string_end(doc, i)?;
                continue;
            }
            b'{' | b'[' => {
                if depth == DEPTH_MAX {
                    return Err(JsonError::TooDeep { at: i });
                }
                let bit = 1u64 << (depth % 64);
                if b == b'{' {
                    stack[depth / 64] |= bit;
                } else {
                    stack[depth / 64] &= !bit;
                }
                depth += 1;
            }
            b'}' | b']' => {
                let Some(top) = depth.checked_sub(1) else {
                    return Err(JsonError::Unexpected { at: i });
                };
                let is_object = stack[top / 64] & (1u64 << (top % 64)) != 0;
                if is_object != (b == b'}') {
                    return Err(JsonError::Unexpected { at: i });
                }
                depth = top;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(JsonError::Truncated)
}

/// The end of a number: `-?digits(.digits)?([eE][+-]?digits)?`. A number
/// at the very end of the input might continue, so it counts as truncated.
fn number_end(doc: &[u8], at: usize) -> Result<usize, JsonError> {
    let mut i = at;
    if doc.get(i) == Some(&b'-') {
        i += 1;
    }
    i = digits(doc, i)?;
    if doc.get(i) == Some(&b'.') {
        i = digits(doc, i + 1)?;
    }
    if matches!(doc.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(doc.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(doc, i)?;
    }
    if i >= doc.len() {
        return Err(JsonError::Truncated);
    }
    Ok(i)
}

/// At least one digit at `doc[at]`; the index after the last.
fn digits(doc: &[u8], at: usize) -> Result<usize, JsonError> {
    let n = doc.get(at..).unwrap_or(&[]).iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 {
        return Err(truncated_or(doc, at));
    }
    Ok(at + n)
}

fn literal_end(doc: &[u8], at: usize, word: &[u8]) -> Result<usize, JsonError> {
    let have = doc.get(at..).unwrap_or(&[]);
    if have.starts_with(word) {
        Ok(at + word.len())
    } else if word.starts_with(have) {
        Err(JsonError::Truncated)
    } else {
        Err(JsonError::Unexpected { at })
    }
}

fn skip_ws(doc: &[u8], mut at: usize) -> usize {
    while matches!(doc.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// A UTF-8 byte-order mark some editors put first; never inside a record.
fn skip_bom(doc: &[u8]) -> usize {
    if doc.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    }
}

/// Whether `doc` is exactly one JSON value, whitespace around it allowed.
pub(crate) fn is_whole_value(doc: &[u8]) -> bool {
    let at = skip_ws(doc, skip_bom(doc));
    value_end(doc, at).is_ok_and(|end| skip_ws(doc, end) == doc.len())
}

#[cfg(test)]
mod tests;
