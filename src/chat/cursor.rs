//! Where the last reads of a few messages stopped, so reading a long
//! message front to back decodes it once: a string's output offset does
//! not map onto its input offset, and starting each read from the
//! message's beginning would make a front-to-back read quadratic.

/// Messages whose last read position an index remembers: one per client
/// reading a long message at once, a few clients at a time.
pub(crate) const CURSORS: usize = 8;

/// A point decoding can start from: in span `span` (an index into the
/// store), file offset `input` renders the message's output from `output`
/// on; the span's own output starts at `span_out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resume {
    pub span: usize,
    pub input: u64,
    pub output: u64,
    pub span_out: u64,
}

/// Where the last reads of a few messages stopped.
pub(crate) struct Cursor {
    slots: [(usize, Resume); CURSORS],
    next: usize,
}

impl Default for Cursor {
    fn default() -> Cursor {
        let none = Resume { span: 0, input: 0, output: 0, span_out: 0 };
        Cursor { slots: [(usize::MAX, none); CURSORS], next: 0 }
    }
}

impl Cursor {
    pub(crate) fn get(&self, id: usize) -> Option<Resume> {
        self.slots.iter().find(|(i, _)| *i == id).map(|&(_, r)| r)
    }

    pub(crate) fn put(&mut self, id: usize, r: Resume) {
        if let Some(slot) = self.slots.iter_mut().find(|(i, _)| *i == id) {
            slot.1 = r;
            return;
        }
        self.slots[self.next] = (id, r);
        self.next = (self.next + 1) % CURSORS;
    }
}
