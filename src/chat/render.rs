//! Rendering: bytes `[out_off, out_off + count)` of a message, in two
//! steps so the caller can read the file in between (through its ring).
//!
//! `Index::render_plan` says which stretch of the file holds those bytes;
//! `Index::render` turns that stretch into exactly them. A message is its
//! spans in order, each followed by a newline when its text lacks one: a
//! raw span maps one input byte to one output byte, so a read lands on its
//! offset directly; a literal needs no input; a string does not map — an
//! escape is two to twelve bytes in and one to four out — so a read inside
//! a long string decodes from a point whose output offset is known. That
//! point is the span's start, or where an earlier read of the same message
//! stopped (`Cursor`): reading a message front to back decodes it once.
//!
//! A plan asks for at most what the read can need: from the resume point
//! up to six input bytes per output byte (`\u00e9`-style escapes are the
//! worst, six in for one out) and one more escape. Everything stays within
//! the message's line.

use super::cursor::Resume;
use super::escape;
use super::index::Index;
use super::store::{Enc, Span};

/// What to read for one read of a message, and where decoding resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    /// Read `file_len` bytes of the transcript from `file_offset` and pass
    /// them to `Index::render`.
    pub file_offset: u64,
    pub file_len: u64,
    id: usize,
    out_off: u64,
    count: u64,
    resume: Resume,
}

impl ReadPlan {
    /// The bytes `render` will append, given the whole stretch.
    pub fn count(&self) -> u64 {
        self.count
    }
}

impl Index {
    /// The spans of message `id`, as a range of the store's.
    fn span_range(&self, id: usize) -> Option<std::ops::Range<usize>> {
        let slot = self.slot(id)?;
        let m = self.store.msgs.get(slot)?;
        let end = self.store.msgs.get(slot + 1).map_or(self.store.spans.len(), |n| n.first as usize);
        Some(m.first as usize..end)
    }

    /// Message `id`'s spans (a search's first look at the bytes it is
    /// rendered from), and the stretch of the file they lie in.
    pub(crate) fn spans_of(&self, id: usize) -> Option<(&[Span], std::ops::Range<u64>)> {
        let spans = &self.store.spans[self.span_range(id)?];
        let lo = spans.iter().filter(|s| s.enc() != Enc::Lit).map(Span::off).min().unwrap_or(0);
        let hi = spans.iter().filter(|s| s.enc() != Enc::Lit).map(|s| s.off() + s.len()).max().unwrap_or(0);
        Some((spans, lo..hi.max(lo)))
    }

    /// What to read for bytes `[out_off, out_off + count)` of message `id`
    /// (clipped to its size). `None` when there is no message `id`.
    pub fn render_plan(&self, id: usize, out_off: u64, count: u64) -> Option<ReadPlan> {
        let range = self.span_range(id)?;
        let size = u64::from(self.store.msgs[self.slot(id)?].size);
        let out_off = out_off.min(size);
        let count = count.min(size - out_off);
        let resume = self.resume_point(id, range.clone(), out_off);
        let (lo, hi) = self.input_range(resume, range.end, out_off + count);
        let (file_offset, file_len) = if lo < hi { (lo, hi - lo) } else { (0, 0) };
        Some(ReadPlan { file_offset, file_len, id, out_off, count, resume })
    }

    /// The nearest point at or before `out_off` to decode from: the
    /// message's start, or the cursor; then past whole spans by size.
    fn resume_point(&self, id: usize, range: std::ops::Range<usize>, out_off: u64) -> Resume {
        let spans = &self.store.spans;
        let start = |span: usize, span_out: u64| Resume {
            span,
            input: spans.get(span).map_or(0, Span::off),
            output: span_out,
            span_out,
        };
        let mut at = match self.cursor.get(id) {
            Some(c) if c.output <= out_off && range.contains(&c.span) => c,
            _ => start(range.start, 0),
        };
        while at.span < range.end {
            let s = spans[at.span];
            if at.span_out + s.size() > out_off {
                break;
            }
            at = start(at.span + 1, at.span_out + s.size());
        }
        let Some(s) = spans.get(at.span).filter(|_| at.span < range.end) else { return at };
        let into = out_off - at.span_out;
        if into >= s.out() {
            // Past the text's end, only its newline is left.
            at.input = s.off() + s.len();
            at.output = at.span_out + s.out();
        } else if s.enc() == Enc::Raw {
            // A raw span maps byte for byte.
            at.input = s.off() + into;
            at.output = out_off;
        }
        at
    }

    /// The file range holding what decoding from `at` needs to reach
    /// output offset `out_end`.
    fn input_range(&self, at: Resume, end: usize, out_end: u64) -> (u64, u64) {
        let (mut lo, mut hi) = (u64::MAX, 0);
        let mut span_out = at.span_out;
        for (j, s) in self.store.spans.iter().enumerate().take(end).skip(at.span) {
            if span_out >= out_end {
                break;
            }
            let (from_in, from_out) = if j == at.span { (at.input, at.output) } else { (s.off(), span_out) };
            let text_end = span_out + s.out();
            if from_out < text_end && s.enc() != Enc::Lit {
                let need = out_end.min(text_end) - from_out;
                let bound = if s.enc() == Enc::Raw { need } else { need.saturating_mul(6).saturating_add(12) };
                lo = lo.min(from_in);
                hi = hi.max((s.off() + s.len()).min(from_in.saturating_add(bound)));
            }
            span_out += s.size();
        }
        (lo, hi)
    }

    /// Appends the bytes `plan` was made for to `out`, given `input`: the
    /// file's bytes at the plan's range. Returns the bytes appended, which
    /// is `plan.count()` unless `input` is short (the file was cut under
    /// the read).
    pub fn render(&mut self, plan: &ReadPlan, input: &[u8], out: &mut Vec<u8>) -> usize {
        // A plan belongs to the message it was made for; one made by an
        // index since started over renders nothing rather than another's.
        let fits = |r: &std::ops::Range<usize>| plan.count > 0 && r.contains(&plan.resume.span);
        let Some(range) = self.span_range(plan.id).filter(fits) else { return 0 };
        let before = out.len();
        let to = plan.out_off + plan.count;
        let mut sink = Sink { out, pos: plan.resume.output, from: plan.out_off, to };
        let mut span_out = plan.resume.span_out;
        let mut stopped_in: Option<Resume> = None;
        for j in plan.resume.span..range.end {
            if span_out >= to {
                break;
            }
            let s = self.store.spans[j];
            let from_in = if j == plan.resume.span { plan.resume.input } else { s.off() };
            if j != plan.resume.span || s.enc() == Enc::Lit {
                sink.pos = span_out;
            }
            let text_end = span_out + s.out();
            let mark = text(s, from_in, input, plan.file_offset, &mut sink);
            if s.enc() == Enc::Str {
                stopped_in = Some(Resume { span: j, input: mark.0, output: mark.1, span_out });
            }
            if sink.pos != text_end {
                break;
            }
            if s.nl() {
                sink.put(b"\n");
            }
            span_out += s.size();
        }
        let written = sink.out.len() - before;
        if let Some(r) = stopped_in {
            self.cursor.put(plan.id, r);
        }
        written
    }
}

/// Renders a span's text from `from_in` (a resume point) into the sink,
/// reading `input`, the file's bytes from `input_at`. Returns the last
/// resume point reached within what the read wanted.
fn text(s: Span, from_in: u64, input: &[u8], input_at: u64, sink: &mut Sink) -> (u64, u64) {
    let span_end = s.off() + s.len();
    let bytes = window(input, input_at, from_in, span_end);
    match s.enc() {
        Enc::Lit => {
            sink.put(s.literal());
            (from_in, sink.pos)
        }
        Enc::Raw => {
            let room = sink.to.saturating_sub(sink.pos) as usize;
            sink.put(&bytes[..bytes.len().min(room)]);
            (from_in, sink.pos)
        }
        Enc::Str => decode(bytes, from_in, from_in + bytes.len() as u64 == span_end, sink),
    }
}

/// The part of `input` (the file from `input_at`) between file offsets
/// `from` and `to`: shorter, or empty, where `input` does not reach.
fn window(input: &[u8], input_at: u64, from: u64, to: u64) -> &[u8] {
    let Some(a) = from.checked_sub(input_at) else { return &[] };
    let b = to.saturating_sub(input_at).min(input.len() as u64);
    input.get(a as usize..b as usize).unwrap_or(&[])
}

/// Where rendered bytes go: output offset `pos` is the next byte made;
/// bytes before `from` are dropped, and making stops at `to`.
struct Sink<'o> {
    out: &'o mut Vec<u8>,
    pos: u64,
    from: u64,
    to: u64,
}

impl Sink<'_> {
    fn put(&mut self, b: &[u8]) {
        let (a, e) = (self.pos, self.pos + b.len() as u64);
        let (lo, hi) = (a.max(self.from), e.min(self.to));
        if lo < hi {
            self.out.extend_from_slice(&b[(lo - a) as usize..(hi - a) as usize]);
        }
        self.pos = e;
    }

    fn full(&self) -> bool {
        self.pos >= self.to
    }
}

/// Unescapes `body`, a string's bytes from file offset `at`, into the
/// sink until it is full. `whole`: the body reaches the string's end, so
/// an escape cut short by it is complete as it stands. Returns the last
/// point, (input offset, output offset), at or before the sink's end.
fn decode(body: &[u8], at: u64, whole: bool, sink: &mut Sink) -> (u64, u64) {
    let mut mark = (at, sink.pos);
    let mut i = 0;
    while i < body.len() && !sink.full() {
        let j = memchr::memchr(b'\\', &body[i..]).map_or(body.len(), |k| i + k);
        let take = (j - i).min(sink.to.saturating_sub(sink.pos) as usize);
        sink.put(&body[i..i + take]);
        i += take;
        mark = (at + i as u64, sink.pos);
        if i < j || i == body.len() || sink.full() {
            break;
        }
        if !whole && body.len() - i < 12 {
            break;
        }
        let u = escape::unit(&body[i..]);
        sink.put(u.as_slice());
        i += usize::from(u.taken);
        if sink.pos <= sink.to {
            mark = (at + i as u64, sink.pos);
        }
    }
    mark
}

/// A whole string body unescaped, for tests that hold it to another
/// decoder.
#[cfg(test)]
pub(crate) fn decode_body(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sink = Sink { out: &mut out, pos: 0, from: 0, to: u64::MAX };
    decode(body, 0, true, &mut sink);
    out
}
