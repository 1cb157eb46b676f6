//! The ring as the server's jobs see it: who an operation is for
//! (`Token`, naming a parked record by its `Id`), and the handle a job
//! submits through (`Ops`), which tags every operation with the job's
//! record and counts it, so the record is kept until the kernel is done
//! with it, and which holds all jobs together to `JOB_OPS_MAX` operations
//! in flight; and the harness bases their looks open beneath, kept open a
//! while (`Bases`).

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use crate::ring::{Ring, Sub};

/// Who is waiting on an operation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Token {
    Accept(usize),
    AcceptRetry(usize),
    Recv(usize, u32),
    Send(usize, u32),
    Signal,
    /// The sweep of connections that owe their Tversion.
    VersionSweep,
    /// The read of the inotify fd the watches share.
    Inotify,
    /// The poll of a watched agent's pidfd: it exited.
    Exit {
        slot: u32,
        gen: u32,
    },
    /// The machine's rescan timer (`--rescan-interval`).
    Rescan,
    /// `/usage/wait`'s timers: a change settled (`usage_watch::SETTLE`),
    /// the block's end.
    UsageSettle,
    UsageEnd,
    /// A trim that was due too soon after the last (`trim`).
    Trim,
    /// The kept harness bases' expiry (`Bases`).
    Bases,
    /// An operation of a parked request: its record, its generation, and
    /// the op number its job chose.
    Req {
        key: usize,
        gen: u32,
        op: u32,
    },
    /// An operation nobody waits on (a close, a cancel).
    Discard,
}

/// Ring operations all jobs together may have in flight. A Topen of a
/// 65,536-entry directory wants a statx per entry; past this, a job's
/// next operations wait for a turn of the loop (`Step::Yield`) instead of
/// piling into the kernel. Connections' own receives and sends are not
/// counted: they are bounded by the connection cap.
pub(crate) const JOB_OPS_MAX: usize = 4096;
/// The ring as a job sees it: every operation carries the job's token and
/// is counted, so the record is kept until the kernel is done with it.
pub(crate) struct Ops<'a> {
    pub(crate) ring: &'a mut Ring<Token>,
    pub(crate) key: usize,
    pub(crate) gen: u32,
    pub(crate) in_flight: &'a mut u32,
    pub(crate) job_ops: &'a mut usize,
    /// The harness bases opened lately.
    pub(crate) bases: &'a mut Bases,
}

impl Ops<'_> {
    /// Submit `sub` as this job's operation `op`; returns the ring's key
    /// (for a `Sub::Cancel`).
    pub(crate) fn submit(&mut self, op: u32, sub: Sub) -> usize {
        *self.in_flight += 1;
        *self.job_ops += 1;
        self.ring.submit(Token::Req { key: self.key, gen: self.gen, op }, sub)
    }

    /// Close `fd` through the ring; nobody waits on it.
    pub(crate) fn close(&mut self, fd: OwnedFd) {
        self.ring.submit(Token::Discard, Sub::Close { fd });
    }

    /// Cancel an operation of this job (its completion still comes back).
    pub(crate) fn cancel(&mut self, ring_key: usize) {
        self.ring.submit(Token::Discard, Sub::Cancel { key: ring_key });
    }

    /// How many more operations jobs may put in flight now.
    pub(crate) fn room(&self) -> usize {
        JOB_OPS_MAX.saturating_sub(*self.job_ops)
    }
}

/// A record's identity: its slab key and generation (a key is reused, a
/// generation never is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Id {
    pub key: usize,
    pub gen: u32,
}

/// The harness bases opened lately, kept for `--listing-window`: every
/// look beneath a base opened it first — an `openat2` of its whole path
/// from `/`, and a close — so a walk, its stat and an open each paid for
/// it again, one loop turn more than the look itself. Within the window a
/// probe opens beneath the base as it was opened then (`Bases::get`); the
/// trade is the listing window's: a base renamed or removed meanwhile is
/// still looked beneath for at most that long, and what is beneath it is
/// still resolved afresh, with every rule, by each look. A failed open is
/// never kept, so a base that appears is found at its next look. A kept
/// base is closed once its window has passed (`Bases::expire`, on a timer
/// of the ring's): at most one fd a base, and none while idle.
pub(crate) struct Bases {
    window: Duration,
    kept: Vec<KeptBase>,
    /// The expiry timer is on the ring (`Token::Bases`).
    timer: bool,
}

struct KeptBase {
    path: CString,
    fd: Rc<OwnedFd>,
    at: super::fresh::Seen,
}

impl Bases {
    pub(crate) fn new(window: Duration) -> Bases {
        Bases { window, kept: Vec::new(), timer: false }
    }

    /// The timer fired: close every base kept a window ago or more, and
    /// time the next expiry while any is left.
    pub(crate) fn expire(&mut self, ring: &mut Ring<Token>) {
        self.timer = false;
        let window = self.window;
        for k in self.kept.extract_if(.., |k| !k.at.stands(window)) {
            release_shared(ring, k.fd);
        }
        self.arm(ring);
    }

    /// Let go of every kept base (the daemon is stopping).
    pub(crate) fn release_all(&mut self, ring: &mut Ring<Token>) {
        for k in self.kept.drain(..) {
            release_shared(ring, k.fd);
        }
    }

    /// Time the expiry of what is kept, unless it is timed already.
    pub(crate) fn arm(&mut self, ring: &mut Ring<Token>) {
        if !self.timer && !self.kept.is_empty() {
            self.timer = true;
            let nanos = u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX);
            ring.submit(Token::Bases, Sub::Timeout { nanos });
        }
    }

    /// The base at `path`, if it was opened within the window.
    pub(crate) fn get(&self, path: &CStr) -> Option<Rc<OwnedFd>> {
        let k = self.kept.iter().find(|k| k.path.as_c_str() == path)?;
        k.at.stands(self.window).then(|| k.fd.clone())
    }

    /// Keep a base just opened (if there is a window), letting go of what
    /// was kept for the same path: returns that, for the caller to close
    /// through the ring.
    pub(crate) fn keep(&mut self, path: &CStr, fd: &Rc<OwnedFd>) -> Option<Rc<OwnedFd>> {
        if self.window.is_zero() {
            return None;
        }
        let fresh = KeptBase { path: path.to_owned(), fd: fd.clone(), at: super::fresh::Seen::now() };
        match self.kept.iter_mut().find(|k| k.path.as_c_str() == path) {
            Some(k) => Some(std::mem::replace(k, fresh).fd),
            None => {
                self.kept.push(fresh);
                None
            }
        }
    }

    /// The base at `path` could not be opened: what was kept for it goes
    /// (returned, for the caller to close through the ring), so no look
    /// goes on beneath a base that is gone.
    pub(crate) fn forget(&mut self, path: &CStr) -> Option<Rc<OwnedFd>> {
        let i = self.kept.iter().position(|k| k.path.as_c_str() == path)?;
        Some(self.kept.swap_remove(i).fd)
    }
}

/// Let go of a shared fd: closed through the ring by its last holder.
/// Returns whether this was the last (`world::release_file` counts it).
pub(crate) fn release_shared(ring: &mut Ring<Token>, fd: Rc<OwnedFd>) -> bool {
    let Ok(fd) = Rc::try_unwrap(fd) else { return false };
    ring.submit(Token::Discard, Sub::Close { fd });
    true
}
