//! The walk: from the scan's events to where, in one line, the values a
//! format cares about start and end.
//!
//! A record is read through a fixed schema (`Node`): which keys of which
//! objects matter, and what the elements of which arrays are. The walk
//! follows the events of one line with a small stack; a value the schema
//! names is recorded as an `Recorded` (its kind, its first and last byte, and
//! for a string how long it renders), and any other container is skipped
//! by counting brackets, whatever is in it. Entries are in document order,
//! each followed by its descendants, so the interpreters (`claude`,
//! `codex`) find a value's children without searching the line.
//!
//! It checks nesting and the order of keys, colons and commas, not the
//! grammar of scalars: a line that stops making sense stops being walked,
//! and what was recorded before that still counts (a value that did not
//! end is not used). Nothing is ever read outside the line. When a key
//! appears twice, the first wins.
//!
//! A format may look at the bytes right after a record's type (`Peek`):
//! to stop there, or to jump over bytes it knows by heart into the object
//! that matters (`Jump`), recorded exactly as walking to it would.

use super::escape;
use super::store::Span;

/// What the schema knows of one kind of value: the keys that matter if it
/// is an object (with the schema node of each key's value), and the node
/// of its elements if it is an array. A node with neither is a leaf: its
/// value is recorded whole.
pub(crate) struct Node {
    pub keys: &'static [(&'static [u8], u8)],
    pub elem: u8,
}

/// A leaf, and the placeholder for node 0 (which means "not recorded").
pub(crate) const LEAF: Node = Node { keys: &[], elem: 0 };

/// Slots of a node's key table.
const KEY_SLOTS: usize = 64;

/// Where a node's key may be in its `keys`, by the key's hash: 0 for no
/// key, `KEY_SHARED` for keys that share the slot (looked for one by
/// one), else the index plus one. A key is looked up once per key of
/// every object walked — millions in a long rollout — so it costs one
/// hash and one comparison rather than a pass over every key of the node.
type KeyTable = [u8; KEY_SLOTS];

const KEY_SHARED: u8 = u8::MAX;

/// A key's slot: its length, first, second and last bytes (chosen so that
/// no two keys of one node of today's schemas share a slot; a test holds
/// them to it: `type` and `time` differ only in their second byte).
const fn key_slot(key: &[u8]) -> usize {
    match key {
        [] => 0,
        [only] => (2 + *only as usize * 6) % KEY_SLOTS,
        [first, last] => (4 + *first as usize * 5 + *last as usize * 4) % KEY_SLOTS,
        [first, second, .., last] => {
            (key.len() * 6 + *first as usize * 11 + *last as usize + *second as usize * 3) % KEY_SLOTS
        }
    }
}

/// Whether two keys are the same. Keys are short, and a call to memcmp
/// costs more than comparing them in a few overlapping words; a byte loop
/// costs more than that for the long ones (`reasoning_output_tokens`).
#[inline(always)]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // The first and last `N` bytes of each, as words (they overlap when
    // the keys are shorter than 2N).
    fn ends<const N: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<N>() == b.first_chunk::<N>() && a.last_chunk::<N>() == b.last_chunk::<N>()
    }
    match a.len() {
        0..4 => a == b,
        4..8 => ends::<4>(a, b),
        8..=16 => ends::<8>(a, b),
        17..=32 => ends::<16>(a, b),
        _ => a == b,
    }
}

/// Nodes a schema may have: node ids are bytes, and today's largest
/// schema (claude's) has 41.
const MAX_NODES: usize = 64;

/// The key tables of a schema's nodes, built at compile time.
const fn key_tables(nodes: &[Node]) -> [KeyTable; MAX_NODES] {
    assert!(nodes.len() <= MAX_NODES, "a schema of more nodes than MAX_NODES");
    let mut tables = [[0u8; KEY_SLOTS]; MAX_NODES];
    let mut n = 0;
    while n < nodes.len() {
        let keys = nodes[n].keys;
        assert!(keys.len() < KEY_SHARED as usize, "a node of more keys than a table slot can name");
        let mut i = 0;
        while i < keys.len() {
            let slot = key_slot(keys[i].0);
            tables[n][slot] = if tables[n][slot] == 0 { i as u8 + 1 } else { KEY_SHARED };
            i += 1;
        }
        n += 1;
    }
    tables
}

/// A format's schema: its nodes (node 1 is the record), and which record
/// types are worth walking. Most lines of a rollout are bookkeeping
/// (`event_msg`, progress); once the record's `type` says so, the rest of
/// the line is not walked.
pub(crate) struct Schema {
    nodes: &'static [Node],
    /// Each node's key table, made from `nodes` by `Schema::new`.
    tables: [KeyTable; MAX_NODES],
    /// The node of the record's `type`.
    kind: u8,
    wanted: fn(&[u8]) -> bool,
    /// A `kind` one level down (a codex payload's `type`), given the
    /// record's type when it came first (else empty): whether the rest of
    /// the line is worth walking. Of codex's `event_msg`s only the token
    /// counts are.
    nested: fn(&[u8], &[u8]) -> bool,
    /// The nodes (a bit each) whose container, once closed, may be all of
    /// its record that matters; `enough` says, given the record's type.
    /// Codex's token count needs its running total and nothing after it:
    /// the rest of each of its 13,000 lines in the bench rollout (the last
    /// usage, the rate limits) was a third more events to walk.
    stops: u64,
    enough: fn(&[u8], u8) -> bool,
    /// What the bytes right after the record's type say, given the type:
    /// walk on, stop, or jump (`Peek`).
    peek: fn(&[u8], &[u8]) -> Peek,
}

/// What a look at the bytes after a record's type decides.
pub(crate) enum Peek {
    /// Walk on.
    Walk,
    /// The rest of the line does not matter.
    Stop,
    /// The line goes on exactly as a template the format knows (`Jump`):
    /// its containers are taken as opened, and the walk goes on past it.
    Jump(&'static Jump),
}

/// Bytes a record of one type is written with after its type, byte for
/// byte, and the containers they open: the node of each `{`, outermost
/// first. Of the objects it opens, only the innermost is read past the
/// template (keys after it in the outer ones are not), and when it is
/// flat (`"key":digits` members) it is read at once (`read_flat`). Codex
/// writes its token counts so, 13,800 of them in the bench rollout: each
/// was some forty events to walk (bench/README, "On AMD").
pub(crate) struct Jump {
    template: &'static [u8],
    /// Each opened object: its node, and where its `{` stands in the
    /// template.
    opens: [(u8, u16); JUMP_OPENS_MAX],
    n: usize,
}

/// Objects a `Jump` may open.
const JUMP_OPENS_MAX: usize = 4;

/// Members of an object a jump lands in that are read at once; past this
/// it is walked.
const FLAT_MAX: usize = 16;

impl Jump {
    /// A jump over `template`, whose every `{` opens an object, of the
    /// nodes `opens`, outermost first (checked at compile time).
    pub(super) const fn new(template: &'static [u8], opens: &[u8]) -> Jump {
        assert!(opens.len() <= JUMP_OPENS_MAX, "a jump opening more objects than JUMP_OPENS_MAX");
        let mut j = Jump { template, opens: [(0, 0); JUMP_OPENS_MAX], n: 0 };
        let mut i = 0;
        while i < template.len() {
            if template[i] == b'{' {
                assert!(j.n < opens.len(), "a jump's template opens more objects than it names");
                j.opens[j.n] = (opens[j.n], i as u16);
                j.n += 1;
            }
            i += 1;
        }
        assert!(j.n == opens.len(), "a jump names more objects than its template opens");
        j
    }

    pub(super) fn template(&self) -> &'static [u8] {
        self.template
    }
}

impl Schema {
    /// A schema of `nodes`, its key tables built at compile time.
    pub(super) const fn new(
        nodes: &'static [Node],
        kind: u8,
        wanted: fn(&[u8]) -> bool,
        nested: fn(&[u8], &[u8]) -> bool,
    ) -> Schema {
        Schema {
            nodes,
            tables: key_tables(nodes),
            kind,
            wanted,
            nested,
            stops: 0,
            enough: |_, _| false,
            peek: |_, _| Peek::Walk,
        }
    }

    /// This schema, which looks at the bytes after a record's type with
    /// `peek`.
    pub(super) const fn peeking(mut self, peek: fn(&[u8], &[u8]) -> Peek) -> Schema {
        self.peek = peek;
        self
    }

    /// This schema, whose records need nothing after a container of the
    /// nodes `sids` closes when `enough` says so of the record's type.
    pub(super) const fn enough_after(mut self, sids: &[u8], enough: fn(&[u8], u8) -> bool) -> Schema {
        let mut i = 0;
        while i < sids.len() {
            assert!((sids[i] as usize) < 64, "a stopping node past the mask");
            self.stops |= 1 << sids[i];
            i += 1;
        }
        self.enough = enough;
        self
    }
}

/// For a schema whose records are worth walking whatever is nested.
pub(crate) fn any_nested(_: &[u8], _: &[u8]) -> bool {
    true
}

/// The kind of a recorded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Val {
    Str,
    Obj,
    Arr,
    Scalar,
}

/// A recorded value. Offsets are from the start of the line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recorded {
    /// Its schema node.
    pub sid: u8,
    pub val: Val,
    /// A string: its text does not end in a newline.
    pub nl: bool,
    /// First byte (a string's opening quote).
    pub start: u32,
    /// One past the last byte; 0 for a container that never closed.
    pub end: u32,
    /// A string: the bytes its body renders to.
    pub out: u32,
    /// The entry after its descendants.
    pub next: u32,
}

/// Longest line walked: offsets within a line are 32 bits, and a message's
/// size must fit one too. A longer line is not a record this can index.
pub(crate) const LINE_MAX: usize = (1 << 31) - 1;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    InKey,
    Colon,
    /// A value (after `:` or `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    InString,
    /// After a value: `,` or the container's end.
    Next,
}

#[derive(Clone, Copy)]
struct Frame {
    sid: u8,
    obj: bool,
    entry: u32,
    state: State,
    /// The schema node of the value after the current key.
    key_sid: u8,
    /// Keys of this object already seen, by their index in the schema.
    seen: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Open,
    /// The rest of the line does not matter (a record whose type says it
    /// is bookkeeping): it was not walked.
    Done,
    /// The record's object closed: anything after it on the line is
    /// another object glued on (`Walker::closed`) or nothing.
    Closed,
    Dead,
}

/// The walk of one line at a time; its buffers are kept between lines.
pub(crate) struct Walker {
    schema: &'static Schema,
    pub entries: Vec<Recorded>,
    frames: Vec<Frame>,
    phase: Phase,
    /// Depth of brackets in a container being skipped (0: not skipping),
    /// and its entry when it is recorded whole.
    skip: u32,
    skip_entry: u32,
    /// Where a scalar may begin: after the last `:`, `[` or `,`.
    value_from: usize,
    /// The string open now: its quote, the escape savings before it, and
    /// its schema node (0 when not recorded).
    str_at: usize,
    str_saved: u64,
    str_sid: u8,
    /// The record's type, once read: its body's range in the line's bytes.
    root_ty: (usize, usize),
    line: usize,
    /// Events before this are inside a template taken whole (`Jump`).
    resume_at: usize,
}

impl Walker {
    pub(super) fn new(schema: &'static Schema) -> Walker {
        Walker {
            schema,
            entries: Vec::new(),
            frames: Vec::new(),
            phase: Phase::Start,
            skip: 0,
            skip_entry: NONE,
            value_from: 0,
            str_at: 0,
            str_saved: 0,
            str_sid: 0,
            root_ty: (0, 0),
            line: 0,
            resume_at: 0,
        }
    }

    /// Starts a line at `pos`.
    pub(super) fn reset(&mut self, pos: usize) {
        self.entries.clear();
        self.frames.clear();
        self.phase = Phase::Start;
        self.skip = 0;
        self.skip_entry = NONE;
        self.root_ty = (0, 0);
        self.line = pos;
        self.resume_at = 0;
    }

    /// The line ends: containers still open end with it, unclosed.
    pub(super) fn finish(&mut self, len: usize) {
        if len > LINE_MAX {
            self.entries.clear();
        }
        let n = self.entries.len() as u32;
        for f in &self.frames {
            if let Some(e) = self.entries.get_mut(f.entry as usize) {
                e.next = n;
            }
        }
        if let Some(e) = self.entries.get_mut(self.skip_entry as usize).filter(|_| self.skip > 0) {
            e.next = n;
        }
    }

    fn rel(&self, pos: usize) -> u32 {
        (pos - self.line) as u32
    }

    fn push(&mut self, sid: u8, val: Val, start: usize) -> u32 {
        let i = self.entries.len() as u32;
        let start = self.rel(start);
        self.entries.push(Recorded { sid, val, nl: false, start, end: 0, out: 0, next: i + 1 });
        i
    }

    fn die(&mut self) {
        self.phase = Phase::Dead;
    }

    /// The schema node of the next value in the innermost container.
    fn value_sid(&self, f: &Frame) -> u8 {
        if f.obj {
            f.key_sid
        } else {
            self.node(f.sid).elem
        }
    }

    fn node(&self, sid: u8) -> &'static Node {
        self.schema.nodes.get(usize::from(sid)).unwrap_or(&LEAF)
    }

    /// Whether the rest of the line can still matter.
    pub(super) fn walking(&self) -> bool {
        matches!(self.phase, Phase::Start | Phase::Open)
    }

    /// The record's object has closed: what follows on its line, if not
    /// blank, is another object glued on.
    pub(super) fn closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// The line of `len` bytes, walked to its end, was not a record a
    /// strict parser takes: it stopped making sense, or an object never
    /// closed. (A line not walked past its type counts as a record.)
    pub(super) fn bad(&self, line: &[u8]) -> bool {
        match self.phase {
            Phase::Dead | Phase::Open => true,
            Phase::Start => line.iter().any(|c| !c.is_ascii_whitespace()),
            Phase::Done | Phase::Closed => false,
        }
    }

    /// A quote opens or closes a string. False when the rest of the line
    /// does not matter.
    #[inline(always)]
    pub(super) fn quote(&mut self, bytes: &[u8], pos: usize, open: bool, saved: u64) -> bool {
        self.quote_event(bytes, pos, open, saved);
        self.walking()
    }

    #[inline(always)]
    fn quote_event(&mut self, bytes: &[u8], pos: usize, open: bool, saved: u64) {
        if self.phase != Phase::Open || self.skip > 0 || pos < self.resume_at {
            if self.phase == Phase::Start {
                self.die();
            }
            return;
        }
        let Some(f) = self.frames.last().copied() else { return self.die() };
        match (open, f.state) {
            (true, State::KeyOrEnd | State::Key) => self.set_state(State::InKey),
            (true, State::Value | State::ValueOrEnd) => {
                self.str_sid = self.value_sid(&f);
                self.set_state(State::InString);
            }
            (false, State::InKey) => self.key(bytes, pos),
            (false, State::InString) => {
                // Before the string: a jump it takes pushes frames of its own.
                self.set_state(State::Next);
                if self.str_sid != 0 {
                    self.string(bytes, pos, saved);
                }
            }
            _ => return self.die(),
        }
        if open {
            self.str_at = pos;
            self.str_saved = saved;
        }
    }

    fn set_state(&mut self, s: State) {
        if let Some(f) = self.frames.last_mut() {
            f.state = s;
        }
    }

    /// A key ends at `pos`: which value comes next.
    fn key(&mut self, bytes: &[u8], pos: usize) {
        let key = bytes.get(self.str_at + 1..pos).unwrap_or(&[]);
        let sid = self.key_sid(key);
        if let Some(f) = self.frames.last_mut() {
            f.key_sid = sid;
            f.state = State::Colon;
        }
    }

    /// The node of the innermost object's member `key`: 0 when the schema
    /// does not record it, or when the object already had it (the walk
    /// records a repeated key's first value).
    fn key_sid(&mut self, key: &[u8]) -> u8 {
        let schema = self.schema;
        let Some(f) = self.frames.last_mut() else { return 0 };
        let node = schema.nodes.get(usize::from(f.sid)).unwrap_or(&LEAF);
        let same = |k: &[u8]| same_key(k, key);
        let slot = schema.tables.get(usize::from(f.sid)).map_or(0, |t| t[key_slot(key)]);
        let found = match slot {
            0 => None,
            KEY_SHARED => node.keys.iter().position(|(k, _)| same(k)),
            i => Some(usize::from(i - 1)).filter(|&i| node.keys.get(i).is_some_and(|(k, _)| same(k))),
        };
        let Some(i) = found else { return 0 };
        let bit = 1u32.checked_shl(i as u32).unwrap_or(0);
        if f.seen & bit != 0 {
            return 0;
        }
        f.seen |= bit;
        node.keys[i].1
    }

    /// A recorded string ends at `pos`.
    fn string(&mut self, bytes: &[u8], pos: usize, saved: u64) {
        let body = bytes.get(self.str_at + 1..pos).unwrap_or(&[]);
        let out = (body.len() as u64).saturating_sub(saved.saturating_sub(self.str_saved));
        let i = self.push(self.str_sid, Val::Str, self.str_at);
        let end = self.rel(pos + 1);
        let e = &mut self.entries[i as usize];
        e.end = end;
        e.out = out as u32;
        e.nl = out > 0 && !escape::ends_in_newline(body);
        if self.str_sid != self.schema.kind {
            return;
        }
        let stop = match self.frames.len() {
            1 => {
                self.root_ty = (self.str_at + 1, pos);
                if !(self.schema.wanted)(body) {
                    true
                } else {
                    match (self.schema.peek)(body, bytes.get(pos + 1..).unwrap_or(&[])) {
                        Peek::Walk => false,
                        Peek::Stop => true,
                        Peek::Jump(j) => {
                            self.jump(j, pos + 1, bytes);
                            false
                        }
                    }
                }
            }
            2 => !(self.schema.nested)(bytes.get(self.root_ty.0..self.root_ty.1).unwrap_or(&[]), body),
            _ => false,
        };
        if stop {
            self.phase = Phase::Done;
        }
    }

    /// The bytes at `at` are `j`'s template: its objects taken as opened,
    /// each recorded at its `{`, and events before its end passed over.
    #[cold]
    fn jump(&mut self, j: &Jump, at: usize, bytes: &[u8]) {
        for (n, &(sid, i)) in j.opens[..j.n].iter().enumerate() {
            let entry = self.push(sid, Val::Obj, at + usize::from(i));
            let last = n + 1 == j.n;
            // The outer objects read nothing past the template.
            let (state, seen) = if last { (State::KeyOrEnd, 0) } else { (State::Next, u32::MAX) };
            self.frames.push(Frame { sid, obj: true, entry, state, key_sid: 0, seen });
        }
        self.resume_at = at + j.template.len();
        self.read_flat(bytes);
    }

    /// The object a jump landed in, read at once if it is flat as codex
    /// writes its counts — `"key":digits` members, no space, no escape —
    /// and recorded as walking it would record it (its keys looked up the
    /// same way, its end the same). Anything else is left to the walk, as
    /// if this had not looked: most of a jumped line's cost was the dozens
    /// of events of a few numbers.
    fn read_flat(&mut self, bytes: &[u8]) {
        // Recorded as read, and taken back if the object is not flat.
        let (len, seen) = (self.entries.len(), self.frames.last().map_or(0, |f| f.seen));
        if let Some(end) = self.flat_members(bytes) {
            self.close(bytes, end);
            self.resume_at = end + 1;
        } else {
            self.entries.truncate(len);
            if let Some(f) = self.frames.last_mut() {
                f.seen = seen;
            }
        }
    }

    /// Records the members of a flat object at `resume_at`; where it
    /// closes, or `None` where it is not flat.
    fn flat_members(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut at = self.resume_at;
        if bytes.get(at) == Some(&b'}') {
            return Some(at);
        }
        for _ in 0..FLAT_MAX {
            let key = at + 1;
            let rest = bytes.get(key..).filter(|_| bytes.get(at) == Some(&b'"'))?;
            let len = memchr::memchr3(b'"', b'\\', b'\n', rest).filter(|&n| rest[n] == b'"')?;
            let value = key + len + 2;
            if bytes.get(value - 1) != Some(&b':') {
                return None;
            }
            let digits = bytes.get(value..)?.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let sid = self.key_sid(&rest[..len]);
            if sid != 0 {
                let i = self.push(sid, Val::Scalar, value);
                self.entries[i as usize].end = self.rel(value + digits);
            }
            at = value + digits;
            match bytes.get(at)? {
                b',' => at += 1,
                b'}' => return Some(at),
                _ => return None,
            }
        }
        None
    }

    /// One of `{ } [ ] : ,` outside strings. False when the rest of the
    /// line does not matter.
    #[inline(always)]
    pub(super) fn structural(&mut self, bytes: &[u8], pos: usize, c: u8) -> bool {
        self.structural_event(bytes, pos, c);
        self.walking()
    }

    #[inline(always)]
    fn structural_event(&mut self, bytes: &[u8], pos: usize, c: u8) {
        if pos < self.resume_at {
            return;
        }
        if self.skip > 0 {
            return self.skipping(pos, c);
        }
        match self.phase {
            Phase::Open => {}
            Phase::Start if c == b'{' => return self.open_root(pos),
            Phase::Start => return self.die(),
            Phase::Done | Phase::Closed | Phase::Dead => return,
        }
        let Some(f) = self.frames.last().copied() else { return self.die() };
        let ok = match (c, f.state) {
            (b'{' | b'[', State::Value | State::ValueOrEnd) => {
                self.open(pos, c, self.value_sid(&f));
                true
            }
            (b'}', State::KeyOrEnd | State::Next) if f.obj => self.close(bytes, pos),
            (b']', State::ValueOrEnd | State::Next) if !f.obj => {
                self.scalar(bytes, pos, true) && self.close(bytes, pos)
            }
            (b'}' | b']', State::Value) if f.obj == (c == b'}') => {
                self.scalar(bytes, pos, false) && self.close(bytes, pos)
            }
            (b':', State::Colon) => {
                self.value_from = pos + 1;
                self.set_state(State::Value);
                true
            }
            (b',', State::Next) => self.comma(pos, f.obj),
            (b',', State::Value | State::ValueOrEnd) => self.scalar(bytes, pos, false) && self.comma(pos, f.obj),
            _ => false,
        };
        if !ok {
            self.die();
        }
    }

    fn open_root(&mut self, pos: usize) {
        let entry = self.push(1, Val::Obj, pos);
        self.frames.push(Frame { sid: 1, obj: true, entry, state: State::KeyOrEnd, key_sid: 0, seen: 0 });
        self.phase = Phase::Open;
    }

    /// A container value opens: walked when its schema node looks inside
    /// it, recorded whole when it is a leaf, skipped when not recorded.
    fn open(&mut self, pos: usize, c: u8, sid: u8) {
        let obj = c == b'{';
        let node = self.node(sid);
        let val = if obj { Val::Obj } else { Val::Arr };
        if sid != 0 && ((obj && !node.keys.is_empty()) || (!obj && node.elem != 0)) {
            let entry = self.push(sid, val, pos);
            let state = if obj { State::KeyOrEnd } else { State::ValueOrEnd };
            self.frames.push(Frame { sid, obj, entry, state, key_sid: 0, seen: 0 });
            self.value_from = pos + 1;
            return;
        }
        self.skip = 1;
        self.skip_entry = if sid != 0 { self.push(sid, val, pos) } else { NONE };
    }

    fn skipping(&mut self, pos: usize, c: u8) {
        match c {
            b'{' | b'[' => self.skip += 1,
            b'}' | b']' => {
                self.skip -= 1;
                if self.skip == 0 {
                    let (end, n) = (self.rel(pos + 1), self.entries.len() as u32);
                    if let Some(e) = self.entries.get_mut(self.skip_entry as usize) {
                        e.end = end;
                        e.next = n;
                    }
                    self.skip_entry = NONE;
                    self.set_state(State::Next);
                }
            }
            _ => {}
        }
    }

    /// The innermost container closes at `pos`.
    fn close(&mut self, bytes: &[u8], pos: usize) -> bool {
        let Some(f) = self.frames.pop() else { return false };
        let (end, n) = (self.rel(pos + 1), self.entries.len() as u32);
        if let Some(e) = self.entries.get_mut(f.entry as usize) {
            e.end = end;
            e.next = n;
        }
        if self.frames.is_empty() {
            self.phase = Phase::Closed;
        } else if self.schema.stops & (1u64 << (f.sid & 63)) != 0
            && (self.schema.enough)(bytes.get(self.root_ty.0..self.root_ty.1).unwrap_or(&[]), f.sid)
        {
            self.phase = Phase::Done;
        } else {
            self.set_state(State::Next);
        }
        true
    }

    fn comma(&mut self, pos: usize, obj: bool) -> bool {
        self.value_from = pos + 1;
        self.set_state(if obj { State::Key } else { State::Value });
        true
    }

    /// The bytes since `value_from` are a scalar, ending at `pos`. False
    /// when there is none, unless `may_be_empty` (a `]` right after `[`).
    fn scalar(&mut self, bytes: &[u8], pos: usize, may_be_empty: bool) -> bool {
        let Some(f) = self.frames.last().copied() else { return false };
        if f.state == State::Next {
            return true;
        }
        let raw = bytes.get(self.value_from..pos).unwrap_or(&[]);
        let lead = raw.iter().take_while(|c| c.is_ascii_whitespace()).count();
        let trail = raw[lead..].iter().rev().take_while(|c| c.is_ascii_whitespace()).count();
        if lead == raw.len() {
            return may_be_empty && f.state == State::ValueOrEnd;
        }
        let sid = self.value_sid(&f);
        if sid != 0 {
            let i = self.push(sid, Val::Scalar, self.value_from + lead);
            let end = self.rel(pos - trail);
            self.entries[i as usize].end = end;
        }
        self.set_state(State::Next);
        true
    }
}

/// One walked line, as the interpreters read it.
pub(crate) struct Rec<'a> {
    pub line: &'a [u8],
    /// File offset of the line's first byte.
    pub at: u64,
    pub entries: &'a [Recorded],
    /// One of several objects glued together on one line. A strict
    /// parser (every harness's loader) takes no record from such a line:
    /// its objects are no messages, but what they say was spent still
    /// counts (docs/CHAT.md, "Glued lines").
    pub glued: bool,
}

impl<'a> Rec<'a> {
    /// The record's object, if the line is one.
    pub(super) fn root(&self) -> Option<usize> {
        self.entries.first().filter(|e| e.val == Val::Obj).map(|_| 0)
    }

    pub(super) fn val(&self, i: usize) -> Val {
        self.entries[i].val
    }

    /// The value of `parent`'s key whose schema node is `sid`.
    pub(super) fn child(&self, parent: usize, sid: u8) -> Option<usize> {
        self.items(parent).find(|&j| self.entries[j].sid == sid)
    }

    /// The recorded members (or elements) of `parent`, in order.
    pub(super) fn items(&self, parent: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.entries.get(parent).map_or(0, |e| e.next as usize);
        let mut j = parent + 1;
        std::iter::from_fn(move || {
            if j >= end || j >= self.entries.len() {
                return None;
            }
            let i = j;
            j = (self.entries[i].next as usize).max(i + 1);
            Some(i)
        })
    }

    /// A string's body as written (escapes and all); empty for any other
    /// value.
    pub(super) fn body(&self, i: usize) -> &'a [u8] {
        let e = &self.entries[i];
        if e.val != Val::Str {
            return &[];
        }
        self.line.get(e.start as usize + 1..(e.end as usize).saturating_sub(1)).unwrap_or(&[])
    }

    /// The body of the string at `parent`'s key `sid`, or empty.
    pub(super) fn word(&self, parent: usize, sid: u8) -> &'a [u8] {
        self.child(parent, sid).map_or(&[], |i| self.body(i))
    }

    /// `true` or `false` at `parent`'s key `sid`; `None` when absent or
    /// anything else.
    pub(super) fn flag(&self, parent: usize, sid: u8) -> Option<bool> {
        let e = &self.entries[self.child(parent, sid)?];
        match self.line.get(e.start as usize..e.end as usize)? {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// A count at `parent`'s key `sid`: a number written as plain digits
    /// (what harnesses write token counts as); `None` for anything else.
    pub(super) fn uint(&self, parent: usize, sid: u8) -> Option<u64> {
        self.uint_at(self.child(parent, sid)?)
    }

    /// `uint` of each of `sids`, in one pass over `parent`'s members (a
    /// usage object's counts).
    pub(super) fn uints<const N: usize>(&self, parent: usize, sids: [u8; N]) -> [Option<u64>; N] {
        let (mut out, mut seen) = ([None; N], [false; N]);
        for i in self.items(parent) {
            // The first member of each node, as `child` finds it.
            if let Some(k) = sids.iter().position(|&s| s == self.entries[i].sid).filter(|&k| !seen[k]) {
                (out[k], seen[k]) = (self.uint_at(i), true);
            }
        }
        out
    }

    fn uint_at(&self, i: usize) -> Option<u64> {
        let e = &self.entries[i];
        let digits =
            self.line.get(e.start as usize..e.end as usize).filter(|d| e.val == Val::Scalar && !d.is_empty())?;
        digits
            .iter()
            .try_fold(0u64, |v, &d| v.checked_mul(10)?.checked_add(u64::from(d.checked_sub(b'0').filter(|&d| d < 10)?)))
    }

    /// The body of a string, to be unescaped.
    pub(super) fn str_span(&self, i: usize) -> Option<Span> {
        let e = &self.entries[i];
        if e.val != Val::Str {
            return None;
        }
        let len = u64::from(e.end - e.start - 2);
        Span::string(self.at + u64::from(e.start) + 1, len, u64::from(e.out), e.nl)
    }

    /// A value as written, if it ended.
    pub(super) fn raw_span(&self, i: usize) -> Option<Span> {
        let e = &self.entries[i];
        if e.end <= e.start {
            return None;
        }
        Span::raw(self.at + u64::from(e.start), u64::from(e.end - e.start))
    }

    /// A string as its text, anything else as its JSON.
    pub(super) fn value_span(&self, i: usize) -> Option<Span> {
        if self.val(i) == Val::Str {
            self.str_span(i)
        } else {
            self.raw_span(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::{Simd, Visit};
    use super::*;

    const A: u8 = 2;
    const B: u8 = 3;
    const LIST: u8 = 4;
    const ITEM: u8 = 5;
    const TEXT: u8 = 6;
    static NODES: [Node; 7] = [
        LEAF,
        // `lis4` shares `list`'s key slot, and is not recorded.
        Node { keys: &[(b"a", A), (b"b", B), (b"list", LIST), (b"lis4", 0)], elem: 0 },
        LEAF,
        LEAF,
        Node { keys: &[], elem: ITEM },
        Node { keys: &[(b"text", TEXT)], elem: 0 },
        LEAF,
    ];
    static SCHEMA: Schema = Schema::new(&NODES, B, |t| t != b"skip", any_nested);

    struct One<'a>(&'a mut Walker, &'a [u8]);
    impl Visit for One<'_> {
        fn quote(&mut self, pos: usize, open: bool, saved: u64) -> bool {
            self.0.quote(self.1, pos, open, saved)
        }
        fn structural(&mut self, pos: usize, byte: u8) -> bool {
            self.0.structural(self.1, pos, byte)
        }
        fn newline(&mut self, _: usize) -> bool {
            true
        }
    }

    fn walk(line: &[u8]) -> Walker {
        let mut w = Walker::new(&SCHEMA);
        w.reset(0);
        Simd::Scalar.scan(line, &mut One(&mut w, line));
        w.finish(line.len());
        w
    }

    fn texts(line: &[u8]) -> Vec<String> {
        let w = walk(line);
        let r = Rec { line, at: 0, entries: &w.entries, glued: false };
        let Some(root) = r.root() else { return vec![] };
        let mut v: Vec<String> = [A, B].iter().filter_map(|&s| r.child(root, s)).map(|i| show(&r, i)).collect();
        if let Some(list) = r.child(root, LIST) {
            for it in r.items(list) {
                v.push(match r.child(it, TEXT) {
                    Some(t) => show(&r, t),
                    None => format!("item:{}", show(&r, it)),
                });
            }
        }
        v
    }

    fn show(r: &Rec, i: usize) -> String {
        let s = r.value_span(i).map_or("unended".into(), |s| {
            String::from_utf8_lossy(&r.line[s.off() as usize..(s.off() + s.len()) as usize]).into_owned()
        });
        format!("{:?}={s}", r.val(i))
    }

    #[test]
    fn the_schema_picks_its_values_and_skips_the_rest() {
        let line = br#"{"x":{"a":[1,{"b":2}]},"b":true,"a":"hi","list":[{"text":"t1","z":[]},"s",7,{"q":1}]}"#;
        assert_eq!(
            texts(line),
            ["Str=hi", "Scalar=true", "Str=t1", "item:Str=s", "item:Scalar=7", r#"item:Obj={"q":1}"#]
        );
    }

    #[test]
    fn keys_that_share_a_slot_are_told_apart() {
        assert_eq!(SCHEMA.tables[1][key_slot(b"list")], KEY_SHARED, "the test schema has its shared slot");
        assert_eq!(texts(br#"{"lis4":[{"text":"no"}],"list":[{"text":"t"}],"a":"x"}"#), ["Str=x", "Str=t"]);
        // Not a key of the node, but in a key's slot.
        assert_eq!(key_slot(b"DL"), key_slot(b"a"));
        assert_eq!(texts(br#"{"DL":"no","a":"x"}"#), ["Str=x"]);
    }

    #[test]
    fn every_key_of_the_formats_has_a_slot_of_its_own() {
        use super::super::{claude, codex, dsh, pi};
        let schemas =
            [("claude", &claude::SCHEMA), ("codex", &codex::SCHEMA), ("pi", &pi::SCHEMA), ("dsh", &dsh::SCHEMA)];
        for (name, schema) in schemas {
            for (n, node) in schema.nodes.iter().enumerate() {
                for (i, (k, _)) in node.keys.iter().enumerate() {
                    let slot = schema.tables[n][key_slot(k)];
                    assert_eq!(usize::from(slot), i + 1, "{name} node {n}: {:?}", String::from_utf8_lossy(k));
                }
            }
        }
    }

    #[test]
    fn a_record_of_an_unwanted_type_is_not_walked_past_its_type() {
        assert_eq!(texts(br#"{"a":"x","b":"skip","list":[{"text":"t"}]}"#), ["Str=x", "Str=skip"]);
        assert_eq!(texts(br#"{"a":"x","b":"keep","list":[{"text":"t"}]}"#), ["Str=x", "Str=keep", "Str=t"]);
    }

    #[test]
    fn the_first_of_two_equal_keys_wins() {
        assert_eq!(texts(br#"{"a":"one","a":"two"}"#), ["Str=one"]);
    }

    #[test]
    fn a_leaf_container_is_recorded_whole() {
        assert_eq!(texts(br#"{"a":{"deep":[{"x":"]"}]}}"#), [r#"Obj={"deep":[{"x":"]"}]}"#]);
    }

    #[test]
    fn what_came_before_the_walk_stopped_still_counts() {
        assert_eq!(texts(br#"{"list":[{"text":"b"},]}"#), ["Str=b"]);
        assert_eq!(texts(br#"{"a":"x","b":}"#), ["Str=x"]);
        assert_eq!(texts(br#"{"a":{"open":1"#), ["Obj=unended"]);
        assert!(texts(br#"]]]}}}{{{["""\\""#).is_empty());
        assert!(texts(br#""a",{"a":"x"}"#).is_empty(), "a line that is not an object is no record");
    }

    #[test]
    fn a_string_records_its_rendered_length_and_whether_it_ends_a_line() {
        let line = br#"{"a":"x\n","b":"\u00e9"}"#;
        let w = walk(line);
        let s: Vec<(u32, bool)> = w.entries[1..].iter().map(|e| (e.out, e.nl)).collect();
        assert_eq!(s, [(2, false), (2, true)]);
    }
}
