//! The ring as the server's jobs see it: who an operation is for
//! (`Token`, naming a parked record by its `Id`), and the handle a job
//! submits through (`Ops`), which tags every operation with the job's
//! record and counts it, so the record is kept until the kernel is done
//! with it, and which holds all jobs together to `JOB_OPS_MAX` operations
//! in flight.

use std::os::fd::OwnedFd;

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
    /// A trim that was due too soon after the last (`trim`).
    Trim,
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
