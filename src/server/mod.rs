//! `server`: the event loop, its connections, and what each completion means.
//!
//! One thread, one ring. Everything the daemon waits on — a connection to
//! accept, bytes to receive, a reply to finish sending, a signal — is an
//! operation on the ring with a `Token` naming who wanted it. The loop
//! waits for completions and dispatches each to its owner; an owner that
//! has gone (a connection closed meanwhile, recognised by its generation)
//! simply lets the returned resources drop.
//!
//! Requests are decoded straight out of a connection's receive buffer and
//! answered into its reply queue (`dispatch`). A connection's recv is
//! re-armed only while it may take requests (see `conn` on back-pressure),
//! so a client that stops reading stops being read and nobody else notices.

pub mod conn;
pub use job::LISTED_ENTRIES_MAX;
mod chat;
mod derived;
mod dirents;
pub mod dispatch;
mod gather;
mod job;
pub mod listen;
mod moves;
mod probe;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use slab::Slab;

use crate::errors::Error;
use crate::proto::{self, DecodeErrorKind};
use crate::ring::{Completion, Ring, Sub, RING_ENTRIES};
use crate::tree::Tree;

use conn::{Conn, Phase};
use dispatch::{After, Ctx};
use listen::Listener;

/// How long to wait before accepting again after the process ran out of
/// fds or memory: long enough not to spin, short enough to recover quickly.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// The bytes of one `signalfd_siginfo`.
const SIGINFO_BYTES: usize = 128;

/// Everything the command line decides for the server.
#[derive(Clone, Debug)]
pub struct Config {
    /// The largest message we accept or send (`--msize`).
    pub msize: u32,
    /// Fids per connection (`--max-fids`).
    pub max_fids: usize,
    /// Connections at once (`--max-conns`); past it a new one is closed.
    pub max_conns: usize,
    /// `-D`: print every message.
    pub trace: bool,
    /// Entries a directory may have and still be listed (`--max-dir-entries`).
    pub max_dir_entries: usize,
    /// Directory entries all open directory fids may hold together
    /// (`--max-listed-entries`).
    pub max_listed_entries: usize,
    /// `--allow-move`: a write to an agent's `zmx` moves it.
    pub allow_move: bool,
    /// The zmx binary (`--zmx`, else `zmx` on PATH).
    pub zmx: std::path::PathBuf,
    /// Where zmx sessions post themselves: `<post dir>/zmx`.
    pub zmx_dir: std::path::PathBuf,
    /// A move sends SIGKILL this long after SIGTERM (`--move-kill-after`, ms).
    pub move_kill_after: Duration,
    /// A move gives up on an agent that has not exited (`--move-give-up`, ms).
    pub move_give_up: Duration,
    /// A move fails if zmx has not posted by then (`--move-post-deadline`, ms).
    pub move_post_deadline: Duration,
}

/// Who is waiting on an operation.
#[derive(Clone, Copy, Debug)]
enum Token {
    Accept(usize),
    AcceptRetry(usize),
    Recv(usize, u32),
    Send(usize, u32),
    Signal,
    /// A probe of a parked request: (record, generation, probe index).
    Probe(usize, u32, u32),
    /// The pread of a parked read.
    Read(usize, u32),
    /// An operation of a parked move.
    Move(usize, u32, moves::MoveOp),
    /// A read of a chat refresh.
    Chat(usize, u32, chat::ChatOp),
    /// The read of a chat message.
    ChatMsg(usize, u32),
    /// An operation nobody waits on (a close, a cancel).
    Discard,
}

pub struct Server {
    ring: Ring<Token>,
    cfg: Config,
    tree: Tree,
    listeners: Vec<Option<Listener>>,
    conns: Slab<Conn>,
    reqs: Slab<job::Req>,
    next_req_gen: u32,
    /// Connections a parked reply was written to, to pump after the
    /// completion that answered it (never from inside another handler).
    dirty: Vec<usize>,
    /// Fds held by open fids (`job::OPEN_FILES_MAX`).
    held: job::Held,
    /// Requests waiting for the scan of the agents in flight.
    scan_waiters: Vec<(usize, u32)>,
    /// Whether a scan is in flight.
    scanning: bool,
    /// Bases, home and temp dir resolved (`derived::RealPaths`).
    real: derived::RealPaths,
    /// Indexing slices whose window has been read, run one per turn of the
    /// loop after every other completion of the turn (`run`).
    deferred: std::collections::VecDeque<Completion<Token>>,
    /// Requests waiting for a refresh of an agent's chat index.
    chat_waiters: std::collections::HashMap<(u32, u32), Vec<(usize, u32)>>,
    /// Agents being moved: a second move of one is refused.
    moving: std::collections::HashSet<(u32, u32)>,
    next_gen: u32,
    next_id: u64,
    signal_fd: OwnedFd,
    stopping: bool,
}

impl Server {
    pub fn new(cfg: Config, tree: Tree, listeners: Vec<Listener>, signal_fd: OwnedFd) -> io::Result<Self> {
        let real = derived::RealPaths::at_start(&tree);
        Ok(Server {
            ring: Ring::new(RING_ENTRIES)?,
            cfg,
            tree,
            listeners: listeners.into_iter().map(Some).collect(),
            conns: Slab::new(),
            reqs: Slab::new(),
            next_req_gen: 0,
            dirty: Vec::new(),
            held: job::Held::default(),
            scan_waiters: Vec::new(),
            scanning: false,
            real,
            moving: std::collections::HashSet::new(),
            chat_waiters: std::collections::HashMap::new(),
            deferred: std::collections::VecDeque::new(),
            next_gen: 1,
            next_id: 0,
            signal_fd,
            stopping: false,
        })
    }

    /// Serve until a signal stops us (or, with `only`, until that one
    /// connection closes). Returns once nothing is left in flight.
    pub fn run(&mut self, only: Option<OwnedFd>) -> io::Result<()> {
        for i in 0..self.listeners.len() {
            self.arm_accept(i);
        }
        self.arm_signal();
        if let Some(fd) = only {
            let idx = self.add_conn(fd);
            self.conns[idx].only_one = true;
        }
        let mut done = Vec::new();
        while !(self.stopping && self.conns.is_empty()) {
            // Deferred work waiting means: take what is there, don't sleep.
            let min = usize::from(self.deferred.is_empty());
            self.ring.wait_for(&mut done, min)?;
            for c in done.drain(..) {
                if matches!(c.token, Token::Chat(_, _, chat::ChatOp::Window)) {
                    self.deferred.push_back(c);
                    continue;
                }
                self.complete(c);
                self.pump_dirty();
            }
            // Replies go out before a slice of indexing spends its CPU, and
            // one slice runs per turn of the loop.
            self.ring.flush();
            if let Some(c) = self.deferred.pop_front() {
                self.complete(c);
                self.pump_dirty();
            }
        }
        let left = self.ring.cancel_all()?;
        log::info!("stopped: cancelled {} operation(s) still in flight", left.len());
        assert_eq!(self.ring.in_flight(), 0, "an operation outlived the ring");
        Ok(())
    }

    fn pump_dirty(&mut self) {
        while let Some(idx) = self.dirty.pop() {
            if self.conns.get(idx).is_some_and(|c| c.phase != Phase::Closing) {
                self.pump(idx);
            }
        }
    }

    fn complete(&mut self, c: Completion<Token>) {
        match c.token {
            Token::Accept(i) => self.on_accept(i, c.result, c.fd),
            Token::AcceptRetry(i) => self.arm_accept(i),
            Token::Recv(idx, gen) => self.on_recv(idx, gen, c.result, c.buf),
            Token::Send(idx, gen) => self.on_send(idx, gen, c.result, c.buf),
            Token::Signal => self.on_signal(c.result, &c.buf),
            Token::Probe(key, gen, i) => self.on_probe(key, gen, i, c),
            Token::Read(key, gen) => self.on_read(key, gen, c),
            Token::Move(key, gen, op) => self.on_move(key, gen, op, c.result),
            Token::Chat(key, gen, op) => self.on_chat(key, gen, op, c),
            Token::ChatMsg(key, gen) => self.on_chat_msg(key, gen, c),
            Token::Discard => {}
        }
    }

    fn arm_accept(&mut self, i: usize) {
        if self.stopping {
            return;
        }
        if let Some(l) = &self.listeners[i] {
            let fd = l.fd.as_raw_fd();
            self.ring.submit(Token::Accept(i), Sub::Accept { fd });
        }
    }

    fn on_accept(&mut self, i: usize, result: i32, _fd: Option<OwnedFd>) {
        if result < 0 {
            let errno = -result;
            match errno {
                libc::ECANCELED => return,
                // Out of fds or memory: accepting again at once would spin.
                libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS => {
                    log::warn!("accept: {}; retrying in {:?}", io::Error::from_raw_os_error(errno), ACCEPT_RETRY);
                    let nanos = ACCEPT_RETRY.as_nanos() as u64;
                    self.ring.submit(Token::AcceptRetry(i), Sub::Timeout { nanos });
                    return;
                }
                // The peer gave up before we accepted, or a transient error:
                // nothing is lost by accepting the next one.
                _ => log::debug!("accept: {}", io::Error::from_raw_os_error(errno)),
            }
            return self.arm_accept(i);
        }
        // SAFETY: a non-negative accept result is a new fd that nothing else
        // owns.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(result) };
        if self.stopping {
            self.ring.submit(Token::Discard, Sub::Close { fd });
        } else if self.conns.len() >= self.cfg.max_conns {
            log::warn!("refusing a connection: already serving --max-conns {}", self.cfg.max_conns);
            self.ring.submit(Token::Discard, Sub::Close { fd });
        } else {
            self.add_conn(fd);
        }
        self.arm_accept(i);
    }

    fn add_conn(&mut self, fd: OwnedFd) -> usize {
        let gen = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1);
        let id = self.next_id;
        self.next_id += 1;
        let idx = self.conns.insert(Conn::new(fd, gen, id, self.cfg.msize));
        log::debug!("conn {id}: accepted");
        self.arm_recv(idx);
        idx
    }

    fn conn_mut(&mut self, idx: usize, gen: u32) -> Option<&mut Conn> {
        self.conns.get_mut(idx).filter(|c| c.gen == gen)
    }

    fn arm_recv(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        // No recv while one is in flight, while requests may not be taken,
        // or while the buffer is full of whole requests still to take.
        if conn.recv_armed || !conn.can_take_request() || conn.rlen == conn.rbuf.len() {
            return;
        }
        let Some(fd) = conn.fd.as_ref().map(|f| f.as_raw_fd()) else { return };
        let buf = std::mem::take(&mut conn.rbuf);
        let start = conn.rlen;
        conn.recv_armed = true;
        let token = Token::Recv(idx, conn.gen);
        self.ring.submit(token, Sub::Recv { fd, buf, start });
    }

    fn on_recv(&mut self, idx: usize, gen: u32, result: i32, buf: Vec<u8>) {
        let Some(conn) = self.conn_mut(idx, gen) else { return };
        conn.recv_armed = false;
        conn.rbuf = buf;
        if conn.phase == Phase::Closing {
            return self.finish_close(idx);
        }
        if result <= 0 {
            if result < 0 && -result != libc::ECONNRESET {
                log::debug!("conn {}: recv: {}", conn.id, io::Error::from_raw_os_error(-result));
            }
            return self.begin_close(idx);
        }
        conn.rlen += result as usize;
        self.pump(idx);
    }

    /// Take every whole request that may be taken now, send what they
    /// answered, and read more if allowed. Handing the reply queue to a send
    /// can make room for requests that back-pressure left waiting in the
    /// buffer, so those are taken before any recv is armed.
    fn pump(&mut self, idx: usize) {
        loop {
            if !self.take_requests(idx) {
                return self.begin_close(idx);
            }
            let queued = self.conns[idx].outq.len();
            self.flush_send(idx);
            let conn = &self.conns[idx];
            let freed = queued > 0 && conn.outq.is_empty();
            if !(freed && conn.can_take_request() && conn.rstart < conn.rlen) {
                break;
            }
        }
        self.arm_recv(idx);
    }

    /// Decode and handle whole requests while the connection may take
    /// them. Returns false when the connection must close.
    fn take_requests(&mut self, idx: usize) -> bool {
        loop {
            match self.take_one(idx) {
                None => break,
                Some(After::Continue) => {}
                Some(After::Close) => return false,
                Some(After::Park(tag, job)) => self.park(idx, tag, *job),
                Some(After::ParkRead { tag, fid, file, offset, count }) => {
                    self.park_read(idx, tag, fid, file, offset, count)
                }
                Some(After::ParkChatRead { tag, entry, id, offset, count }) => {
                    self.park_chat_read(idx, tag, entry, id, offset, count)
                }
                Some(After::Move { tag, slot, gen, data }) => {
                    if let Err(e) = self.begin_move(idx, tag, slot, gen, &data) {
                        let (text, errno) = e.entry();
                        let trace = self.cfg.trace;
                        self.conns[idx].reply(tag, &proto::Rmsg::Error { ename: text.as_bytes(), errno }, trace);
                    }
                }
            }
        }
        self.conns[idx].settle_rbuf();
        true
    }

    /// Decode and handle the next whole request, if there is one and the
    /// connection may take it.
    fn take_one(&mut self, idx: usize) -> Option<After> {
        let mut ctx = Ctx { tree: &mut self.tree, cfg: &self.cfg, closing: Vec::new() };
        let conn = &mut self.conns[idx];
        // While a recv is in flight the ring holds the buffer, and what was
        // left in it is an incomplete request (a recv is armed only then).
        if conn.recv_armed || !conn.can_take_request() {
            return None;
        }
        let limit = if conn.phase == Phase::AwaitVersion { ctx.cfg.msize } else { conn.msize };
        let avail = &conn.rbuf[conn.rstart..conn.rlen];
        let size = match proto::frame_size(avail, limit) {
            Err(e) => {
                log::info!("conn {}: {e:?}; closing", conn.id);
                return Some(After::Close);
            }
            Ok(Some(size)) if size <= avail.len() => size,
            Ok(Some(size)) => {
                conn.make_room(size);
                return None;
            }
            Ok(None) => {
                conn.make_room(0);
                return None;
            }
        };
        let rbuf = std::mem::take(&mut conn.rbuf);
        let frame = &rbuf[conn.rstart..conn.rstart + size];
        conn.rstart += size;
        let after = match proto::decode_t(frame, conn.dialect) {
            Ok((tag, msg)) => dispatch::handle(&mut ctx, conn, tag, msg),
            Err(e) => refuse_undecodable(&ctx, conn, e),
        };
        conn.rbuf = rbuf;
        for opened in ctx.closing {
            job::release_opened(&mut self.ring, &mut self.held, Some(opened));
        }
        Some(after)
    }

    fn flush_send(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        if conn.sending || conn.outq.is_empty() || conn.phase == Phase::Closing {
            return;
        }
        let Some(fd) = conn.fd.as_ref().map(|f| f.as_raw_fd()) else { return };
        let buf = std::mem::replace(&mut conn.outq, std::mem::take(&mut conn.spare));
        conn.sending = true;
        conn.send_off = 0;
        let token = Token::Send(idx, conn.gen);
        self.ring.submit(token, Sub::Send { fd, buf, start: 0 });
    }

    fn on_send(&mut self, idx: usize, gen: u32, result: i32, mut buf: Vec<u8>) {
        let Some(conn) = self.conn_mut(idx, gen) else { return };
        if conn.phase == Phase::Closing {
            conn.sending = false;
            return self.finish_close(idx);
        }
        if result <= 0 {
            conn.sending = false;
            log::debug!("conn {}: send: {}", conn.id, io::Error::from_raw_os_error(-result));
            return self.begin_close(idx);
        }
        conn.send_off += result as usize;
        if conn.send_off < buf.len() {
            // A partial send: continue from where the kernel stopped.
            let (fd, start) = (conn.fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1), conn.send_off);
            let token = Token::Send(idx, gen);
            self.ring.submit(token, Sub::Send { fd, buf, start });
            return;
        }
        conn.sending = false;
        buf.clear();
        if buf.capacity() <= conn::BUF_KEEP_BYTES_MAX {
            conn.spare = buf;
        }
        self.pump(idx);
    }

    /// Hang up: every parked request is forgotten and every fid clunked at
    /// once; the fd is closed when the ring has given back the connection's
    /// buffers.
    fn begin_close(&mut self, idx: usize) {
        let mut ctx = Ctx { tree: &mut self.tree, cfg: &self.cfg, closing: Vec::new() };
        let conn = &mut self.conns[idx];
        if conn.phase == Phase::Closing {
            return;
        }
        log::debug!("conn {}: closing", conn.id);
        conn.phase = Phase::Closing;
        dispatch::reset_session(&mut ctx, conn);
        for opened in ctx.closing {
            job::release_opened(&mut self.ring, &mut self.held, Some(opened));
        }
        if conn.recv_armed || conn.sending {
            let fd = conn.fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
            self.ring.submit(Token::Discard, Sub::CancelFd { fd });
        }
        self.finish_close(idx);
    }

    fn finish_close(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        if conn.recv_armed || conn.sending {
            return;
        }
        let conn = self.conns.remove(idx);
        if let Some(fd) = conn.fd {
            self.ring.submit(Token::Discard, Sub::Close { fd });
        }
        if conn.only_one {
            self.stop();
        }
    }

    fn arm_signal(&mut self) {
        let fd = self.signal_fd.as_raw_fd();
        let buf = Vec::with_capacity(SIGINFO_BYTES);
        self.ring
            .submit(Token::Signal, Sub::Read { fd, owned: None, buf, len: SIGINFO_BYTES as u32, offset: u64::MAX });
    }

    fn on_signal(&mut self, result: i32, buf: &[u8]) {
        if result < 0 {
            if -result != libc::ECANCELED {
                log::error!("signalfd: {}", io::Error::from_raw_os_error(-result));
            }
            return;
        }
        let signo = buf.get(..4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if signo == libc::SIGUSR1 as u32 {
            eprintln!("{}", self.status());
            return self.arm_signal();
        }
        log::info!("signal {signo}: stopping");
        self.stop();
    }

    /// One line of what the daemon holds, printed on SIGUSR1: what an
    /// operator (or the kernel-mount test) checks after a heavy listing.
    fn status(&self) -> String {
        let fids: usize = self.conns.iter().map(|(_, c)| c.fids.len()).sum();
        let parked: usize = self.conns.iter().map(|(_, c)| c.parked.len()).sum();
        format!(
            "9agents status: conns={} fids={fids} parked={parked} reqs={} ring={} files={} entries={}",
            self.conns.len(),
            self.reqs.len(),
            self.ring.in_flight(),
            self.held.files,
            self.held.entries,
        )
    }

    /// Stop accepting, unpost, and hang up on everyone.
    fn stop(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        for slot in &mut self.listeners {
            if let Some(l) = slot.take() {
                let fd = l.fd.as_raw_fd();
                self.ring.submit(Token::Discard, Sub::CancelFd { fd });
                let fd = l.close();
                self.ring.submit(Token::Discard, Sub::Close { fd });
            }
        }
        let idxs: Vec<usize> = self.conns.iter().map(|(i, _)| i).collect();
        for idx in idxs {
            self.begin_close(idx);
        }
    }
}

/// A framed message that does not decode: answered on its tag when the
/// header was whole and the session is up, else the connection closes.
fn refuse_undecodable(ctx: &Ctx, conn: &mut Conn, e: proto::DecodeError) -> After {
    let (Some(tag), Phase::Ready) = (e.tag, conn.phase) else {
        log::info!("conn {}: undecodable message {:?} before Tversion; closing", conn.id, e.kind);
        return After::Close;
    };
    let error = match e.kind {
        DecodeErrorKind::UnknownType(_) | DecodeErrorKind::WrongDirection(_) => Error::UnknownType,
        DecodeErrorKind::TooManyNames(_) => Error::TooManyNames,
        DecodeErrorKind::Truncated | DecodeErrorKind::Trailing => Error::Malformed,
    };
    if ctx.cfg.trace {
        eprintln!("<-{}- (undecodable: {:?}) tag {tag}", conn.id, e.kind);
    }
    let (text, errno) = error.entry();
    conn.reply(tag, &proto::Rmsg::Error { ename: text.as_bytes(), errno }, ctx.cfg.trace);
    After::Continue
}
