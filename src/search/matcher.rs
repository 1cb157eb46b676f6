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
    /// The longest term that is never escaped (`Plain::Yes`): where a
    /// transcript holds it is where its matches can be.
    anchor: Option<usize>,
}

/// Places of a transcript at most `Hits` notes: past it, its every
/// message is looked at (a common term costs no more than without them).
pub const HITS_MAX: usize = 1 << 16;

/// Where a transcript holds the matcher's anchor, as its raw bytes were
/// looked at in order (stretches that overlap by less than the anchor):
/// a message with none of them in its spans cannot match.
#[derive(Default, Debug)]
pub struct Hits {
    at: Vec<u64>,
    /// Bytes of the file looked at: past them nothing is known.
    upto: u64,
    /// Past `HITS_MAX`: nothing is ruled out.
    over: bool,
}

impl Hits {
    /// The places `found` (offsets in the stretch of `len` bytes at
    /// `base`, which is at or before `upto`) are noted; the stretch is
    /// looked at. Whether it held one.
    fn note(&mut self, base: u64, found: impl Iterator<Item = usize>, len: usize) -> bool {
        let mut any = false;
        for i in found {
            any = true;
            let at = base + i as u64;
            if self.at.last().is_some_and(|&l| at <= l) {
                continue;
            }
            if self.at.len() == HITS_MAX {
                (self.over, self.at) = (true, Vec::new());
                break;
            }
            self.at.push(at);
        }
        self.upto = self.upto.max(base + len as u64);
        any
    }

    /// Whether a message whose spans are the file's `ranges` could hold
    /// the anchor: one of its places is in one of them, or a range goes
    /// past what was looked at.
    pub fn could(&self, mut ranges: impl Iterator<Item = std::ops::Range<u64>>) -> bool {
        self.over
            || ranges.any(|r| {
                let i = self.at.partition_point(|&h| h < r.start);
                r.end > self.upto || self.at.get(i).is_some_and(|&h| h < r.end)
            })
    }

    /// Past `HITS_MAX`: nothing is ruled out.
    pub fn over(&self) -> bool {
        self.over
    }

    /// Places noted (none once over).
    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// The width of a result's context: bytes of the message around the
/// match, on one line.
pub const CONTEXT_BYTES: usize = 160;

impl Matcher {
    pub fn new(q: &Query) -> Matcher {
        let terms: Vec<(memmem::Finder<'static>, Plain)> = q
            .terms
            .iter()
            .map(|t| {
                let t = if q.fold { t.to_ascii_lowercase() } else { t.clone() };
                let plain = plain(&t);
                (memmem::Finder::new(&t).into_owned(), plain)
            })
            .collect();
        let anchor = (0..terms.len())
            .filter(|&i| terms[i].1 == Plain::Yes && !q.terms[i].is_empty())
            .max_by_key(|&i| (q.terms[i].len(), usize::MAX - i));
        Matcher { terms, fold: q.fold, anchor }
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
    /// holds as they are, or could hold escaped; and note in `hits` where
    /// it holds the anchor (`Hits`), `bytes` being the file's from `at`.
    pub fn seen_in(&self, bytes: &[u8], need: &mut u32, hits: Option<(&mut Hits, u64)>, scratch: &mut Vec<u8>) {
        // Looked for only when a term still needed could be escaped.
        let escaped = |i: usize| *need & 1 << i != 0 && self.terms[i].1 == Plain::OrEscaped;
        let escapes = (0..self.terms.len()).any(escaped) && memmem::find(bytes, b"\\u").is_some();
        let hay = if self.fold { folded(bytes, scratch) } else { bytes };
        // The anchor's places, noted, say whether it is here: one pass.
        let noted = match (hits, self.anchor) {
            (Some((h, at)), Some(a)) if !h.over => {
                if h.note(at, self.terms[a].0.find_iter(hay), bytes.len()) {
                    *need &= !(1 << a);
                }
                Some(a)
            }
            _ => None,
        };
        for (i, (finder, plain)) in self.terms.iter().enumerate() {
            if *need & 1 << i != 0
                && noted != Some(i)
                && ((*plain == Plain::OrEscaped && escapes) || finder.find(hay).is_some())
            {
                *need &= !(1 << i);
            }
        }
    }

    /// Whether the matcher has an anchor: a term every match holds as it
    /// is in its bytes, so that `Hits` can be noted.
    pub fn anchored(&self) -> bool {
        self.anchor.is_some()
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
    // A literal's text (`[image]`) is in no transcript's bytes: a term
    // that could be in one, or cut across one, is not looked for raw.
    let literal = |l: &&[u8]| !l.is_empty() && memmem::find(l, term).is_some();
    if term.contains(&b'[') || term.contains(&b']') || crate::chat::store::LITERALS.iter().any(literal) {
        return Plain::No;
    }
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
        x.seen_in(b"run cargo", &mut need, None, &mut Vec::new());
        assert_eq!(need, 0b100);
        x.seen_in(b"caf\\u00e9", &mut need, None, &mut Vec::new());
        assert_eq!(need, 0, "an escape could be it");
        let f = m("-i CARGO");
        let mut need = f.needed();
        f.seen_in(b"Cargo", &mut need, None, &mut Vec::new());
        assert_eq!(need, 0);
    }

    #[test]
    fn a_message_could_match_only_where_the_file_holds_the_anchor() {
        let x = m("-i go \"STEP 42:\" ünï");
        assert!(x.anchored(), "\"step 42:\" is never escaped, and the longest such");
        let mut hits = Hits::default();
        let mut need = x.needed();
        let file = b"step 41: go on|Step 42: go on|step 42: no";
        // Two stretches that overlap by less than the anchor.
        x.seen_in(&file[..20], &mut need, Some((&mut hits, 0)), &mut Vec::new());
        x.seen_in(&file[12..], &mut need, Some((&mut hits, 12)), &mut Vec::new());
        assert_eq!(hits.at, vec![15, 30], "each place once, either case");
        assert_eq!(need, 0b100, "go and the anchor seen, not ünï");
        assert!(!hits.could(std::iter::once(0..14)), "the first record holds none");
        assert!(hits.could([0..2, 14..30].into_iter()));
        assert!(!hits.could(std::iter::once(16..30)), "a place must start inside a span");
        assert!(hits.could(std::iter::once(40..50)), "past what was looked at anything could");
        assert!(!m("\"say \\\"hi\"").anchored(), "a term JSON escapes is no anchor");
        assert!(!m("café").anchored(), "nor one a writer may escape");
        let mut many = Hits::default();
        many.note(0, 0..HITS_MAX + 1, HITS_MAX + 1);
        assert!(many.over && many.is_empty() && many.could(std::iter::once(0..1)), "past the cap nothing is ruled out");
    }

    #[test]
    fn a_term_a_literal_could_hold_is_not_looked_for_raw() {
        for t in ["[image]", "image", "ocument", "x[y", "-i IMAGE"] {
            assert_eq!(m(t).needed(), 0, "{t}: `[image]` is written as a type, not as text");
            assert!(!m(t).anchored());
        }
        assert_eq!(m("images").needed(), 1, "longer than any literal: looked for raw");
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
