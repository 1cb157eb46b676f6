//! The chat pool: the indexes of the transcripts whose `chat/` someone
//! reads, at most `--max-chats` of them, the least recently used reused.
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

pub(crate) struct Entry {
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
    used: u64,
}

pub(crate) struct Pool {
    entries: Vec<Entry>,
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
        Pool { entries: Vec::new(), max: max.max(1), max_messages, tick: 0, next_gen: 0 }
    }

    /// The entry of a transcript, made or reused when it has none: an
    /// entry of the same inode born at another time starts over. The fd a
    /// reused entry held is handed back for the ring to close.
    pub(crate) fn entry(
        &mut self,
        dev: u64,
        ino: u64,
        btime: i64,
        format: Format,
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
        let fresh = Entry {
            dev,
            ino,
            btime,
            index: Index::new(format, self.max_messages),
            fd: None,
            gen: self.next_gen,
            refresher: None,
            stuck: false,
            used: self.tick,
        };
        let gen = fresh.gen;
        if self.entries.len() < self.max {
            self.entries.push(fresh);
            return Ok((ChatRef { i: self.entries.len() - 1, gen }, None));
        }
        let (i, _) = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.refresher.is_none())
            .min_by_key(|(_, e)| e.used)
            .ok_or(AllBusy)?;
        let old = std::mem::replace(&mut self.entries[i], fresh);
        Ok((ChatRef { i, gen }, old.fd))
    }

    /// Start an entry's index over (the file is another one now); returns
    /// its new reference.
    pub(crate) fn restart(&mut self, i: usize) -> ChatRef {
        let e = &mut self.entries[i];
        e.index.reset();
        e.stuck = false;
        self.next_gen = self.next_gen.wrapping_add(1);
        e.gen = self.next_gen;
        ChatRef { i, gen: e.gen }
    }

    pub(crate) fn get(&self, r: ChatRef) -> Option<&Entry> {
        self.entries.get(r.i).filter(|e| e.gen == r.gen)
    }

    pub(crate) fn get_mut(&mut self, r: ChatRef) -> Option<&mut Entry> {
        self.entries.get_mut(r.i).filter(|e| e.gen == r.gen)
    }

    /// The entry at `i`, whatever its generation.
    pub(crate) fn at(&mut self, i: usize) -> &mut Entry {
        &mut self.entries[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_entry_is_reused_past_the_cap() {
        let mut c = Pool::new(2, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Claude).unwrap();
        let (b, _) = c.entry(1, 2, 0, Format::Claude).unwrap();
        c.entry(1, 1, 0, Format::Claude).unwrap();
        let (third, _) = c.entry(1, 3, 0, Format::Claude).unwrap();
        assert_eq!(third.i, b.i, "the entry used longest ago goes");
        assert_ne!(third.i, a.i);
        assert!(c.get(b).is_none(), "the reused entry's old reference must not resolve");
    }

    #[test]
    fn an_entry_being_refreshed_is_never_reused_and_all_busy_is_an_error() {
        let mut c = Pool::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Codex).unwrap();
        c.at(a.i).refresher = Some((7, 1));
        assert_eq!(c.entry(1, 2, 0, Format::Codex).err(), Some(AllBusy));
    }

    #[test]
    fn an_inode_born_again_starts_over_with_a_new_generation() {
        let mut c = Pool::new(2, 100);
        let (a, _) = c.entry(1, 1, 100, Format::Claude).unwrap();
        let (again, _) = c.entry(1, 1, 200, Format::Claude).unwrap();
        assert!(c.get(a).is_none(), "the old generation must not resolve");
        assert_eq!(again.i, a.i);
    }

    #[test]
    fn two_readers_of_one_file_share_one_entry() {
        let mut c = Pool::new(4, 100);
        let (a, _) = c.entry(3, 9, 5, Format::Claude).unwrap();
        let (b, _) = c.entry(3, 9, 5, Format::Claude).unwrap();
        assert_eq!(a, b);
    }
}
