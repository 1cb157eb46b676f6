//! The chat pool: the indexes of the transcripts whose `chat/` someone
//! reads, at most `--max-chats` of them, the least recently used reused.
//!
//! An entry is keyed by the transcript's identity — (dev, ino) and its
//! birth time — and holds the index (`chat::Index`: positions, never
//! bytes) and the fd the transcript was last opened with, so reads of its
//! messages read the file the index was built from. An entry's generation
//! moves whenever its index starts over (the file shrank, was reborn, or
//! was rewritten in place), so an open message fid, which remembers the
//! generation, never reads spans of another file's index.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::chat::{Format, Index};

/// The default for `--max-chats`: transcripts indexed at once (the seed's
/// eight), the least recently used reused past it.
pub const MAX_CHATS_DEFAULT: usize = 8;

pub struct Entry {
    pub dev: u64,
    pub ino: u64,
    pub btime: i64,
    pub index: Index,
    pub fd: Option<Rc<OwnedFd>>,
    /// Moves on every start over; an open message remembers it.
    pub gen: u32,
    /// An indexing slice or a check is in flight: not to be reused.
    pub busy: bool,
    /// A record longer than the daemon reads in one window stopped the
    /// index: the listing answers an error rather than stop short.
    pub stuck: bool,
    used: u64,
}

pub struct Chats {
    entries: Vec<Entry>,
    max: usize,
    max_messages: usize,
    tick: u64,
    next_gen: u32,
}

/// Why no entry could be had.
#[derive(Debug, PartialEq, Eq)]
pub struct AllBusy;

impl Chats {
    pub fn new(max: usize, max_messages: usize) -> Chats {
        Chats { entries: Vec::new(), max: max.max(1), max_messages, tick: 0, next_gen: 0 }
    }

    /// The entry of a transcript, made or reused when it has none: an
    /// entry of the same inode born at another time starts over. The fd it
    /// held, if it is replaced, is handed back for the ring to close.
    pub fn entry(
        &mut self,
        dev: u64,
        ino: u64,
        btime: i64,
        format: Format,
    ) -> Result<(usize, Option<Rc<OwnedFd>>), AllBusy> {
        self.tick += 1;
        if let Some(i) = self.entries.iter().position(|e| e.dev == dev && e.ino == ino) {
            let tick = self.tick;
            let e = &mut self.entries[i];
            e.used = tick;
            if e.btime != btime || e.index.format() != format {
                e.btime = btime;
                e.index = Index::new(format, self.max_messages);
                self.next_gen = self.next_gen.wrapping_add(1);
                e.gen = self.next_gen;
            }
            return Ok((i, None));
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let fresh = Entry {
            dev,
            ino,
            btime,
            index: Index::new(format, self.max_messages),
            fd: None,
            gen: self.next_gen,
            busy: false,
            stuck: false,
            used: self.tick,
        };
        if self.entries.len() < self.max {
            self.entries.push(fresh);
            return Ok((self.entries.len() - 1, None));
        }
        let (i, _) =
            self.entries.iter().enumerate().filter(|(_, e)| !e.busy).min_by_key(|(_, e)| e.used).ok_or(AllBusy)?;
        let old = std::mem::replace(&mut self.entries[i], fresh);
        Ok((i, old.fd))
    }

    /// Start an entry's index over: the file is another one now.
    pub fn restart(&mut self, i: usize) {
        let e = &mut self.entries[i];
        e.index.reset();
        e.stuck = false;
        self.next_gen = self.next_gen.wrapping_add(1);
        e.gen = self.next_gen;
    }

    pub fn get(&self, i: usize, gen: u32) -> Option<&Entry> {
        self.entries.get(i).filter(|e| e.gen == gen)
    }

    pub fn get_mut(&mut self, i: usize, gen: u32) -> Option<&mut Entry> {
        self.entries.get_mut(i).filter(|e| e.gen == gen)
    }

    pub fn at(&mut self, i: usize) -> &mut Entry {
        &mut self.entries[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_entry_is_reused_past_the_cap() {
        let mut c = Chats::new(2, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Claude).unwrap();
        let (b, _) = c.entry(1, 2, 0, Format::Claude).unwrap();
        c.entry(1, 1, 0, Format::Claude).unwrap();
        let (third, _) = c.entry(1, 3, 0, Format::Claude).unwrap();
        assert_eq!(third, b, "the entry used longest ago goes");
        assert_ne!(third, a);
    }

    #[test]
    fn a_busy_entry_is_never_reused_and_all_busy_is_an_error() {
        let mut c = Chats::new(1, 100);
        let (a, _) = c.entry(1, 1, 0, Format::Codex).unwrap();
        c.at(a).busy = true;
        assert_eq!(c.entry(1, 2, 0, Format::Codex).err(), Some(AllBusy));
    }

    #[test]
    fn an_inode_born_again_starts_over_with_a_new_generation() {
        let mut c = Chats::new(2, 100);
        let (a, _) = c.entry(1, 1, 100, Format::Claude).unwrap();
        let gen = c.at(a).gen;
        c.entry(1, 1, 200, Format::Claude).unwrap();
        assert!(c.get(a, gen).is_none(), "the old generation must not resolve");
    }
}
