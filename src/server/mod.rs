//! `server`: the event loop and its connections.
//!
//! One thread, one ring. Everything the daemon waits on — a connection to
//! accept, bytes to receive, a reply to finish sending, a signal, a
//! deadline, and every operation of a parked request — is an operation on
//! the ring with a `Token` naming who wanted it. The loop waits for
//! completions and hands each to its owner: a connection's own (this
//! file), or a parked request's (`park::on_op`, the one route to a job).
//! An owner that has gone (a connection closed meanwhile, recognised by
//! its generation) simply lets the returned resources drop.
//!
//! Requests are decoded straight out of a connection's receive buffer and
//! checked (`dispatch`); what waits is parked (`park`) as a job (`jobs`).
//! A connection's recv is re-armed only while it may take requests (see
//! `conn` on its budget), so a client that stops reading stops being read
//! and nobody else notices.

pub mod activation;
mod asked;
pub(crate) mod config;
pub(crate) mod conn;
mod count;
mod dirents;
pub mod dispatch;
mod dotl;
mod fids;
mod fresh;
mod jobs;
mod keymap;
mod limits;
pub mod listen;
mod listings;
mod ops;
mod park;
mod probe;
mod recent;
mod reply;
mod searches;
mod slots;
mod trim;
mod usage_watch;
mod watch;
mod world;

pub use config::Config;
pub use conn::LISTING_REUSE_FOR_MS;
pub use jobs::inflate::MAX_INFLATED_DEFAULT;
pub use world::LISTED_ENTRIES_MAX;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use slab::Slab;

use crate::active::agents::Agents;
use crate::chat::pool::Pool;
use crate::errors::Error;
use crate::proto::{self, DecodeErrorKind};
use crate::ring::{Completion, Ring, Sub, RING_ENTRIES};
use crate::tree::Tree;

use conn::{Conn, Phase};
use dispatch::After;
use listen::Listener;
use ops::Token;
use world::World;
pub(crate) use world::{Held, RealPaths};

/// How long to wait before accepting again after the process ran out of
/// fds or memory: long enough not to spin, short enough to recover quickly.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// How often connections still owing their Tversion are looked at: the
/// deadline is kept to within this.
const VERSION_SWEEP: Duration = Duration::from_millis(250);
/// The bytes of one `signalfd_siginfo`.
const SIGINFO_BYTES: usize = 128;

pub struct Server {
    world: World,
    reqs: park::Reqs,
    listeners: Vec<Option<Listener>>,
    conns: Slab<Conn>,
    /// Connections a reply was written to (or whose budget was freed) by
    /// something other than their own pump: pumped after the completion
    /// that did it, never from inside another handler.
    dirty: Vec<usize>,
    sweep_armed: bool,
    /// The most connections open since memory was last given back.
    bursts: trim::Bursts,
    next_gen: u32,
    next_id: u64,
    signal_fd: OwnedFd,
    stopping: bool,
}

impl Server {
    pub fn new(cfg: Config, tree: Tree, listeners: Vec<Listener>, signal_fd: OwnedFd) -> io::Result<Self> {
        let real = RealPaths::at_start(&tree);
        let chats = Pool::new(cfg.max_chats, cfg.max_chat_messages);
        let max_chats = cfg.max_chats;
        let (cfg_max_watches, cfg_listing_window) = (cfg.max_watches, cfg.listing_window);
        let ring = Ring::new(RING_ENTRIES)?;
        match ring.limit_workers(cfg.kernel_workers) {
            Ok(()) => log::info!("ring: kernel workers capped at {}", cfg.kernel_workers),
            Err(e) => log::warn!("ring: kernel workers not capped at {} ({e})", cfg.kernel_workers),
        }
        let world = World {
            ring,
            cfg,
            tree,
            agents: Agents::default(),
            chats,
            held: Held::default(),
            real,
            job_ops: 0,
            fids_total: Default::default(),
            refusals: Default::default(),
            moving: Default::default(),
            turn_read_bytes: 0,
            waits: watch::Waits::new(cfg_max_watches),
            bases: ops::Bases::new(cfg_listing_window),
            listings: listings::Listings::new(jobs::refresh::CHAT_FRESH_FOR),
            last_report: None,
            searches: Default::default(),
        };
        Ok(Server {
            world,
            reqs: park::Reqs::new(max_chats),
            listeners: listeners.into_iter().map(Some).collect(),
            conns: Slab::new(),
            dirty: Vec::new(),
            sweep_armed: false,
            bursts: trim::Bursts::new(),
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
            // Work that yielded waits: take what is there, don't sleep.
            let min = usize::from(!self.reqs.has_ready());
            self.world.ring.wait_for(&mut done, min)?;
            self.world.turn_read_bytes = 0;
            for c in done.drain(..) {
                self.complete(c);
                self.pump_dirty();
            }
            // Replies go out before a slice of yielded work spends its CPU;
            // with none to run, the wait at the top of the loop submits them
            // in the same system call that sleeps.
            if self.reqs.has_ready() {
                self.world.ring.flush();
            }
            self.run_ready();
            self.pump_dirty();
            self.arm_watches();
            self.trim_after_bursts();
        }
        self.world.bases.release_all(&mut self.world.ring);
        let left = self.world.ring.cancel_all()?;
        log::info!("stopped: cancelled {} operation(s) still in flight", left.len());
        assert_eq!(self.world.ring.in_flight(), 0, "an operation outlived the ring");
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
            Token::VersionSweep => self.sweep_versions(),
            Token::Inotify => self.on_inotify(c.result, &c.buf),
            Token::Exit { slot, gen } => {
                let ids = self.world.waits.changed((slot, gen));
                self.wake(ids);
            }
            Token::Trim => {
                self.bursts.timer_fired(Instant::now());
                self.trim();
            }
            Token::Bases => self.world.bases.expire(&mut self.world.ring),
            Token::Rescan => {
                self.world.waits.rescan_armed = false;
                let ids = self.world.waits.machine_changed();
                self.wake(ids);
            }
            Token::UsageSettle => {
                let ids = self.world.waits.usage.settled(Instant::now());
                self.wake(ids);
            }
            Token::UsageEnd => {
                let u = &mut self.world.waits.usage;
                u.end_armed = false;
                // (A later block's end, or none: its reads find no change.)
                let ids = u.wake();
                self.wake(ids);
            }
            Token::Req { key, gen, op } => self.on_op(key, gen, op, c),
            Token::Discard => {}
        }
    }

    fn arm_accept(&mut self, i: usize) {
        if self.stopping {
            return;
        }
        if let Some(l) = &self.listeners[i] {
            let fd = l.fd.as_raw_fd();
            self.world.ring.submit(Token::Accept(i), Sub::Accept { fd });
        }
    }

    fn on_accept(&mut self, i: usize, result: i32, fd: Option<OwnedFd>) {
        let Some(fd) = fd else {
            match -result {
                libc::ECANCELED => return,
                // Out of fds or memory: accepting again at once would spin.
                errno @ (libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS) => {
                    let e = io::Error::from_raw_os_error(errno);
                    self.world.refusals.warn(format_args!("accept: {e}; retrying in {ACCEPT_RETRY:?}"));
                    let nanos = ACCEPT_RETRY.as_nanos() as u64;
                    self.world.ring.submit(Token::AcceptRetry(i), Sub::Timeout { nanos });
                    return;
                }
                // The peer gave up before we accepted, or a transient error:
                // nothing is lost by accepting the next one.
                errno => log::debug!("accept: {}", io::Error::from_raw_os_error(errno)),
            }
            return self.arm_accept(i);
        };
        if self.stopping {
            self.world.ring.submit(Token::Discard, Sub::Close { fd });
        } else if self.conns.len() >= self.world.cfg.max_conns {
            let max = self.world.cfg.max_conns;
            self.world.refusals.warn(format_args!("refusing a connection: already serving --max-conns {max}"));
            self.world.ring.submit(Token::Discard, Sub::Close { fd });
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
        let idx = self.conns.insert(Conn::new(fd, gen, id, self.world.cfg.msize));
        log::debug!("conn {id}: accepted");
        self.arm_sweep();
        self.arm_recv(idx);
        idx
    }

    /// Look again at connections that owe their Tversion, while any does.
    fn arm_sweep(&mut self) {
        if !self.sweep_armed && !self.stopping {
            self.sweep_armed = true;
            let nanos = VERSION_SWEEP.min(self.world.cfg.version_deadline).as_nanos() as u64;
            self.world.ring.submit(Token::VersionSweep, Sub::Timeout { nanos });
        }
    }

    /// Close every connection that has not finished its Tversion within
    /// `--version-deadline`: sockets that connect and say nothing must not
    /// hold the connection slots of everyone else.
    fn sweep_versions(&mut self) {
        self.sweep_armed = false;
        let (now, deadline) = (Instant::now(), self.world.cfg.version_deadline);
        let owing: Vec<(usize, bool)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::AwaitVersion)
            .map(|(i, c)| (i, now.duration_since(c.accepted) >= deadline))
            .collect();
        for &(idx, late) in &owing {
            if late {
                let id = self.conns[idx].id;
                self.world.refusals.warn(format_args!("conn {id}: no Tversion within {deadline:?}; closing"));
                self.begin_close(idx);
            }
        }
        if owing.iter().any(|(_, late)| !late) {
            self.arm_sweep();
        }
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
        self.world.ring.submit(token, Sub::Recv { fd, buf, start });
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
            let Some(conn) = self.conns.get(idx).filter(|c| c.phase != Phase::Closing) else { return };
            let queued = conn.held_bytes();
            self.flush_send(idx);
            let conn = &self.conns[idx];
            let freed = conn.held_bytes() < queued;
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
                Some(After::Forget(keys)) => self.forget(keys),
            }
        }
        self.conns[idx].settle_rbuf();
        true
    }

    /// Decode and handle the next whole request, if there is one and the
    /// connection may take it.
    fn take_one(&mut self, idx: usize) -> Option<After> {
        let conn = &mut self.conns[idx];
        // While a recv is in flight the ring holds the buffer, and what was
        // left in it is an incomplete request (a recv is armed only then).
        if conn.recv_armed || !conn.can_take_request() {
            return None;
        }
        let limit = if conn.phase == Phase::AwaitVersion { self.world.cfg.msize } else { conn.msize };
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
            Ok((tag, msg)) => dispatch::handle(&mut self.world, conn, tag, msg),
            Err(e) => refuse_undecodable(self.world.cfg.trace, conn, e),
        };
        conn.rbuf = rbuf;
        Some(after)
    }

    fn flush_send(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        if conn.sending || !conn.has_unsent() || conn.phase == Phase::Closing {
            return;
        }
        let Some(fd) = conn.fd.as_ref().map(|f| f.as_raw_fd()) else { return };
        let Some(buf) = conn.next_send() else { return };
        conn.sending = true;
        conn.send_off = 0;
        conn.send_len = buf.len();
        let token = Token::Send(idx, conn.gen);
        self.world.ring.submit(token, Sub::Send { fd, buf, start: 0 });
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
            self.world.ring.submit(Token::Send(idx, gen), Sub::Send { fd, buf, start });
            return;
        }
        conn.sending = false;
        conn.send_len = 0;
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
        let conn = &mut self.conns[idx];
        if conn.phase == Phase::Closing {
            return;
        }
        log::debug!("conn {}: closing", conn.id);
        conn.phase = Phase::Closing;
        let forgotten = dispatch::reset_session(&mut self.world, conn);
        if conn.recv_armed || conn.sending {
            let fd = conn.fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
            self.world.ring.submit(Token::Discard, Sub::CancelFd { fd });
        }
        self.forget(forgotten);
        self.finish_close(idx);
    }

    fn finish_close(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        if conn.recv_armed || conn.sending {
            return;
        }
        let conn = self.conns.remove(idx);
        if let Some(fd) = conn.fd {
            self.world.ring.submit(Token::Discard, Sub::Close { fd });
        }
        if conn.only_one {
            self.stop();
        }
    }

    /// Once a turn: after a burst, give memory back (`trim`).
    fn trim_after_bursts(&mut self) {
        match self.bursts.after_turn(self.conns.len(), self.world.ring.in_flight(), Instant::now()) {
            trim::Trim::Nothing => {}
            trim::Trim::Now => self.trim(),
            trim::Trim::Later(d) => {
                let nanos = d.as_nanos().try_into().unwrap_or(u64::MAX);
                self.world.ring.submit(Token::Trim, Sub::Timeout { nanos });
            }
        }
    }

    /// Shrink the slabs to what is live and return the allocator's free
    /// pages to the system.
    fn trim(&mut self) {
        // The turn's replies go out first: a trim can take milliseconds.
        self.world.ring.flush();
        self.conns.shrink_to_fit();
        self.reqs.shrink_to_fit();
        self.world.ring.shrink_to_fit();
        self.world.waits.shrink_to_fit();
        for fd in self.world.chats.shrink() {
            world::release_file(&mut self.world.ring, &mut self.world.held, fd);
        }
        // SAFETY: malloc_trim only returns free heap pages to the system.
        unsafe { libc::malloc_trim(0) };
    }

    /// Keep a read on the inotify fd while watches exist, the rescan
    /// timer running while a read of `/active/wait` is parked, and
    /// `/usage/wait`'s timers while one of its reads is (`usage_watch`).
    fn arm_watches(&mut self) {
        let w = &mut self.world;
        if !w.waits.inotify_armed && !self.stopping {
            if let Some(fd) = w.waits.inotify().map(|f| f.as_raw_fd()) {
                w.waits.inotify_armed = true;
                let buf = Vec::with_capacity(watch::INOTIFY_READ_BYTES);
                let read = Sub::Read {
                    fd,
                    owned: None,
                    buf,
                    len: watch::INOTIFY_READ_BYTES as u32,
                    offset: u64::MAX,
                    expect: 0,
                };
                w.ring.submit(Token::Inotify, read);
            }
        }
        if !w.waits.rescan_armed && w.waits.machine_waiting() && !self.stopping {
            w.waits.rescan_armed = true;
            let nanos = w.cfg.rescan_interval.as_nanos() as u64;
            w.ring.submit(Token::Rescan, Sub::Timeout { nanos });
        }
        let u = &mut w.waits.usage;
        if self.stopping || u.waiting.is_empty() {
            return;
        }
        if let Some(wait) = u.settle_in(Instant::now()).filter(|_| !u.settle_armed) {
            u.settle_armed = true;
            w.ring.submit(Token::UsageSettle, Sub::Timeout { nanos: wait.as_nanos() as u64 });
        }
        if let Some(ends) = u.ends.filter(|_| !u.end_armed) {
            u.end_armed = true;
            let now = crate::meta::wall_ns().div_euclid(1_000_000_000);
            // A second past it: the block that ends then has ended.
            let secs = (i128::from(ends) - now).max(0) as u64 + 1;
            w.ring.submit(Token::UsageEnd, Sub::Timeout { nanos: secs.saturating_mul(1_000_000_000) });
        }
    }

    /// inotify events: the agents they concern have changed.
    fn on_inotify(&mut self, result: i32, buf: &[u8]) {
        self.world.waits.inotify_armed = false;
        if result < 0 {
            if -result != libc::ECANCELED && -result != libc::EAGAIN {
                log::warn!("inotify: {}", io::Error::from_raw_os_error(-result));
            }
            return;
        }
        let w = &mut self.world;
        for agent in watch::on_events(&w.tree, &w.agents, &mut w.waits, buf) {
            let ids = self.world.waits.changed(agent);
            self.wake(ids);
        }
    }

    fn arm_signal(&mut self) {
        let fd = self.signal_fd.as_raw_fd();
        let buf = Vec::with_capacity(SIGINFO_BYTES);
        let read = Sub::Read { fd, owned: None, buf, len: SIGINFO_BYTES as u32, offset: u64::MAX, expect: 0 };
        self.world.ring.submit(Token::Signal, read);
    }

    /// A signal: SIGTERM and SIGINT stop the daemon, SIGUSR1 prints its
    /// status, SIGCHLD reaps its children. The read is re-armed after
    /// every signal that does not stop it, and after every error, so no
    /// later SIGTERM is ever lost.
    fn on_signal(&mut self, result: i32, buf: &[u8]) {
        if result < 0 {
            match -result {
                libc::ECANCELED if self.stopping => return,
                errno => log::error!("signalfd: {}", io::Error::from_raw_os_error(errno)),
            }
            return self.arm_signal();
        }
        let signo = buf.get(..4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])) as i32;
        match signo {
            libc::SIGUSR1 => eprintln!("{}", self.status()),
            libc::SIGCHLD => listen::reap_children(),
            _ => {
                log::info!("signal {signo}: stopping");
                return self.stop();
            }
        }
        self.arm_signal();
    }

    /// One line of what the daemon holds, printed on SIGUSR1: what an
    /// operator (or the kernel-mount test) checks after a heavy listing.
    fn status(&self) -> String {
        let fids: usize = self.conns.iter().map(|(_, c)| c.fids.len()).sum();
        let parked: usize = self.conns.iter().map(|(_, c)| c.parked.len()).sum();
        let held: usize = self.conns.iter().map(|(_, c)| c.held_bytes()).sum();
        let w = &self.world;
        format!(
            "9agents status: conns={} fids={fids} parked={parked} reqs={} ring={} files={} entries={} paths={} \
             fids_total={} held_bytes={held} job_ops={} watches={} waits={} searches={} kept={} kept_bytes={} \
             kept_reads={} heap={}",
            self.conns.len(),
            self.reqs.len(),
            w.ring.in_flight(),
            w.held.files,
            w.held.entries,
            w.tree.paths_held(),
            w.fids_total,
            w.job_ops,
            w.waits.watches(),
            w.waits.parked,
            w.searches.len(),
            w.searches.kept.len(),
            w.searches.kept.bytes(),
            w.searches.kept.reads(),
            heap_in_use(),
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
                self.world.ring.submit(Token::Discard, Sub::CancelFd { fd });
                let fd = l.close();
                self.world.ring.submit(Token::Discard, Sub::Close { fd });
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
fn refuse_undecodable(trace: bool, conn: &mut Conn, e: proto::DecodeError) -> After {
    let (Some(tag), Phase::Ready) = (e.tag, conn.phase) else {
        log::info!("conn {}: undecodable message {:?} before Tversion; closing", conn.id, e.kind);
        return After::Close;
    };
    let error = match e.kind {
        DecodeErrorKind::UnknownType(_) | DecodeErrorKind::WrongDirection(_) => Error::UnknownType,
        DecodeErrorKind::TooManyNames(_) => Error::TooManyNames,
        DecodeErrorKind::Truncated | DecodeErrorKind::Trailing => Error::Malformed,
    };
    if trace {
        eprintln!("<-{}- (undecodable: {:?}) tag {tag}", conn.id, e.kind);
    }
    conn.asked.asked(tag);
    conn.error(tag, error, trace);
    After::Continue
}

/// Bytes the allocator has handed out and not had back (in-use heap and
/// mmapped chunks): RSS less what free(3) keeps for reuse, so a bench can
/// tell what the daemon holds from what the allocator retains.
fn heap_in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let m = unsafe { libc::mallinfo2() };
    m.uordblks + m.hblkhd
}

#[cfg(test)]
mod tests;
