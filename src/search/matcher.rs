//! Whether a message holds a query's terms, in two steps.
//!
//! **Could it?** (`Matcher::could`) looks at the bytes the message is
//! rendered from, as the transcript holds them: its spans, each a JSON
//! string's escaped content, raw bytes or a literal. A term made only of
//! bytes JSON writes as themselves — printable ASCII other than `"` and
//! `\`, and UTF-8 past ASCII — can only be in the rendered text if it is
//! in those bytes as it is: the harnesses (Claude Code and pi/omp through
//! `JSON.stringify`, codex through serde_json, dsh through Go's
//! encoding/json) escape nothing else, except Go's `<`, `>` and `&` as
//! `\u003c`…, and any writer may escape past ASCII as `\uXXXX`. So a term
//! holding one of those, or any other byte, makes every message a
//! candidate for the second step when its bytes hold a `\u` or the term
//! cannot be looked for at all (`Plain::No`).
//!
//! **Does it?** (`Matcher::find`) looks at the rendered text: every term
//! in it, byte for byte (or ASCII case folded). The first term's first
//! place is where the result's context is cut from (`context`).

use memchr::memmem;

use super::query::Query;

/// How a term may be looked for in the transcript's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plain {
    /// As it is: nothing in it is ever escaped.
    Yes,
    /// As it is, or in a span that holds a `\u` escape.
    OrEscaped,
    /// Not at all: it holds a byte JSON always escapes.
    No,
}

pub struct Matcher {
    /// Each term's finder (folded terms are lower case), and how it may be
    /// looked for raw.
    terms: Vec<(memmem::Finder<'static>, Plain)>,
    fold: bool,
}

/// The width of a result's context: bytes of the message around the
/// match, on one line.
pub const CONTEXT_BYTES: usize = 160;

impl Matcher {
    pub fn new(q: &Query) -> Matcher {
        let terms = q
            .terms
            .iter()
            .map(|t| {
                let t = if q.fold { t.to_ascii_lowercase() } else { t.clone() };
                let plain = plain(&t);
                (memmem::Finder::new(&t).into_owned(), plain)
            })
            .collect();
        Matcher { terms, fold: q.fold }
    }

    /// Whether a message whose spans' bytes are `spans` could hold every
    /// term. `scratch` is a buffer for folding.
    pub fn could<'a>(&self, spans: impl Iterator<Item = &'a [u8]> + Clone, scratch: &mut Vec<u8>) -> bool {
        self.terms.iter().all(|(finder, plain)| match plain {
            Plain::No => true,
            Plain::Yes | Plain::OrEscaped => spans.clone().any(|s| {
                let hay = if self.fold { folded(s, scratch) } else { s };
                finder.find(hay).is_some() || (*plain == Plain::OrEscaped && memmem::find(s, b"\\u").is_some())
            }),
        })
    }

    /// The terms a whole transcript must hold as they are (or, for a term
    /// a writer may escape, with a `\u` somewhere) for any message of it to
    /// match, as bits: a term that cannot be looked for raw is not among
    /// them. None: the file's bytes can rule nothing out.
    pub fn needed(&self) -> u32 {
        self.terms.iter().enumerate().filter(|(_, (_, p))| *p != Plain::No).fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Clear from `need` the terms `bytes` (a stretch of a transcript)
    /// holds as they are, or could hold escaped.
    pub fn seen_in(&self, bytes: &[u8], need: &mut u32, scratch: &mut Vec<u8>) {
        let escapes = memmem::find(bytes, b"\\u").is_some();
        let hay = if self.fold { folded(bytes, scratch) } else { bytes };
        for (i, (finder, plain)) in self.terms.iter().enumerate() {
            if *need & 1 << i != 0 && ((*plain == Plain::OrEscaped && escapes) || finder.find(hay).is_some()) {
                *need &= !(1 << i);
            }
        }
    }

    /// The longest term's length: how far a transcript's stretches looked
    /// at one after another overlap, so no term is cut in two.
    pub fn longest(&self) -> usize {
        self.terms.iter().map(|(f, _)| f.needle().len()).max().unwrap_or(0)
    }

    /// Where the first term is in rendered `text`, if every term is in it.
    pub fn find(&self, text: &[u8], scratch: &mut Vec<u8>) -> Option<usize> {
        let hay = if self.fold { folded(text, scratch) } else { text };
        let mut first = None;
        for (finder, _) in &self.terms {
            let at = finder.find(hay)?;
            first.get_or_insert(at);
        }
        first
    }
}

/// `s` with ASCII letters in lower case, in `scratch`.
fn folded<'s>(s: &[u8], scratch: &'s mut Vec<u8>) -> &'s [u8] {
    scratch.clear();
    scratch.extend(s.iter().map(u8::to_ascii_lowercase));
    scratch
}

fn plain(term: &[u8]) -> Plain {
    let mut p = Plain::Yes;
    for &b in term {
        match b {
            b'"' | b'\\' | 0..0x20 | 0x7f => return Plain::No,
            b'<' | b'>' | b'&' | 0x80.. => p = Plain::OrEscaped,
            _ => {}
        }
    }
    p
}

/// One line of `text` around byte `at`: `CONTEXT_BYTES` at most, starting
/// a quarter of that before the match, cut at UTF-8 boundaries, with
/// newlines, tabs and other control bytes shown as spaces.
pub fn context(text: &[u8], at: usize) -> Vec<u8> {
    let mut lo = at.saturating_sub(CONTEXT_BYTES / 4);
    while lo > 0 && lo < text.len() && (text[lo] & 0xc0) == 0x80 {
        lo -= 1;
    }
    let mut hi = (lo + CONTEXT_BYTES).min(text.len());
    while hi < text.len() && hi > lo && (text[hi] & 0xc0) == 0x80 {
        hi -= 1;
    }
    text[lo..hi].iter().map(|&b| if b < 0x20 || b == 0x7f { b' ' } else { b }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(q: &str) -> Matcher {
        Matcher::new(&Query::parse(q.as_bytes()).unwrap())
    }

    fn could(m: &Matcher, spans: &[&str]) -> bool {
        m.could(spans.iter().map(|s| s.as_bytes()), &mut Vec::new())
    }

    #[test]
    fn every_term_must_be_in_the_message_not_in_one_span() {
        let x = m("cargo failed");
        assert!(could(&x, &["cargo build", "it failed"]));
        assert!(!could(&x, &["cargo build", "it worked"]));
        assert_eq!(x.find(b"cargo build: it failed", &mut Vec::new()), Some(0));
        assert_eq!(x.find(b"cargo build: it worked", &mut Vec::new()), None);
        assert_eq!(x.find(b"it failed, cargo", &mut Vec::new()), Some(11), "the first term's place");
    }

    #[test]
    fn a_term_json_escapes_is_never_ruled_out_by_the_raw_bytes() {
        let q = m(r#""say \"hi\"""#);
        assert!(could(&q, &[r#"say \"hi\""#]), "escaped in the transcript");
        assert!(could(&q, &["nothing like it"]), "can't be looked for raw: rendered and checked");
        assert_eq!(q.find(br#"they say "hi""#, &mut Vec::new()), Some(5));
        let e = m("café");
        assert!(could(&e, &["caf\\u00e9"]), "a writer may escape past ASCII");
        assert!(!could(&e, &["cafe"]));
        let lt = m("a<b");
        assert!(could(&lt, &["a\\u003cb"]), "Go escapes <");
    }

    #[test]
    fn a_file_is_ruled_out_only_by_a_term_it_cannot_hold() {
        let x = m("cargo \"say \\\"hi\"  café");
        assert_eq!(x.needed(), 0b101, "the quoted term can't be looked for raw");
        let mut need = x.needed();
        x.seen_in(b"run cargo", &mut need, &mut Vec::new());
        assert_eq!(need, 0b100);
        x.seen_in(b"caf\\u00e9", &mut need, &mut Vec::new());
        assert_eq!(need, 0, "an escape could be it");
        let f = m("-i CARGO");
        let mut need = f.needed();
        f.seen_in(b"Cargo", &mut need, &mut Vec::new());
        assert_eq!(need, 0);
    }

    #[test]
    fn folded_terms_match_either_case() {
        let x = m("-i Cargo");
        assert!(could(&x, &["CARGO build"]));
        assert_eq!(x.find(b"run cArGo", &mut Vec::new()), Some(4));
        assert!(!could(&m("Cargo"), &["cargo"]), "case matters without -i");
    }

    #[test]
    fn context_is_one_line_of_at_most_its_width_around_the_match() {
        let text = "a\nb\tc".repeat(100);
        let c = context(text.as_bytes(), 250);
        assert!(c.len() <= CONTEXT_BYTES && !c.contains(&b'\n') && !c.contains(&b'\t'));
        let utf = "é".repeat(200);
        let c = context(utf.as_bytes(), 101);
        assert!(std::str::from_utf8(&c).is_ok(), "cut at character boundaries");
        assert_eq!(context(b"short", 0), b"short");
    }
}
