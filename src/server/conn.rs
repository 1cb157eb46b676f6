//! One client connection: its bytes in, its replies out, its fids.
//!
//! A connection owns two buffers that take turns with the ring. `rbuf`
//! holds received bytes until they make whole messages; while a recv is in
//! flight the ring holds it (`rbuf` is then empty and `recv_armed` set).
//! Replies are encoded straight into `outq`; a read's reply, already whole
//! in the buffer its pread filled, is queued as a chunk of its own
//! (`chunks`) rather than copied. When no send is in flight the oldest
//! chunk (or `outq`) is handed to the ring as a send, so a reply is never
//! copied and a partial send just continues.
//!
//! Back-pressure is the rule that keeps a slow client from costing anyone
//! else: a connection stops decoding requests — and so stops being read —
//! while the bytes it holds reach its budget (`budget`: a small multiple
//! of its msize) or its parked requests reach `REQS_PARKED_MAX`. The bytes
//! it holds are every reply waiting to be sent, the buffer of the send in
//! flight, and the buffers of its reads still in flight, flushed or not
//! (`charged`): a client that pipelines reads and never reads a reply
//! holds at most one budget and one message more, whatever it sends.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::meta::Meta;
use crate::proto::{self, Dialect, Rmsg};
use crate::tree::{Entry, Loc, NodeId};

use super::keymap::{key_map, KeyMap};

/// Bytes a recv buffer starts with. Most requests are tens of bytes; a
/// Twrite can reach msize, and the buffer grows to one message when a
/// header says so, then shrinks back once idle.
pub(crate) const RBUF_BYTES_MIN: usize = 8 * 1024;
/// A buffer grown past this is released once it is empty, so one large
/// read does not pin a megabyte per idle connection.
pub(crate) const BUF_KEEP_BYTES_MAX: usize = 64 * 1024;
/// The iounit of a file smaller than this when opened: a read of all of it
/// fits a 64 KiB Rread (the count, and the header's 11 bytes). Linux sizes
/// the buffer each Tread's reply is received into by the iounit, up to the
/// msize less a header: at its default 128 KiB msize that was a 128 KiB
/// buffer, zeroed on allocation, for each of the four reads `cat` makes of
/// a 100-byte file, where 64 KiB holds any of them (bench/README, "Where a
/// `cat` goes"). A larger file gets the msize's: a read of 128 KiB of it is
/// one round trip.
pub(crate) const SMALL_FILE_IOUNIT: u32 = 64 * 1024 - proto::RREAD_HEADER_BYTES as u32;
/// Requests parked (waiting on I/O or an event) per connection; past it the
/// connection stops being read until one is answered.
pub(crate) const REQS_PARKED_MAX: usize = 64;
/// A connection's byte budget is this many msizes: one read of a whole
/// msize in flight (a page-cache read of a megabyte is back in well under a
/// millisecond, so one at a time still reads at memory speed), and a
/// never-reading client holds at most two msizes (the budget, and the one
/// request that may overshoot it).
pub(crate) const BUDGET_MSIZES: usize = 1;
/// ... and at least this, so a connection with a small msize may still
/// have several reads in flight (a kernel mount's default msize is 128 KiB,
/// and its read-ahead sends several).
pub(crate) const BUDGET_BYTES_MIN: usize = 1 << 20;
const _: () = assert!(SMALL_FILE_IOUNIT > proto::IOHDRSZ, "a small file's iounit holds data");

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Only a Tversion is acceptable; anything else closes the connection.
    AwaitVersion,
    /// Versioned: `dialect` and `msize` hold.
    Ready,
    /// Hung up or broken: waiting for its operations to come back.
    Closing,
}

/// How long the look a walk ended with stands for the next look at the
/// same file on its connection: the Tgetattr Linux's lookup sends right
/// after the Twalk (once), and the look before a Topen or Tlopen opens the
/// file (which statx-es what it opened again). Linux sends both within a
/// round trip of the walk, well under this on a one-vCPU TCG guest; a
/// client that waits longer gets a fresh look. Within it, an Rgetattr may
/// say what the file was up to this long ago — what a reply delayed this
/// long on the wire would say — and never twice for one walk, so the
/// second Tgetattr of a `stat(2)` always looks afresh.
pub(crate) const LOOK_REUSE_FOR: std::time::Duration = std::time::Duration::from_millis(10);

/// The look a walk on this connection last ended with, and when: see
/// `LOOK_REUSE_FOR`. One a connection, boxed only while there is one.
#[derive(Debug)]
pub(crate) struct Look {
    pub node: NodeId,
    pub meta: Meta,
    pub at: super::fresh::Seen,
    /// A Tgetattr has answered from it: the next one looks again.
    pub statted: bool,
}

impl Look {
    /// Does it stand for a look at `node` now?
    pub(crate) fn fresh_for(&self, node: NodeId) -> bool {
        self.node == node && self.at.stands(LOOK_REUSE_FOR)
    }
}

/// How long a directory's listing answers the walks into it on its
/// connection: a Twalk of one name from the listed directory is answered
/// from the listing's entry (there, and its qid), and the lookup's Tgetattr
/// that follows from the statx the listing made (through `Look`). `ls -l`
/// and `find` walk every entry of a directory right after reading it (the
/// kernel reads the whole listing, then userspace lstat-s each name while
/// the directory is still open): 50 entries take about 150 ms in the diod
/// bench's one-vCPU TCG guest, so a second covers a directory of a few
/// hundred there and thousands on real hardware. Within it a walk may find
/// a name removed since the listing, and the lookup's Rgetattr may say what
/// the file was at the listing; the Tgetattr of a `stat(2)` after it always
/// looks afresh (`Look::statted`), as every open checks what it opened, so
/// what a user sees is fresh and a file that became a symlink or gained a
/// hard link is refused there. A name the listing left out (excluded, a
/// symlink, hard-linked, or new since) is looked at as always.
/// It is `--listing-window`'s default (ms).
pub const LISTING_REUSE_FOR_MS: u64 = 1_000;

/// The last disk directory listed on a connection, for `LISTING_REUSE_FOR_MS`:
/// its snapshot (shared with the fid that opened it, counted once against
/// `--max-listed-entries` while either holds it) and each entry's statx.
#[derive(Debug)]
pub(crate) struct Listed {
    pub dir: NodeId,
    pub at: super::fresh::Seen,
    /// Sorted by name, as every snapshot is.
    pub entries: Rc<Vec<Entry>>,
    /// `metas[i]` is what the listing's statx of `entries[i]` saw.
    pub metas: Vec<Meta>,
    /// The directory, open, while `open_fid` (the fid that listed it) is
    /// (counted in `OPEN_FILES_MAX`): the stat of a name walked from the
    /// listing is a statx of that one name beneath it (`dispatch::stat`).
    pub dir_fd: Option<Rc<OwnedFd>>,
    pub open_fid: u32,
}

impl Listed {
    /// Is it within `window` (`--listing-window`) of being made?
    pub(crate) fn fresh(&self, window: std::time::Duration) -> bool {
        self.at.stands(window)
    }

    /// The entry `name` of directory `dir`, if this is its listing.
    pub(crate) fn find(&self, dir: NodeId, name: &[u8]) -> Option<(&Entry, &Meta)> {
        if self.dir != dir {
            return None;
        }
        let i = self.entries.binary_search_by(|e| (*e.name).cmp(name)).ok()?;
        Some((&self.entries[i], self.metas.get(i)?))
    }
}

/// Directories a connection's walks looked at lately, kept for
/// `--listing-window` (`DirLook`): a path's depth of them (`/claude`,
/// `projects`, a project, a directory below it), the oldest replaced first.
pub(crate) const DIR_LOOKS_KEPT: usize = 8;

/// A directory a walk on this connection looked at, and when. `stat PATH`
/// through a kernel mount walks every name of the path from the root, one
/// Twalk and Tgetattr a name (with cache=none nothing of a path outlives
/// its syscall), so `find -exec stat` looks at the same few directories
/// once for each file below them; within the window a walk of one name to
/// one of them is answered from this look, and so is its lookup's Tgetattr.
/// The trade is `LISTING_REUSE_FOR_MS`'s: the walk may find a directory
/// removed since; the file at the end of the path is still looked at by
/// the stat's Tgetattr and by any open, through the whole path beneath its
/// base, so a directory that became a symlink meanwhile still refuses it.
/// A look made from this one does not renew it.
#[derive(Debug)]
pub(crate) struct DirLook {
    pub loc: Loc,
    pub meta: Meta,
    pub at: super::fresh::Seen,
}

/// A reply encoded in place in the queue (`Conn::begin_in_place`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InPlace {
    /// An Rread of a file's bytes.
    Read,
    /// An Rread of a 9P2000 directory's stat entries.
    ReadDir9p,
    /// A 9P2000.L Rreaddir.
    Readdir,
}

impl InPlace {
    fn traced(self) -> &'static str {
        match self {
            InPlace::Read => "Rread",
            InPlace::ReadDir9p => "Rread (directory)",
            InPlace::Readdir => "Rreaddir",
        }
    }
}

pub(crate) struct Conn {
    pub fd: Option<OwnedFd>,
    pub gen: u32,
    pub phase: Phase,
    pub dialect: Dialect,
    pub msize: u32,
    pub rbuf: Vec<u8>,
    /// Bytes of `rbuf` received and not yet consumed start at `rstart`
    /// and end at `rlen`.
    pub rstart: usize,
    pub rlen: usize,
    pub recv_armed: bool,
    pub outq: Vec<u8>,
    /// Whole replies waiting to be sent before what `outq` holds now, in
    /// order, and their bytes.
    pub chunks: std::collections::VecDeque<Vec<u8>>,
    pub chunk_bytes: usize,
    pub spare: Vec<u8>,
    pub sending: bool,
    /// The bytes of the buffer in flight, and those of it already sent (a
    /// partial send resumes there).
    pub send_len: usize,
    pub send_off: usize,
    /// Bytes its parked records hold (read buffers), until each is reaped.
    pub charged: usize,
    pub fids: super::fids::Fids,
    /// Parked requests by tag, each naming its record in the server's slab.
    pub parked: KeyMap<u16, usize>,
    /// Of those, reads of `wait` files (not held to `REQS_PARKED_MAX`).
    pub waits_parked: super::count::Count,
    /// Serve exactly this one connection and exit when it closes (`--fd`).
    pub only_one: bool,
    pub id: u64,
    /// When it was accepted: a Tversion is due within `--version-deadline`.
    pub accepted: std::time::Instant,
    /// The look its last walk ended with (`LOOK_REUSE_FOR`).
    pub look: Option<Box<Look>>,
    /// The last disk directory it listed (`LISTING_REUSE_FOR_MS`).
    pub listed: Option<Box<Listed>>,
    /// Directories its walks looked at lately (`DirLook`).
    pub dir_looks: Vec<DirLook>,
    /// Its requests not yet answered (checked in a debug build).
    pub asked: super::asked::Asked,
}

impl Conn {
    pub(crate) fn new(fd: OwnedFd, gen: u32, id: u64, msize: u32) -> Self {
        Conn {
            fd: Some(fd),
            gen,
            phase: Phase::AwaitVersion,
            dialect: Dialect::P2000,
            msize,
            rbuf: vec![0; RBUF_BYTES_MIN],
            rstart: 0,
            rlen: 0,
            recv_armed: false,
            outq: Vec::new(),
            chunks: Default::default(),
            chunk_bytes: 0,
            spare: Vec::new(),
            sending: false,
            send_len: 0,
            send_off: 0,
            charged: 0,
            fids: Default::default(),
            parked: key_map(),
            waits_parked: Default::default(),
            only_one: false,
            id,
            accepted: std::time::Instant::now(),
            asked: Default::default(),
            look: None,
            listed: None,
            dir_looks: Vec::new(),
        }
    }

    /// What a walk looked at lately in directory `loc`, within `window`.
    pub(crate) fn dir_look(&self, loc: &Loc, window: std::time::Duration) -> Option<&Meta> {
        self.dir_looks.iter().find(|d| d.loc == *loc && d.at.stands(window)).map(|d| &d.meta)
    }

    /// Keep a look at directory `loc` made `at`, unless one still fresh is
    /// kept (a look answered from it must not renew it).
    pub(crate) fn keep_dir_look(&mut self, loc: &Loc, meta: Meta, at: super::fresh::Seen, window: std::time::Duration) {
        match self.dir_looks.iter().position(|d| d.loc == *loc) {
            Some(i) if self.dir_looks[i].at.stands(window) => {}
            Some(i) => self.dir_looks[i] = DirLook { loc: loc.clone(), meta, at },
            None => {
                if self.dir_looks.len() >= DIR_LOOKS_KEPT {
                    self.dir_looks.remove(0);
                }
                self.dir_looks.push(DirLook { loc: loc.clone(), meta, at });
            }
        }
    }

    /// The bytes this connection may hold in replies and read buffers.
    pub(crate) fn budget(&self) -> usize {
        (self.msize as usize * BUDGET_MSIZES).max(BUDGET_BYTES_MIN)
    }

    /// The bytes it holds now: replies queued, the send in flight, and its
    /// parked reads' buffers.
    pub(crate) fn held_bytes(&self) -> usize {
        self.outq.len() + self.chunk_bytes + self.send_len + self.charged
    }

    /// Queue a whole reply of its own, after everything queued before it.
    pub(crate) fn push_chunk(&mut self, reply: Vec<u8>) {
        if !self.outq.is_empty() {
            let small = std::mem::replace(&mut self.outq, std::mem::take(&mut self.spare));
            self.chunk_bytes += small.len();
            self.chunks.push_back(small);
        }
        self.chunk_bytes += reply.len();
        self.chunks.push_back(reply);
    }

    /// Is anything waiting to be sent?
    pub(crate) fn has_unsent(&self) -> bool {
        !self.chunks.is_empty() || !self.outq.is_empty()
    }

    /// The next buffer to send, oldest first.
    pub(crate) fn next_send(&mut self) -> Option<Vec<u8>> {
        if let Some(c) = self.chunks.pop_front() {
            self.chunk_bytes -= c.len();
            return Some(c);
        }
        (!self.outq.is_empty()).then(|| std::mem::replace(&mut self.outq, std::mem::take(&mut self.spare)))
    }

    /// May the next request be decoded now? Not while the bytes it holds
    /// reach its budget or too many requests are parked.
    pub(crate) fn can_take_request(&self) -> bool {
        self.phase != Phase::Closing
            && self.held_bytes() < self.budget()
            && self.parked.len().saturating_sub(self.waits_parked.get()) < REQS_PARKED_MAX
    }

    /// Fids it holds and will hold once its walks in flight land.
    pub(crate) fn fids_counted(&self) -> usize {
        self.fids.counted()
    }

    /// Append a reply to the queue, tracing it when asked. This and the
    /// Rread and Rreaddir below are the one place a request is answered
    /// (`Asked`), whether it was answered at once or parked first.
    pub(crate) fn reply(&mut self, tag: u16, msg: &Rmsg<'_>, trace: bool) {
        self.asked.answered(tag);
        if trace {
            eprintln!("-{}-> {}", self.id, proto::trace_r(tag, msg));
        }
        proto::encode_r(&mut self.outq, tag, msg, self.dialect);
    }

    /// Begin an Rread (or, `dir`, an Rreaddir) to `tag` encoded in place:
    /// the caller appends its data to `outq`, then `reply_in_place` (or
    /// `abandon_in_place`, to answer otherwise).
    pub(crate) fn begin_in_place(&mut self, tag: u16, dir: InPlace) -> usize {
        match dir {
            InPlace::Read | InPlace::ReadDir9p => proto::rread_begin(&mut self.outq, tag),
            InPlace::Readdir => proto::rreaddir_begin(&mut self.outq, tag),
        }
    }

    /// The reply begun at `start` is whole: answer `tag` with it.
    pub(crate) fn reply_in_place(&mut self, tag: u16, start: usize, kind: InPlace, trace: bool) {
        let header = match kind {
            InPlace::Read | InPlace::ReadDir9p => {
                proto::rread_finish(&mut self.outq, start);
                proto::RREAD_HEADER_BYTES
            }
            InPlace::Readdir => {
                proto::rreaddir_finish(&mut self.outq, start);
                proto::RREADDIR_HEADER_BYTES
            }
        };
        let count = self.outq.len() - start - header;
        self.answered(tag, count, kind.traced(), trace);
    }

    /// The reply begun at `start` is not sent after all.
    pub(crate) fn abandon_in_place(&mut self, start: usize) {
        self.outq.truncate(start);
    }

    /// Answer `tag` with an Rread encoded whole (`bytes`, its tag in
    /// place): queued as a chunk of its own when `chunk` (a large read,
    /// sent without a copy), else appended. `what` says what it read.
    pub(crate) fn reply_whole(&mut self, tag: u16, bytes: Vec<u8>, chunk: bool, what: &str, trace: bool) {
        let count = bytes.len() - proto::RREAD_HEADER_BYTES;
        match chunk {
            true => self.push_chunk(bytes),
            false => self.outq.extend_from_slice(&bytes),
        }
        self.answered(tag, count, what, trace);
    }

    fn answered(&mut self, tag: u16, count: usize, what: &str, trace: bool) {
        self.asked.answered(tag);
        if trace {
            eprintln!("-{}-> {what} tag {tag} count {count}", self.id);
        }
    }

    /// Append the reply to an open: Ropen, or in 9P2000.L Rlopen. A file
    /// on disk gives its size when opened (`SMALL_FILE_IOUNIT`).
    pub(crate) fn reply_open(&mut self, tag: u16, qid: proto::Qid, size: Option<u64>, trace: bool) {
        let iounit = match size {
            Some(n) if n < u64::from(SMALL_FILE_IOUNIT) => SMALL_FILE_IOUNIT.min(self.msize - proto::IOHDRSZ),
            _ => self.msize - proto::IOHDRSZ,
        };
        let msg = match self.dialect {
            Dialect::L => Rmsg::Lopen { qid, iounit },
            _ => Rmsg::Open { qid, iounit },
        };
        self.reply(tag, &msg, trace);
    }

    /// Append an error reply.
    pub(crate) fn error(&mut self, tag: u16, e: crate::errors::Error, trace: bool) {
        let text = e.text_in(self.dialect);
        self.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno: e.errno() }, trace);
    }

    /// Make room for a message of `size` bytes at the front of the
    /// unconsumed bytes: slide them to the start and grow if needed.
    pub(crate) fn make_room(&mut self, size: usize) {
        if self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rlen, 0);
            self.rlen -= self.rstart;
            self.rstart = 0;
        }
        if self.rbuf.len() < size {
            self.rbuf.resize(size, 0);
        }
    }

    /// After the buffered bytes are all consumed: reset, and give back a
    /// buffer one large message grew.
    pub(crate) fn settle_rbuf(&mut self) {
        if self.rstart == self.rlen {
            self.rstart = 0;
            self.rlen = 0;
            if self.rbuf.len() > BUF_KEEP_BYTES_MAX {
                self.rbuf = vec![0; RBUF_BYTES_MIN];
            }
        }
    }
}
