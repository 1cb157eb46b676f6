//! What searches keep between them: the positions of the transcripts they
//! indexed (`Index::kept_copy`: where each message's spans are, its name,
//! never a byte of text), so the next search over an unchanged file reads
//! its raw bytes once and asks no index of it.
//!
//! A copy is keyed as the pool keys an entry — the file's (dev, ino) and
//! its birth time — and holds only while the file is as it was when it was
//! indexed, checked as a digest is (`chat::digest`): the same size, mtime,
//! ctime and format, and indexed `SETTLED_NS` after the file last changed
//! (so any change since stamps a later time). A copy is kept only when its
//! index covered the whole file as it was looked at. Anything else is
//! indexed again, through the pool, as a search always could be.
//!
//! Bounded by `SEARCH_KEPT_BYTES`: past it the copies used longest ago go
//! (a copy lost costs an index, never a wrong answer).

use std::collections::HashMap;

use crate::chat::digest::{FileId, Seen};
use crate::chat::Index;

/// Bytes of positions kept, all copies together: a home's worth of the
/// transcripts a search reads (the generated 1.4 GB home's eleven largest,
/// 20–90 MB each, keep ~14 MB).
pub(crate) const SEARCH_KEPT_BYTES: usize = 16 << 20;

struct Copy {
    seen: Seen,
    index: Box<Index>,
    bytes: usize,
    used: u64,
}

#[derive(Default)]
pub(crate) struct Kept {
    map: HashMap<FileId, Copy>,
    bytes: usize,
    tick: u64,
    cap: Option<usize>,
    /// Copies read instead of an index, since the daemon started.
    reads: u64,
}

impl Kept {
    /// Copies bounded by `cap` bytes rather than `SEARCH_KEPT_BYTES`.
    #[cfg(test)]
    fn with_cap(cap: usize) -> Kept {
        Kept { cap: Some(cap), ..Kept::default() }
    }

    fn cap(&self) -> usize {
        self.cap.unwrap_or(SEARCH_KEPT_BYTES)
    }

    /// The copy of `file` if it was indexed as `seen`, taken out for one
    /// search to read (and `put` back); a copy of the file as it was
    /// before goes.
    pub(crate) fn take(&mut self, file: FileId, seen: Seen) -> Option<Box<Index>> {
        let c = self.map.remove(&file)?;
        self.bytes -= c.bytes;
        let index = (c.seen == seen).then_some(c.index)?;
        self.reads += 1;
        Some(index)
    }

    /// Keep `index`, of `file` as `seen`, making room: the copies used
    /// longest ago go. One larger than the whole cap is not kept.
    pub(crate) fn put(&mut self, file: FileId, seen: Seen, index: Box<Index>) {
        let bytes = index.kept_bytes();
        if let Some(old) = self.map.remove(&file) {
            self.bytes -= old.bytes;
        }
        if bytes > self.cap() {
            return;
        }
        while self.bytes + bytes > self.cap() {
            let Some((&victim, _)) = self.map.iter().min_by_key(|(_, c)| c.used) else { break };
            let gone = self.map.remove(&victim).expect("just found");
            self.bytes -= gone.bytes;
        }
        self.tick += 1;
        self.bytes += bytes;
        self.map.insert(file, Copy { seen, index, bytes, used: self.tick });
    }

    /// Bytes kept now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Copies read instead of an index, since the daemon started.
    pub(crate) fn reads(&self) -> u64 {
        self.reads
    }

    /// Copies kept now.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Format;

    fn indexed(lines: usize) -> Box<Index> {
        let mut ix = Index::new(Format::Claude, 1 << 20);
        let mut file = Vec::new();
        for i in 0..lines {
            file.extend_from_slice(
                format!("{{\"type\":\"user\",\"message\":{{\"content\":\"hi {i}\"}}}}\n").as_bytes(),
            );
        }
        ix.feed(0, &file);
        Box::new(ix.kept_copy())
    }

    fn seen(size: u64) -> Seen {
        Seen { size, mtime_ns: 1, ctime_ns: 2, format: Format::Claude }
    }

    #[test]
    fn a_copy_is_had_only_for_the_file_as_it_was_indexed() {
        let mut k = Kept::default();
        k.put((1, 2, 3), seen(100), indexed(3));
        assert_eq!(k.len(), 1);
        assert!(k.take((1, 2, 4), seen(100)).is_none(), "another birth is another file");
        let ix = k.take((1, 2, 3), seen(100)).expect("as it was");
        assert_eq!(ix.len(), 3);
        let mut name = Vec::new();
        assert!(ix.name(2, &mut name));
        assert_eq!(name, b"00000002-user");
        k.put((1, 2, 3), seen(100), ix);
        assert!(k.take((1, 2, 3), seen(101)).is_none(), "it grew: indexed anew");
        assert_eq!((k.len(), k.bytes()), (0, 0), "and the stale copy went");
    }

    #[test]
    fn past_the_cap_the_copies_used_longest_ago_go() {
        let one = indexed(10).kept_bytes();
        let mut k = Kept::with_cap(one * 2 + one / 2);
        k.put((1, 1, 0), seen(1), indexed(10));
        k.put((1, 2, 0), seen(1), indexed(10));
        let again = k.take((1, 1, 0), seen(1)).expect("kept");
        k.put((1, 1, 0), seen(1), again);
        k.put((1, 3, 0), seen(1), indexed(10));
        assert_eq!(k.len(), 2);
        assert!(k.bytes() <= one * 2 + one / 2);
        assert!(k.take((1, 2, 0), seen(1)).is_none(), "the one used longest ago went");
        assert!(k.take((1, 1, 0), seen(1)).is_some());
        k.put((9, 9, 9), seen(1), indexed(2000));
        assert_eq!(k.take((9, 9, 9), seen(1)).map(|_| ()), None, "larger than the cap: not kept");
    }
}
