//! What an index keeps: messages, their spans, and the little a chat has to
//! remember from line to line (tool names, recent calls, queued prompts).
//!
//! An index is mostly `Msg`s and `Span`s, so both are 16 bytes: a chat of
//! a million messages averaging 1.3 spans is ~37 MB. Spans of one message
//! are stored together and in order, so a message only needs its first
//! span's index; its count is where the next message's spans begin.

use super::{Kind, CALLS_REMEMBERED, TOOLS_MAX, TOOL_NAME_MAX};

/// How a span's bytes become text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Enc {
    /// The bytes as they are: a JSON value served verbatim.
    Raw = 0,
    /// The body of a JSON string, unescaped.
    Str = 1,
    /// A fixed text from `LITERALS`; the offset is its index.
    Lit = 2,
}

/// Texts for what a transcript holds that is not text.
pub(crate) const LITERALS: [&[u8]; 3] = [b"[image]", b"", b"[document]"];
pub(crate) const LIT_IMAGE: u64 = 0;
pub(crate) const LIT_EMPTY: u64 = 1;
pub(crate) const LIT_DOCUMENT: u64 = 2;

/// File offsets a span can hold: 48 bits, 256 TiB.
pub(crate) const OFF_LIMIT: u64 = 1 << 48;

/// One stretch of the transcript that renders part of a message: 16 bytes.
/// `word` packs the file offset (48 bits), the encoding (2) and whether a
/// newline follows the text (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    word: u64,
    /// Bytes in the file.
    len: u32,
    /// Bytes the text renders to, not counting the added newline.
    out: u32,
}

const ENC_SHIFT: u32 = 48;
const NL_BIT: u64 = 1 << 50;

impl Span {
    fn pack(off: u64, enc: Enc, nl: bool, len: u64, out: u64) -> Option<Span> {
        if off >= OFF_LIMIT {
            return None;
        }
        let word = off | ((enc as u64) << ENC_SHIFT) | if nl { NL_BIT } else { 0 };
        Some(Span { word, len: u32::try_from(len).ok()?, out: u32::try_from(out).ok()? })
    }

    /// A string body at `off`, `len` bytes in the file, `out` decoded.
    pub(crate) fn string(off: u64, len: u64, out: u64, nl: bool) -> Option<Span> {
        Span::pack(off, Enc::Str, nl && out > 0, len, out)
    }

    /// A JSON value served as written. It never ends in a newline (a
    /// value ends in a quote, a bracket or a scalar's last byte).
    pub(crate) fn raw(off: u64, len: u64) -> Option<Span> {
        Span::pack(off, Enc::Raw, len > 0, len, len)
    }

    /// One of `LITERALS`.
    pub(crate) fn lit(which: u64) -> Span {
        let text = LITERALS.get(which as usize).copied().unwrap_or(b"");
        let out = text.len() as u32;
        let nl = if out > 0 { NL_BIT } else { 0 };
        Span { word: which | ((Enc::Lit as u64) << ENC_SHIFT) | nl, len: 0, out }
    }

    pub(crate) fn off(&self) -> u64 {
        self.word & (OFF_LIMIT - 1)
    }

    pub(crate) fn enc(&self) -> Enc {
        match (self.word >> ENC_SHIFT) & 3 {
            0 => Enc::Raw,
            1 => Enc::Str,
            _ => Enc::Lit,
        }
    }

    pub(crate) fn nl(&self) -> bool {
        self.word & NL_BIT != 0
    }

    pub(crate) fn len(&self) -> u64 {
        u64::from(self.len)
    }

    pub(crate) fn out(&self) -> u64 {
        u64::from(self.out)
    }

    /// Bytes this span adds to its message.
    pub(crate) fn size(&self) -> u64 {
        self.out() + u64::from(self.nl())
    }

    /// For a literal, its text.
    pub(crate) fn literal(&self) -> &'static [u8] {
        LITERALS.get(self.off() as usize).copied().unwrap_or(b"")
    }
}

/// One message: 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Msg {
    /// Index of its first span; its last is before the next message's.
    pub first: u32,
    /// Unix seconds of its record (or the last record before it that had
    /// a time).
    pub time: u32,
    /// Rendered size: the sum of its spans' sizes.
    pub size: u32,
    pub kind: Kind,
    /// The tool it calls or answers, as an index into the chat's tool
    /// names plus one; 0 when not known.
    pub tool: u8,
}

/// A cap was reached: the line that hit it is left unindexed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// Where the spans of a message, or of a queued prompt, go.
pub(crate) trait Spans {
    fn put(&mut self, s: Span) -> Result<(), Full>;
}

impl Spans for Vec<Span> {
    fn put(&mut self, s: Span) -> Result<(), Full> {
        self.push(s);
        Ok(())
    }
}

/// The messages and spans of one index, and the message being built.
pub(crate) struct Store {
    pub msgs: Vec<Msg>,
    pub spans: Vec<Span>,
    pub max_messages: usize,
    pub max_spans: usize,
    open: bool,
}

impl Store {
    pub(crate) fn new(max_messages: usize, max_spans: usize) -> Store {
        Store { msgs: Vec::new(), spans: Vec::new(), max_messages, max_spans, open: false }
    }

    /// Begins a message.
    pub(crate) fn open(&mut self, kind: Kind, time: u32, tool: u8) -> Result<(), Full> {
        if self.msgs.len() >= self.max_messages {
            return Err(Full);
        }
        let first = self.spans.len() as u32;
        self.msgs.push(Msg { first, time, size: 0, kind, tool });
        self.open = true;
        Ok(())
    }

    /// Whether the open message has no span yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.msgs.last().is_none_or(|m| m.first as usize == self.spans.len())
    }

    /// Ends the open message: kept if it got a span, dropped if not.
    /// Returns whether it was kept.
    pub(crate) fn close(&mut self) -> bool {
        if !self.open {
            return false;
        }
        self.open = false;
        if self.is_empty() {
            self.msgs.pop();
            return false;
        }
        true
    }

    /// A message of one span, if there is a span.
    pub(crate) fn one(&mut self, kind: Kind, time: u32, span: Option<Span>) -> Result<(), Full> {
        let Some(span) = span else { return Ok(()) };
        self.open(kind, time, 0)?;
        self.put(span)?;
        self.close();
        Ok(())
    }

    /// Undoes everything past `msgs` messages and `spans` spans.
    pub(crate) fn truncate(&mut self, msgs: usize, spans: usize) {
        self.msgs.truncate(msgs);
        self.spans.truncate(spans);
        self.open = false;
    }
}

impl Spans for Store {
    fn put(&mut self, s: Span) -> Result<(), Full> {
        let Some(m) = self.msgs.last_mut().filter(|_| self.open) else { return Ok(()) };
        if self.spans.len() >= self.max_spans || self.spans.len() >= u32::MAX as usize {
            return Err(Full);
        }
        let size = u64::from(m.size) + s.size();
        m.size = u32::try_from(size).map_err(|_| Full)?;
        self.spans.push(s);
        Ok(())
    }
}

/// The tool names a chat names its calls by.
#[derive(Clone)]
pub(crate) struct Tools {
    names: Vec<([u8; TOOL_NAME_MAX], u8)>,
}

impl Tools {
    pub(super) fn new() -> Tools {
        Tools { names: Vec::new() }
    }

    /// The index (plus one) a tool name is kept under, adding it if new; 0
    /// when it has no usable name. Lowercased, anything but letters,
    /// digits, `_`, `.` and `-` made `-`, cut at `TOOL_NAME_MAX` bytes. A
    /// name that would read as another kind, or as a result, is not used.
    pub(super) fn intern(&mut self, raw: &[u8]) -> u8 {
        let mut buf = [0u8; TOOL_NAME_MAX];
        let n = raw.len().min(TOOL_NAME_MAX);
        for (o, &c) in buf.iter_mut().zip(&raw[..n]) {
            *o = match c {
                b'A'..=b'Z' => c.to_ascii_lowercase(),
                b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => c,
                _ => b'-',
            };
        }
        let name = &buf[..n];
        if n == 0 || Kind::from_label(name).is_some() || name.ends_with(b"-result") {
            return 0;
        }
        if let Some(i) = self.names.iter().position(|(b, l)| &b[..usize::from(*l)] == name) {
            return i as u8 + 1;
        }
        if self.names.len() >= TOOLS_MAX {
            return 0;
        }
        self.names.push((buf, n as u8));
        self.names.len() as u8
    }

    /// Bytes its names take.
    pub(super) fn heap_bytes(&self) -> usize {
        self.names.capacity() * (TOOL_NAME_MAX + 1)
    }

    /// The name kept under `tool` (an index plus one).
    pub(super) fn name(&self, tool: u8) -> Option<&[u8]> {
        let (b, l) = self.names.get(usize::from(tool).checked_sub(1)?)?;
        Some(&b[..usize::from(*l)])
    }
}

/// The last calls made, for naming their results.
pub(crate) struct Calls {
    /// Made at the first call (4 KB): a chat without tool calls, and a
    /// search's kept copy of an index (`Index::kept_copy`), hold none.
    ring: Option<Box<[(u64, u8); CALLS_REMEMBERED]>>,
    next: usize,
}

impl Calls {
    pub(super) fn new() -> Calls {
        Calls { ring: None, next: 0 }
    }

    /// Remembers that call `id` (a hash, 0 for none) went to `tool`.
    pub(super) fn remember(&mut self, id: u64, tool: u8) {
        if id == 0 || tool == 0 {
            return;
        }
        let ring = self.ring.get_or_insert_with(|| Box::new([(0, 0); CALLS_REMEMBERED]));
        ring[self.next] = (id, tool);
        self.next = (self.next + 1) % CALLS_REMEMBERED;
    }

    /// The tool call `id` went to; 0 when not among the remembered.
    pub(super) fn tool_of(&self, id: u64) -> u8 {
        let Some(ring) = self.ring.as_ref().filter(|_| id != 0) else { return 0 };
        ring.iter().find(|(k, _)| *k == id).map_or(0, |&(_, t)| t)
    }
}

/// A hash of a call id or a prompt's raw bytes; never 0, so 0 means none.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    if bytes.is_empty() {
        return 0;
    }
    wyhash::wyhash(bytes, 0x6361_6c6c) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_and_a_span_are_16_bytes_each() {
        assert_eq!(std::mem::size_of::<Msg>(), 16);
        assert_eq!(std::mem::size_of::<Span>(), 16);
    }

    #[test]
    fn a_span_keeps_what_it_packs() {
        let s = Span::string(OFF_LIMIT - 1, u32::MAX.into(), 7, true).unwrap();
        assert_eq!((s.off(), s.len(), s.out(), s.enc(), s.nl()), (OFF_LIMIT - 1, u32::MAX.into(), 7, Enc::Str, true));
        assert!(Span::string(OFF_LIMIT, 1, 1, false).is_none());
        assert!(!Span::string(5, 0, 0, true).unwrap().nl(), "an empty text gets no newline");
        let l = Span::lit(LIT_IMAGE);
        assert_eq!((l.enc(), l.literal(), l.size()), (Enc::Lit, &b"[image]"[..], 8));
        assert_eq!(Span::lit(LIT_EMPTY).size(), 0);
    }

    #[test]
    fn a_tool_name_is_made_safe_and_never_reads_as_another_kind() {
        let mut t = Tools::new();
        assert_eq!(t.intern(b"Bash"), 1);
        assert_eq!(t.intern(b"bash"), 1);
        let mail = t.intern(b"mcp__x__Send Mail/now");
        assert_eq!(t.name(mail), Some(&b"mcp__x__send-mail-now"[..]));
        for bad in [&b"User"[..], b"tool-result", b"tool-call", b"x-result", b""] {
            assert_eq!(t.intern(bad), 0, "{}", String::from_utf8_lossy(bad));
        }
        let long = [b'a'; 60];
        let cut = t.intern(&long);
        assert_eq!(t.name(cut).map(<[u8]>::len), Some(TOOL_NAME_MAX));
    }

    #[test]
    fn past_the_tool_cap_a_new_name_is_not_kept() {
        let mut t = Tools::new();
        for i in 0..TOOLS_MAX {
            assert_eq!(usize::from(t.intern(format!("t{i}").as_bytes())), i + 1);
        }
        assert_eq!(t.intern(b"one-too-many"), 0);
        assert_eq!(t.intern(b"t3"), 4);
    }

    #[test]
    fn a_result_finds_its_call_among_the_last_remembered() {
        let mut c = Calls::new();
        c.remember(hash(b"first"), 9);
        for i in 0..CALLS_REMEMBERED - 1 {
            c.remember(hash(format!("c{i}").as_bytes()), 1);
        }
        assert_eq!(c.tool_of(hash(b"first")), 9);
        c.remember(hash(b"last"), 2);
        assert_eq!(c.tool_of(hash(b"first")), 0, "forgotten after {CALLS_REMEMBERED} newer calls");
        assert_eq!(c.tool_of(0), 0);
    }
}
