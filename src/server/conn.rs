//! One client connection: its bytes in, its replies out, its fids.
//!
//! A connection owns two buffers that take turns with the ring. `rbuf`
//! holds received bytes until they make whole messages; while a recv is in
//! flight the ring holds it (`rbuf` is then empty and `recv_armed` set).
//! Replies are encoded straight into `outq`; when no send is in flight,
//! `outq` is handed to the ring as a send and the spare buffer takes its
//! place, so a reply is never copied and a partial send just continues.
//!
//! Back-pressure is the rule that keeps a slow client from costing anyone
//! else: a connection stops decoding requests — and so stops being read —
//! while its unsent replies exceed `OUTQ_BYTES_MAX` or its parked requests
//! reach `REQS_PARKED_MAX`. Memory per connection is therefore bounded by
//! its two buffers, each at most one msize past those caps.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::proto::{self, Dialect, Rmsg};
use crate::tree::{Attr, Loc, NodeId};

/// Bytes a recv buffer starts with. Most requests are tens of bytes; a
/// Twrite can reach msize, and the buffer grows to one message when a
/// header says so, then shrinks back once idle.
pub const RBUF_BYTES_MIN: usize = 8 * 1024;
/// Unsent reply bytes past which a connection stops reading. One reply may
/// overshoot it by at most one msize.
pub const OUTQ_BYTES_MAX: usize = 256 * 1024;
/// A buffer grown past this is released once it is empty, so one large
/// read does not pin a megabyte per idle connection.
pub const BUF_KEEP_BYTES_MAX: usize = 64 * 1024;
/// Requests parked (waiting on I/O or an event) per connection; past it the
/// connection stops being read until one is answered.
pub const REQS_PARKED_MAX: usize = 64;

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Only a Tversion is acceptable; anything else closes the connection.
    AwaitVersion,
    /// Versioned: `dialect` and `msize` hold.
    Ready,
    /// Hung up or broken: waiting for its operations to come back.
    Closing,
}

/// One entry of a directory listing, as it was when the directory was
/// opened: enough to encode its stat without asking the disk again.
#[derive(Clone, Debug)]
pub struct DirEntry {
    pub loc: Loc,
    /// What its stat is built from.
    pub attr: Attr,
}

/// What an open fid reads.
#[derive(Clone, Debug)]
pub enum Opened {
    /// A fact of the skeleton, computed at each read.
    Fact,
    /// A file on disk, through the fd opened at Topen (so a file unlinked
    /// while open stays readable, and no path is resolved again).
    File(Rc<OwnedFd>),
    /// A directory, listed at Topen; a 9P2000 read walks this snapshot.
    Dir(Rc<Vec<DirEntry>>),
    /// Derived text (an /active field), computed at Topen.
    Text(Rc<Vec<u8>>),
    /// An agent's `zmx`, opened for writing (only with `--allow-move`).
    Zmx { slot: u32, gen: u32 },
    /// A chat message: the pool entry (index, generation) and its id.
    Chat { entry: (usize, u32), id: u32 },
}

/// A fid's state: the node it names, whether it is a directory, and once
/// open what it reads and the cursor of a directory listing.
#[derive(Clone, Debug)]
pub struct Fid {
    pub node: NodeId,
    pub is_dir: bool,
    pub open: Option<Opened>,
    /// The offset the next directory read must ask for, and the entry it
    /// starts at (read(5): offset 0 or the previous read's end).
    pub dir_offset: u64,
    pub dir_index: u32,
}

impl Fid {
    pub fn new(node: NodeId, is_dir: bool) -> Self {
        Fid { node, is_dir, open: None, dir_offset: 0, dir_index: 0 }
    }
}

pub struct Conn {
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
    pub spare: Vec<u8>,
    pub sending: bool,
    /// Bytes of the buffer in flight already sent (a partial send resumes
    /// here).
    pub send_off: usize,
    pub fids: HashMap<u32, Fid>,
    /// Parked requests by tag, each naming its record in the server's slab.
    pub parked: HashMap<u16, usize>,
    /// Serve exactly this one connection and exit when it closes (`--fd`).
    pub only_one: bool,
    pub id: u64,
}

impl Conn {
    pub fn new(fd: OwnedFd, gen: u32, id: u64, msize: u32) -> Self {
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
            spare: Vec::new(),
            sending: false,
            send_off: 0,
            fids: HashMap::new(),
            parked: HashMap::new(),
            only_one: false,
            id,
        }
    }

    /// May the next request be decoded now? Not while replies pile up
    /// unsent or too many requests are parked.
    pub fn can_take_request(&self) -> bool {
        self.phase != Phase::Closing && self.outq.len() < OUTQ_BYTES_MAX && self.parked.len() < REQS_PARKED_MAX
    }

    /// Append a reply to the queue, tracing it when asked.
    pub fn reply(&mut self, tag: u16, msg: &Rmsg<'_>, trace: bool) {
        if trace {
            eprintln!("-{}-> {}", self.id, proto::trace_r(tag, msg));
        }
        proto::encode_r(&mut self.outq, tag, msg, self.dialect);
    }

    /// Make room for a message of `size` bytes at the front of the
    /// unconsumed bytes: slide them to the start and grow if needed.
    pub fn make_room(&mut self, size: usize) {
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
    pub fn settle_rbuf(&mut self) {
        if self.rstart == self.rlen {
            self.rstart = 0;
            self.rlen = 0;
            if self.rbuf.len() > BUF_KEEP_BYTES_MAX {
                self.rbuf = vec![0; RBUF_BYTES_MIN];
            }
        }
    }
}
