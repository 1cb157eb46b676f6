//! The chat pool: the indexes of the transcripts whose `chat/` someone
//! reads, at most `--max-chats` of them, the least recently used reused.
//! An agent watched for a `wait` reader pins its transcript's entry: a
//! pinned entry is never reused and counts apart from the cap (the watches'
//! own cap, `--max-watches`, bounds them), so a change of a watched agent
//! indexes only what its transcript grew by, however many agents are
//! watched.
//!
//! An entry is keyed by the transcript file — its (dev, ino), and its birth
//! time to tell a reused inode apart — never by the agent that reads it: two
//! agents whose sessions resolve to one transcript share one index, and one
//! refresh of it at a time (`refresher`). It holds the index (positions,
//! never bytes) and the fd the transcript was last opened with, so reads of
//! its messages read the file the index was built from. An entry's
//! generation moves whenever its index starts over (the file shrank, was
//! reborn, or was rewritten in place), so a `ChatRef` kept by an open
//! message fid never reads spans of another file's index.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use super::digest::{Digest, Digests, PathKey, Seen};
use super::{Format, Index};

/// The default for `--max-chats`: transcripts indexed at once (the seed's
/// eight), the least recently used reused past it.
pub const MAX_CHATS_DEFAULT: usize = 8;

/// An entry as it was when someone looked: its place and generation. It
/// resolves only while the entry has not started over or been reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ChatRef {
    pub i: usize,
    pub gen: u32,
}

pub(crate) struct ChatEntry {
    pub dev: u64,
    pub ino: u64,
    pub btime: i64,
    pub index: Index,
    pub fd: Option<Rc<OwnedFd>>,
    /// Moves on every start over.
    pub gen: u32,
    /// The refresh running on this entry (a parked record's key and
    /// generation): one at a time, and an entry being refreshed is never
    /// reused.
    pub refresher: Option<(usize, u32)>,
    /// A record longer than the daemon reads in one window stopped the
    /// index: the listing answers an error rather than stop short.
    pub stuck: bool,
    /// A compressed transcript's decoded copy, which `fd` is then the
    /// file of (`server::jobs::inflate`).
    pub inflated: Option<Inflated>,
    /// What of its index's drift `/health` was told of (`crate::health`).
    pub reported: super::drift::Drift,
    /// Watches that pin it (`Pool::pin`).
    pins: u32,
    used: u64,
}

/// What a compressed transcript's decoded copy holds of it.
pub(crate) struct Inflated {
    /// The compressed file as it was when last decoded: its size and its
    /// mtime (ns): a change other than growth decodes it again whole.
    pub source: (u64, i128),
    /// Where its last whole frame ended, in the compressed file and in the
    /// copy: a file that grew is decoded on from there.
    pub frame_end: (u64, u64),
    /// Bytes of the copy: what was decoded, a frame still being written
    /// included.
    pub len: u64,
    /// The copy, mapped for reading (its head and tail are what the
    /// derivations of its session's fields read).
    pub map: Option<memmap2::Mmap>,
}

pub(crate) struct Pool {
    entries: Vec<ChatEntry>,
    /// What each index said, kept past its entry (`digest`).
    pub digests: Digests,
    max: usize,
    max_messages: usize,
    tick: u64,
    next_gen: u32,
}

/// Why no entry could be had: every one is being refreshed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AllBusy;

impl Pool {
    pub(crate) fn new(max: usize, max_messages: usize) -> Pool {
        Pool { entries: Vec::new(), digests: Digests::default(), max: max.max(1), max_messages, tick: 0, next_gen: 0 }
    }

    /// The entry of a transcript, made or reused when it has none: an
    /// entry of the same inode born at another time starts over. The fd a
    /// reused entry held is handed back for the ring to close. A `watched`
    /// transcript's entry (a `wait` reader's, to be pinned once indexed)
    /// is made past the cap rather than fail when every entry is busy.
    pub(crate) fn entry(
        &mut self,
        dev: u64,
        ino: u64,
        btime: i64,
        format: Format,
        watched: bool,
    ) -> Result<(ChatRef, Option<Rc<OwnedFd>>), AllBusy> {
        self.tick += 1;
        if let Some(i) = self.entries.iter().position(|e| e.dev == dev && e.ino == ino) {
            self.entries[i].used = self.tick;
            if self.entries[i].btime != btime || self.entries[i].index.format() != format {
                self.entries[i].btime = btime;
                self.entries[i].index = Index::new(format, self.max_messages);
                self.restart(i);
            }
            return Ok((ChatRef { i, gen: self.entries[i].gen }, None));
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let fresh = ChatEntry {
            dev,
            ino,
            btime,
            index: Index::new(format, self.max_messages),
            fd: None,
            gen: self.next_gen,
            refresher: None,
            stuck: false,
            inflated: None,
            reported: Default::default(),
            pins: 0,
            used: self.tick,
        };
        let gen = fresh.gen;
        let pinned = self.entries.iter().filter(|e| e.pins > 0).count();
        let idle = self.entries.iter().enumerate().filter(|(_, e)| e.refresher.is_none() && e.pins == 0);
        let victim = idle.min_by_key(|(_, e)| e.used).map(|(i, _)| i);
        match victim {
            _ if self.entries.len() < self.max + pinned => {}
            Some(i) => {
                let old = std::mem::replace(&mut self.entries[i], fresh);
                return Ok((ChatRef { i, gen }, old.fd));
            }
            None if watched => {}
            None => return Err(AllBusy),
        }
        self.entries.push(fresh);
        Ok((ChatRef { i: self.entries.len() - 1, gen }, None))
    }

    /// Drop the entries past the cap that nobody pins or refreshes, from the
    /// end (references to them stop resolving); the fds they held, for the
    /// ring to close. After a burst of watched agents has gone, their
    /// indexes go too.
    pub(crate) fn shrink(&mut self) -> Vec<Rc<OwnedFd>> {
        let mut fds = Vec::new();
        while self.entries.len() > self.max {
            let e = self.entries.last().expect("longer than the cap");
            if e.pins > 0 || e.refresher.is_some() {
                break;
            }
            fds.extend(self.entries.pop().and_then(|e| e.fd));
        }
        self.entries.shrink_to_fit();
        fds
    }

    /// Whether some entry is of the file (`dev`, `ino`).
    pub(crate) fn has(&self, dev: u64, ino: u64) -> bool {
        self.entries.iter().any(|e| e.dev == dev && e.ino == ino)
    }

    /// Let go of entry `r`'s index now rather than when the cap reuses it
    /// (a search's, which nobody else asked for): it is emptied, of no
    /// file, and the first to be reused; references to it stop resolving.
    /// Not one pinned or being refreshed. The fd it held, for the ring to
    /// close.
    pub(crate) fn forget(&mut self, r: ChatRef) -> Option<Rc<OwnedFd>> {
        let e = self.entries.get_mut(r.i).filter(|e| e.gen == r.gen && e.pins == 0 && e.refresher.is_none())?;
        (e.dev, e.ino, e.btime, e.used) = (0, 0, 0, 0);
        e.inflated = None;
        let fd = e.fd.take();
        self.restart(r.i);
        fd
    }

    /// A watch pins entry `i`: never reused until every pin is gone.
    pub(crate) fn pin(&mut self, i: usize) {
        self.entries[i].pins += 1;
    }

    pub(crate) fn unpin(&mut self, i: usize) {
        let e = &mut self.entries[i];
        e.pins = e.pins.checked_sub(1).expect("an unpin matches a pin");
    }

    /// Start an entry's index over (the file is another one now); returns
    /// its new reference.
    pub(crate) fn restart(&mut self, i: usize) -> ChatRef {
        let e = &mut self.entries[i];
        e.index.reset();
        e.stuck = false;
        e.reported = Default::default();
        self.next_gen = self.next_gen.wrapping_add(1);
        e.gen = self.next_gen;
        ChatRef { i, gen: e.gen }
    }

    pub(crate) fn get(&self, r: ChatRef) -> Option<&ChatEntry> {
        self.entries.get(r.i).filter(|e| e.gen == r.gen)
    }

    pub(crate) fn get_mut(&mut self, r: ChatRef) -> Option<&mut ChatEntry> {
        self.entries.get_mut(r.i).filter(|e| e.gen == r.gen)
    }

    /// Bytes of decoded copies held, all entries together
    /// (`--max-inflated`).
    pub(crate) fn inflated_bytes(&self) -> u64 {
        self.entries.iter().filter_map(|e| e.inflated.as_ref()).map(|c| c.len).sum()
    }

    /// The decoded copy of the compressed transcript at (`dev`, `ino`,
    /// `btime`) as it is now (`size` and `mtime` unchanged since it was
    /// decoded), if an entry holds one.
    pub(crate) fn inflated(&self, dev: u64, ino: u64, btime: i64, size: u64, mtime: i128) -> Option<&Inflated> {
        let e = self.entries.iter().find(|e| e.dev == dev && e.ino == ino && e.btime == btime)?;
        e.inflated.as_ref().filter(|c| c.source == (size, mtime))
    }

    /// Keep what entry `i`'s index says of its file at `path`, indexed as
    /// `seen` (`settled`: `Digest::settled`).
    pub(crate) fn remember(&mut self, i: usize, path: PathKey, seen: Seen, settled: bool) {
        let e = &self.entries[i];
        let usage = std::rc::Rc::new(e.index.usage().clone());
        let (messages, covered) = (e.index.len(), e.index.covered());
        let cwd = e.index.cwd().into();
        let digest = Digest { seen, usage, messages, covered, ends: e.index.ends(), settled, cwd };
        self.digests.put(path, (e.dev, e.ino, e.btime), digest);
    }

    /// The entry at `i`, whatever its generation.
    pub(crate) fn at(&mut self, i: usize) -> &mut ChatEntry {
        &mut self.entries[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_entry_is_reused_past_the_cap() {
        let mut c = Pool::new(2, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Claude, false).unwrap();
        let (b, _) = c.entry(1, 2, 0, Format::Claude, false).unwrap();
        c.entry(1, 1, 0, Format::Claude, false).unwrap();
        let (third, _) = c.entry(1, 3, 0, Format::Claude, false).unwrap();
        assert_eq!(third.i, b.i, "the entry used longest ago goes");
        assert_ne!(third.i, a.i);
        assert!(c.get(b).is_none(), "the reused entry's old reference must not resolve");
    }

    #[test]
    fn an_entry_being_refreshed_is_never_reused_and_all_busy_is_an_error() {
        let mut c = Pool::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Codex, false).unwrap();
        c.at(a.i).refresher = Some((7, 1));
        assert_eq!(c.entry(1, 2, 0, Format::Codex, false).err(), Some(AllBusy));
    }

    #[test]
    fn a_watched_transcript_gets_an_entry_past_the_cap_when_all_are_busy() {
        let mut c = Pool::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Codex, false).unwrap();
        c.at(a.i).refresher = Some((7, 1));
        let (b, _) = c.entry(1, 2, 0, Format::Codex, true).unwrap();
        assert_ne!(a.i, b.i);
        assert!(c.get(a).is_some() && c.get(b).is_some());
    }

    #[test]
    fn a_pinned_entry_is_never_reused_and_counts_apart_from_the_cap() {
        let mut c = Pool::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Claude, false).unwrap();
        c.pin(a.i);
        let (b, _) = c.entry(1, 2, 0, Format::Claude, false).unwrap();
        assert_ne!(b.i, a.i, "a pinned entry is not the one reused");
        let (third, _) = c.entry(1, 3, 0, Format::Claude, false).unwrap();
        assert_eq!(third.i, b.i, "past the cap the unpinned entry is reused");
        assert!(c.get(a).is_some(), "the pinned index is still there");
        c.unpin(a.i);
        c.entry(1, 3, 0, Format::Claude, false).unwrap();
        let (fourth, _) = c.entry(1, 4, 0, Format::Claude, false).unwrap();
        assert_eq!(fourth.i, a.i, "unpinned, it is the least recently used again");
    }

    #[test]
    fn a_shrink_drops_the_idle_entries_past_the_cap_from_the_end() {
        let mut c = Pool::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Codex, false).unwrap();
        c.at(a.i).refresher = Some((7, 1));
        let (b, _) = c.entry(1, 2, 0, Format::Codex, true).unwrap();
        c.pin(b.i);
        let (d, _) = c.entry(1, 3, 0, Format::Codex, true).unwrap();
        c.shrink();
        assert!(c.get(d).is_none(), "the idle one past the cap went");
        assert!(c.get(a).is_some() && c.get(b).is_some(), "the busy and the pinned stay");
        c.unpin(b.i);
        c.shrink();
        assert!(c.get(b).is_none());
        assert!(c.get(a).is_some(), "within the cap an entry stays");
    }

    #[test]
    fn an_inode_born_again_starts_over_with_a_new_generation() {
        let mut c = Pool::new(2, 100);
        let (a, _) = c.entry(1, 1, 100, Format::Claude, false).unwrap();
        let (again, _) = c.entry(1, 1, 200, Format::Claude, false).unwrap();
        assert!(c.get(a).is_none(), "the old generation must not resolve");
        assert_eq!(again.i, a.i);
    }

    #[test]
    fn a_forgotten_entry_holds_nothing_and_is_reused_first() {
        let mut c = Pool::new(2, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Claude, false).unwrap();
        c.at(a.i).index.feed(0, b"{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n");
        let (b, _) = c.entry(1, 2, 0, Format::Claude, false).unwrap();
        c.pin(b.i);
        assert!(c.forget(b).is_none() && c.get(b).is_some(), "a pinned entry stays");
        c.entry(1, 1, 0, Format::Claude, false).unwrap();
        assert!(c.has(1, 1));
        c.forget(a);
        assert!(c.get(a).is_none() && !c.has(1, 1), "its references stop resolving; it is of no file");
        c.unpin(b.i);
        let (again, _) = c.entry(1, 1, 0, Format::Claude, false).unwrap();
        assert_eq!(again.i, a.i, "the emptied entry is the one reused");
        assert_eq!(c.get(again).map(|e| e.index.covered()), Some(0), "and indexes anew");
    }

    #[test]
    fn two_readers_of_one_file_share_one_entry() {
        let mut c = Pool::new(4, 100);
        let (a, _) = c.entry(3, 9, 5, Format::Claude, false).unwrap();
        let (b, _) = c.entry(3, 9, 5, Format::Claude, false).unwrap();
        assert_eq!(a, b);
    }
}
