//! `ring`: the one io_uring the daemon runs on, and the records of what is in
//! flight on it.
//!
//! Every operation is a record in a slab (`Op`), and its slab index is the
//! `user_data` the kernel hands back. The record owns whatever the kernel
//! may touch until the completion arrives — the buffer it reads into or
//! sends from, the path it opens, the statx it fills, the fd it reads — so a
//! request that is flushed, or a connection that hangs up, can forget an
//! operation at once: the record, not the requester, keeps its memory alive,
//! and the completion returns every resource to whoever is still there to
//! want it (`Completion`). The requester is named by a token `T` the server
//! chooses, with generations of its own, so a completion for someone gone
//! is recognised and dropped.
//!
//! Completions are collected into a list and handed out after the queue is
//! drained (`Ring::wait`); no completion handler ever runs inside another,
//! so a handler may submit freely.
//!
//! ```no_run
//! use nineagents::ring::{Ring, Sub};
//! let mut ring: Ring<u32> = Ring::new(64).unwrap();
//! ring.submit(7, Sub::Timeout { nanos: 1_000_000 });
//! let mut done = Vec::new();
//! ring.wait(&mut done).unwrap();
//! assert_eq!(done[0].token, 7);
//! ```

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use io_uring::{opcode, squeue, types, IoUring};
use slab::Slab;

/// Submission queue entries. The loop submits at most a few entries per
/// completion it handles, and a full queue is submitted and refilled
/// (`push`), so this bounds a batch, not what can be in flight.
pub const RING_ENTRIES: u32 = 256;

/// What to ask the kernel for. Each variant hands over what the kernel
/// will touch; it comes back in the `Completion`.
pub enum Sub {
    /// accept4 on a listening socket, the new fd close-on-exec.
    Accept { fd: RawFd },
    /// recv into `buf[start..]`.
    Recv { fd: RawFd, buf: Vec<u8>, start: usize },
    /// send `buf[start..]`, never raising SIGPIPE.
    Send { fd: RawFd, buf: Vec<u8>, start: usize },
    /// openat2 of `path` beneath `dirfd`.
    OpenAt2 { dirfd: RawFd, path: CString, flags: u64, resolve: u64 },
    /// statx of `path` (empty with AT_EMPTY_PATH for the fd itself).
    Statx { dirfd: RawFd, path: CString, flags: i32, mask: u32 },
    /// pread of `len` bytes at `offset` into `buf` after its current
    /// length; `fd` stays owned by the operation when given.
    Read { fd: RawFd, owned: Option<OwnedFd>, buf: Vec<u8>, len: u32, offset: u64 },
    /// close, owning the fd: it is gone for everyone at once.
    Close { fd: OwnedFd },
    /// A relative timeout.
    Timeout { nanos: u64 },
    /// connect a socket to a Unix address (a probe: does anyone answer?).
    Connect { fd: OwnedFd, path: Vec<u8> },
    /// Wait until `fd` is readable (a pidfd: the process has exited).
    PollIn { fd: RawFd },
    /// Cancel every operation on `fd` (a connection hanging up).
    CancelFd { fd: RawFd },
    /// Cancel one operation by its key.
    Cancel { key: usize },
}

/// One finished operation: who asked, what the kernel answered (a
/// negative errno or a count), and every resource handed over.
pub struct Completion<T> {
    pub token: T,
    pub result: i32,
    pub buf: Vec<u8>,
    pub fd: Option<OwnedFd>,
    pub statx: Option<Box<libc::statx>>,
}

/// An operation in flight: the requester's token and everything the
/// kernel may be reading or writing until its completion.
struct Op<T> {
    token: T,
    buf: Vec<u8>,
    fd: Option<OwnedFd>,
    path: Option<CString>,
    statx: Option<Box<libc::statx>>,
    how: Option<Box<types::OpenHow>>,
    timespec: Option<Box<types::Timespec>>,
    sockaddr: Option<Box<libc::sockaddr_un>>,
    /// For a read: the length `buf` had when the read was asked, so the
    /// completion can cover exactly the bytes the kernel wrote.
    read_at: Option<usize>,
}

pub struct Ring<T> {
    uring: IoUring,
    ops: Slab<Op<T>>,
}

impl<T: Copy> Ring<T> {
    pub fn new(entries: u32) -> io::Result<Self> {
        Ok(Ring { uring: IoUring::new(entries)?, ops: Slab::new() })
    }

    /// Operations submitted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.ops.len()
    }

    /// Queue one operation; it reaches the kernel at the next `wait`.
    /// Returns the operation's key (for `Sub::Cancel`).
    pub fn submit(&mut self, token: T, sub: Sub) -> usize {
        let entry = self.ops.vacant_entry();
        let key = entry.key();
        let mut op = Op {
            token,
            buf: Vec::new(),
            fd: None,
            path: None,
            statx: None,
            how: None,
            timespec: None,
            sockaddr: None,
            read_at: None,
        };
        let sqe = prepare(&mut op, sub).user_data(key as u64);
        entry.insert(op);
        self.push(&sqe);
        key
    }

    fn push(&mut self, sqe: &squeue::Entry) {
        loop {
            // SAFETY: every pointer in the entry points into the `Op`
            // record just stored in the slab (a Vec's heap buffer, a Box or
            // a CString), which is removed only when the kernel's
            // completion for this entry arrives, so the memory outlives the
            // kernel's use of it.
            if unsafe { self.uring.submission().push(sqe) }.is_ok() {
                return;
            }
            // The queue is full: hand what is there to the kernel and retry.
            // An error here (EBUSY with the completion queue overflowing) is
            // retried by the next `wait`, which drains completions first.
            if self.uring.submit().is_err() {
                self.uring.submission().sync();
            }
        }
    }

    /// Submit what is queued, wait for at least one completion, and move
    /// every available completion into `out`.
    pub fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()> {
        self.wait_for(out, 1)
    }

    /// As `wait`, waiting for at least `min` completions (0: just submit
    /// and take what is there).
    pub fn wait_for(&mut self, out: &mut Vec<Completion<T>>, min: usize) -> io::Result<()> {
        loop {
            match self.uring.submit_and_wait(min) {
                Ok(_) => break,
                // A signal interrupted the wait (signals we act on arrive
                // through the signalfd, so this is only a wakeup): retry.
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The completion queue is full: drain it, the caller will
                // come back and submit.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(e),
            }
        }
        self.drain(out);
        Ok(())
    }

    /// Hand what is queued to the kernel now, without waiting: replies go
    /// out before the loop spends a slice of CPU on deferred work.
    pub fn flush(&mut self) {
        if let Err(e) = self.uring.submit() {
            log::debug!("ring: submit: {e}");
        }
    }

    /// Move every available completion into `out` without waiting.
    pub fn drain(&mut self, out: &mut Vec<Completion<T>>) {
        let done: Vec<(u64, i32)> = self.uring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (key, result) in done {
            let Some(op) = self.ops.try_remove(key as usize) else {
                log::error!("ring: completion for unknown operation {key}");
                continue;
            };
            let mut buf = op.buf;
            if let (Some(at), Ok(n)) = (op.read_at, usize::try_from(result)) {
                debug_assert!(at + n <= buf.capacity());
                // SAFETY: the kernel reported writing `n` bytes starting at
                // `at`, inside the room `prepare` reserved for the read.
                unsafe { buf.set_len(at + n.min(buf.capacity() - at)) };
            }
            out.push(Completion { token: op.token, result, buf, fd: op.fd, statx: op.statx });
        }
    }

    /// Shut down: cancel everything in flight and wait for each completion,
    /// so no buffer is freed while the kernel may still touch it. Returns
    /// the tokens of what was still in flight (for the caller's check).
    pub fn cancel_all(&mut self) -> io::Result<Vec<T>> {
        let keys: Vec<usize> = self.ops.iter().map(|(k, _)| k).collect();
        let mut tokens = Vec::with_capacity(keys.len());
        for key in keys {
            let sqe = opcode::AsyncCancel::new(key as u64).build().user_data(u64::MAX);
            self.push(&sqe);
        }
        while !self.ops.is_empty() {
            self.uring.submit_and_wait(1).or_else(|e| {
                if e.raw_os_error() == Some(libc::EINTR) {
                    Ok(0)
                } else {
                    Err(e)
                }
            })?;
            let done: Vec<u64> = self.uring.completion().map(|c| c.user_data()).collect();
            for key in done {
                if let Some(op) = self.ops.try_remove(key as usize) {
                    tokens.push(op.token);
                }
            }
        }
        Ok(tokens)
    }
}

/// Fill `op` with what the kernel will touch and build its entry.
fn prepare<T>(op: &mut Op<T>, sub: Sub) -> squeue::Entry {
    match sub {
        Sub::Accept { fd } => opcode::Accept::new(types::Fd(fd), std::ptr::null_mut(), std::ptr::null_mut())
            .flags(libc::SOCK_CLOEXEC)
            .build(),
        Sub::Recv { fd, buf, start } => {
            op.buf = buf;
            let spare = &mut op.buf[start..];
            opcode::Recv::new(types::Fd(fd), spare.as_mut_ptr(), len32(spare.len())).build()
        }
        Sub::Send { fd, buf, start } => {
            op.buf = buf;
            let rest = &op.buf[start..];
            opcode::Send::new(types::Fd(fd), rest.as_ptr(), len32(rest.len())).flags(libc::MSG_NOSIGNAL).build()
        }
        Sub::OpenAt2 { dirfd, path, flags, resolve } => {
            let how = Box::new(types::OpenHow::new().flags(flags).resolve(resolve));
            let entry = opcode::OpenAt2::new(types::Fd(dirfd), path.as_ptr(), &*how as *const _).build();
            op.path = Some(path);
            op.how = Some(how);
            entry
        }
        Sub::Statx { dirfd, path, flags, mask } => {
            // SAFETY: statx is plain old data; all-zero is a valid value.
            let mut sx: Box<libc::statx> = Box::new(unsafe { std::mem::zeroed() });
            let entry =
                opcode::Statx::new(types::Fd(dirfd), path.as_ptr(), &mut *sx as *mut libc::statx as *mut types::statx)
                    .flags(flags)
                    .mask(mask)
                    .build();
            op.path = Some(path);
            op.statx = Some(sx);
            entry
        }
        Sub::Read { fd, owned, mut buf, len, offset } => {
            let at = buf.len();
            buf.reserve(len as usize);
            op.buf = buf;
            op.fd = owned;
            op.read_at = Some(at);
            // SAFETY: `reserve` made room for `len` bytes after `at`; the
            // kernel writes them, and `drain` sets the length to cover
            // exactly the count it reports.
            let ptr = unsafe { op.buf.as_mut_ptr().add(at) };
            opcode::Read::new(types::Fd(fd), ptr, len).offset(offset).build()
        }
        Sub::Close { fd } => {
            let raw = fd.as_raw_fd();
            // The kernel closes it: forget the OwnedFd so it is not closed twice.
            std::mem::forget(fd);
            opcode::Close::new(types::Fd(raw)).build()
        }
        Sub::Timeout { nanos } => {
            let ts = Box::new(types::Timespec::new().sec(nanos / 1_000_000_000).nsec((nanos % 1_000_000_000) as u32));
            let entry = opcode::Timeout::new(&*ts as *const _).build();
            op.timespec = Some(ts);
            entry
        }
        Sub::Connect { fd, path } => {
            // SAFETY: sockaddr_un is plain old data; all-zero is valid.
            let mut sa: Box<libc::sockaddr_un> = Box::new(unsafe { std::mem::zeroed() });
            sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
            let n = path.len().min(sa.sun_path.len() - 1);
            for (d, s) in sa.sun_path.iter_mut().zip(&path[..n]) {
                *d = *s as libc::c_char;
            }
            let len = (std::mem::size_of::<libc::sa_family_t>() + n + 1) as libc::socklen_t;
            let entry =
                opcode::Connect::new(types::Fd(fd.as_raw_fd()), &*sa as *const _ as *const libc::sockaddr, len).build();
            op.fd = Some(fd);
            op.sockaddr = Some(sa);
            entry
        }
        Sub::PollIn { fd } => opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build(),
        Sub::CancelFd { fd } => opcode::AsyncCancel2::new(types::CancelBuilder::fd(types::Fd(fd)).all()).build(),
        Sub::Cancel { key } => opcode::AsyncCancel::new(key as u64).build(),
    }
}

/// io_uring lengths are u32; our buffers are bounded far below that (the
/// largest is one msize), so saturating is never reached in practice and
/// would only shorten an operation, never overrun a buffer.
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
