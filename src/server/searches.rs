//! The searches open now: one per fid of `/search/<query>` or
//! `/search/query`, each with its query, where it stands in the home and
//! the result lines it found that no read has taken yet.
//!
//! A search runs only inside a read of its fid (`jobs::search`): between
//! reads nothing runs, so a client that stops reading stops its search,
//! and a read flushed keeps what it found for the next read. A clunk (or a
//! hang-up) lets go of it all.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use slab::Slab;

use crate::chat::digest::{FileId, Seen};
use crate::chat::Index;
use crate::ring::Ring;
use crate::search::kept::Kept;
use crate::search::{Hits, Matcher, Query};
use crate::sessions::{SessionKey, Sub};

/// What a search knows of the chat it is in, once its transcript was
/// looked at raw and may hold a match: kept from read to read.
pub(crate) struct AtChat {
    /// The chat: (session, chat) of the search's.
    pub here: (usize, usize),
    /// Where the transcript holds the query's anchor, if it was noted.
    pub hits: Option<Hits>,
    /// The file as it was looked at, and whether it had settled by then:
    /// its positions are kept after its index (`Kept`) only if so.
    pub file: Option<(FileId, Seen, bool)>,
    /// Positions kept by a search before, of the file as it is, read
    /// instead of an index; and the file they are of, open.
    pub own: Option<(Box<Index>, OwnedFd)>,
    /// The pool had no entry of the file when the search first asked for
    /// its index: once searched, the entry is let go of (`Pool::forget`),
    /// so a search leaves the indexes others use as they were.
    pub made: Option<bool>,
}

use super::count::Count;
pub(crate) use super::fids::SearchRef;
use super::ops::Token;

#[derive(Default)]
pub(crate) struct Search {
    gen: u32,
    /// What it looks for; `None` on `/search/query` until a write.
    pub query: Option<Rc<(Query, Matcher)>>,
    /// Why the query written or named does not parse.
    pub error: Option<String>,
    /// Whole lines found and not yet read.
    pub pending: Vec<u8>,
    /// The sessions to search, newest first; `None` until listed.
    pub sessions: Option<Rc<Vec<Rc<SessionKey>>>>,
    /// The session being searched, its chats, the chat and the message.
    pub session: usize,
    pub chats: Option<Rc<Vec<Rc<SessionKey>>>>,
    pub chat: usize,
    pub msg: usize,
    /// Codex's subagents by parent, found with the listing, taken as each
    /// codex session is searched.
    pub children: Option<std::collections::HashMap<Box<[u8]>, Vec<Sub>>>,
    /// The session's working directory (its own chat's), for `cwd:`.
    pub cwd: Vec<u8>,
    /// Results found.
    pub found: usize,
    /// Every session searched, or `max:` reached: its last line is pending
    /// or read.
    pub done: bool,
    /// Where the last read's answer ended and what of its count it left
    /// (a continuation, as `watch::Waits::read_arrived` tells them).
    pub left: Option<(u64, u32)>,
    /// The chat being searched, once it was looked at raw.
    pub at: Option<AtChat>,
}

impl Search {
    /// Start over for `query` (a write on `/search/query`); a query that
    /// did not parse leaves none, and the next read says why.
    pub(crate) fn begin(&mut self, query: Result<Query, String>) {
        let gen = self.gen;
        *self = match query {
            Ok(q) => {
                let matcher = Matcher::new(&q);
                Search { gen, query: Some(Rc::new((q, matcher))), ..Search::default() }
            }
            Err(why) => Search { gen, error: Some(why), ..Search::default() },
        };
    }

    /// The search has moved past its current session.
    pub(crate) fn next_session(&mut self) {
        self.session += 1;
        (self.chats, self.chat, self.msg) = (None, 0, 0);
        self.cwd.clear();
    }

    /// The search has moved past its current chat.
    pub(crate) fn next_chat(&mut self) {
        self.chat += 1;
        self.msg = 0;
    }
}

/// Close a file a search held between reads (`AtChat::own`), through the
/// ring; it is no longer counted among the files held (`files=`).
pub(crate) fn close_held(ring: &mut Ring<Token>, files: &mut Count, fd: OwnedFd) {
    files.give(1);
    ring.submit(Token::Discard, crate::ring::Sub::Close { fd });
}

#[derive(Default)]
pub(crate) struct Searches {
    slab: Slab<Search>,
    next_gen: u32,
    /// Positions kept between searches.
    pub kept: Kept,
}

impl Searches {
    pub(crate) fn add(&mut self, query: Option<Result<Query, String>>) -> SearchRef {
        self.next_gen = self.next_gen.wrapping_add(1);
        let mut s = Search { gen: self.next_gen, ..Search::default() };
        if let Some(q) = query {
            s.begin(q);
        }
        let key = self.slab.insert(s);
        SearchRef { key: u32::try_from(key).expect("searches are bounded by the fid caps"), gen: self.next_gen }
    }

    pub(crate) fn get_mut(&mut self, r: SearchRef) -> Option<&mut Search> {
        self.slab.get_mut(r.key as usize).filter(|s| s.gen == r.gen)
    }

    /// A search goes, and the file it held with it.
    pub(crate) fn remove(&mut self, r: SearchRef, ring: &mut Ring<Token>, files: &mut Count) {
        if self.get_mut(r).is_some() {
            let mut s = self.slab.remove(r.key as usize);
            self.leave(&mut s.at, ring, files);
        }
    }

    /// The search is done with the chat `at` was of: the positions it read
    /// are kept again, and the file they are of is closed.
    pub(crate) fn leave(&mut self, at: &mut Option<AtChat>, ring: &mut Ring<Token>, files: &mut Count) {
        let Some(AtChat { file, own: Some((index, fd)), .. }) = at.take() else { return };
        if let Some((id, seen, _)) = file {
            self.kept.put(id, seen, index);
        }
        close_held(ring, files, fd);
    }

    /// A search and the positions kept, together.
    pub(crate) fn with_kept(&mut self, r: SearchRef) -> Option<(&mut Search, &mut Kept)> {
        let s = self.slab.get_mut(r.key as usize).filter(|s| s.gen == r.gen)?;
        Some((s, &mut self.kept))
    }

    /// Searches open now.
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }
}
