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
//! so a handler may submit freely. A full submission queue is handed to the
//! kernel at once; a kernel refusing entries because completions are
//! waiting has them moved into the ring's own queue, which the next `wait`
//! hands out first — so even then no handler runs inside `submit`, and
//! nothing spins (TigerBeetle's io_uring loop works the same way).
//!
//! The ring is the owner of last resort: dropped on any path — a clean
//! shutdown, an error out of the loop, a panic unwinding through it — it
//! cancels what is in flight and waits for every completion before a record
//! is freed, as tokio-uring's driver does; if even that wait fails, the
//! records are leaked, never freed under the kernel.
//!
//! ```ignore
//! // (the module is crate-internal; this is how the server uses it)
//! let mut ring: Ring<u32> = Ring::new(64).unwrap();
//! ring.submit(7, Sub::Timeout { nanos: 1_000_000 });
//! let mut done = Vec::new();
//! ring.wait(&mut done).unwrap();
//! assert_eq!(done[0].token, 7);
//! ```

use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use io_uring::{opcode, squeue, types, IoUring};
use slab::Slab;

use crate::mapped::Mapped;

/// Submission queue entries. The loop submits at most a few entries per
/// completion it handles, and a full queue is submitted and refilled
/// (`push`), so this bounds a batch, not what can be in flight.
pub(crate) const RING_ENTRIES: u32 = 256;
const _: () = assert!(RING_ENTRIES.is_power_of_two(), "io_uring rounds entries to a power of two");

/// Reads expected to copy this much or more run on a kernel worker
/// (`IOSQE_ASYNC`): a page-cache read of a megabyte takes a few hundred
/// microseconds to copy, which inline would be spent inside the loop's
/// submit. Smaller reads (records, heads, tails, small files) are cheaper
/// inline than a worker's hand-off.
pub(crate) const READ_ASYNC_BYTES_MIN: usize = 64 * 1024;

/// Whether a read of `len` bytes expected to copy `expect` of them is
/// handed to a kernel worker (`READ_ASYNC_BYTES_MIN`).
pub(crate) fn copied_by_a_worker(len: u32, expect: u32) -> bool {
    expect.min(len) as usize >= READ_ASYNC_BYTES_MIN
}

/// What to ask the kernel for. Each variant hands over what the kernel
/// will touch; it comes back in the `Completion`.
pub(crate) enum Sub {
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
    /// length; `fd` stays owned by the operation when given. `expect` is
    /// what it is expected to copy (at most `len`; less when the file is
    /// known to end sooner), which decides `READ_ASYNC_BYTES_MIN`.
    Read { fd: RawFd, owned: Option<OwnedFd>, buf: Vec<u8>, len: u32, offset: u64, expect: u32 },
    /// Bring a mapping's pages in (madvise `MADV_POPULATE_READ`, always
    /// on a kernel worker): a disk read, if any, is the worker's, never
    /// the loop's. The mapping comes back in the completion.
    Populate { map: Mapped },
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
    /// Nothing: completes at once (the ring's tests fill queues with it).
    #[cfg(test)]
    Nop,
}

/// One finished operation: who asked, what the kernel answered (a
/// negative errno or a count), and every resource handed over. An
/// operation that makes an fd (openat2, accept) hands it over as `fd`,
/// owned, so a completion nobody wants any more closes it when dropped.
pub(crate) struct Completion<T> {
    pub token: T,
    pub result: i32,
    pub buf: Vec<u8>,
    pub fd: Option<OwnedFd>,
    pub statx: Option<Box<libc::statx>>,
    pub map: Option<Mapped>,
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
    map: Option<Mapped>,
    /// For a read: the length `buf` had when the read was asked, so the
    /// completion can cover exactly the bytes the kernel wrote.
    read_at: Option<usize>,
    /// A non-negative result is a new fd (openat2, accept).
    makes_fd: bool,
}

pub(crate) struct Ring<T> {
    uring: IoUring,
    ops: Slab<Op<T>>,
    /// Completions taken from the kernel to make room for submissions
    /// (`make_room`): finished, their records gone, handed out by the next
    /// `wait` or `drain` so that no handler runs inside `submit`.
    completed: VecDeque<Completion<T>>,
    /// The kernel dropped completions (EBADR): some operations will never
    /// report back, so none can be known finished.
    lost: bool,
}

impl<T> Ring<T> {
    pub(crate) fn new(entries: u32) -> io::Result<Self> {
        // Completions' task work runs when the loop enters the kernel for
        // events, never by interrupting it (DEFER_TASKRUN, Linux 6.1, which
        // needs SINGLE_ISSUER: only the loop's thread submits). Without it
        // every client's send and receive that completed cut into whatever
        // the loop was doing with a reschedule IPI: a third of the loop's
        // time while it indexed beside a client's stats (bench/README,
        // "Mapped windows and deferred task work"). TASKRUN_FLAG tells the loop when such work
        // waits. An older kernel gets the plain ring.
        let uring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .build(entries)
            .or_else(|e| {
                log::info!("ring: no deferred task work ({e}); a plain ring");
                IoUring::new(entries)
            })?;
        Ok(Ring { uring, ops: Slab::new(), completed: VecDeque::new(), lost: false })
    }

    /// Let the kernel run at most `n` workers for this ring's operations
    /// that cannot complete inline (statx, openat2, populates, large
    /// reads), and as many for the rest (`IORING_REGISTER_IOWQ_MAX_WORKERS`,
    /// Linux 5.15). Without a cap it runs up to four a CPU, and a listing's
    /// 10,000 looks kept all of them runnable beside the loop: other
    /// clients' answers waited for a CPU (bench/README, "Kernel workers").
    pub(crate) fn limit_workers(&self, n: u32) -> io::Result<()> {
        self.uring.submitter().register_iowq_max_workers(&mut [n, n])
    }

    /// The kernel's caps on this ring's workers: [bounded, unbounded].
    #[cfg(test)]
    pub(crate) fn worker_limits(&self) -> io::Result<[u32; 2]> {
        let mut caps = [0, 0];
        self.uring.submitter().register_iowq_max_workers(&mut caps)?;
        Ok(caps)
    }

    /// Give back the records' table past the last one in use (after a
    /// burst of connections, each with a receive in flight).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.ops.shrink_to_fit();
    }

    /// Operations submitted and not yet completed.
    pub(crate) fn in_flight(&self) -> usize {
        self.ops.len()
    }

    /// The operations in flight: each one's key and token. With the two
    /// below, a test completes operations itself on a ring it never
    /// enters, so the kernel runs none of them (`server::tests`).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> Vec<(usize, &T)> {
        self.ops.iter().map(|(k, op)| (k, &op.token)).collect()
    }

    /// The buffer operation `key` hands the kernel (a receive's, to put
    /// bytes in; a send's, to read what it sends).
    #[cfg(test)]
    pub(crate) fn pending_buf(&mut self, key: usize) -> &mut Vec<u8> {
        &mut self.ops[key].buf
    }

    /// Operation `key` completed with `result`, as the kernel would say.
    /// (A result of an fd-making operation must be an fd the test owns.)
    #[cfg(test)]
    pub(crate) fn complete_by_hand(&mut self, key: usize, result: i32) -> Option<Completion<T>> {
        finish(&mut self.ops, key as u64, result)
    }

    /// Queue one operation; it reaches the kernel at the next `wait` (or
    /// now, when the submission queue is full). Returns the operation's key
    /// (for `Sub::Cancel`).
    pub(crate) fn submit(&mut self, token: T, sub: Sub) -> usize {
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
            map: None,
            read_at: None,
            makes_fd: false,
        };
        let sqe = prepare(&mut op, sub).user_data(key as u64);
        entry.insert(op);
        if let Err(e) = self.push(&sqe) {
            // The kernel takes no more entries. This one never reached it, so
            // its record can go now, and its requester hears the error.
            log::error!("ring: submitting: {e}");
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            self.completed.extend(finish(&mut self.ops, key as u64, -errno));
        }
        key
    }

    /// Put one entry on the submission queue, handing the queue to the
    /// kernel first when it is full.
    fn push(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every pointer in an entry `prepare` built points into
            // heap memory owned by the `Op` record already stored in the slab
            // (a Vec's buffer, a Box or a CString), which is removed only when
            // the kernel's completion for the entry arrives, and never freed
            // while the kernel may still hold the entry (`Drop` waits, or
            // leaks). The ring's own cancellations hold no pointers.
            if unsafe { self.uring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            // Full: the kernel takes the queued entries, making room.
            self.enter(0)?;
        }
    }

    /// Submit what is queued and wait for `want` completions. A signal's
    /// interruption is retried; a kernel refusing entries (EBUSY: its
    /// completion queue is overflowing; EAGAIN: out of request memory) has
    /// room made for it (`make_room`) and is asked again, never in a spin.
    fn enter(&mut self, mut want: usize) -> io::Result<()> {
        loop {
            let Err(e) = self.uring.submit_and_wait(want) else { return Ok(()) };
            match e.raw_os_error() {
                // Signals we act on arrive through the signalfd: this is only
                // a wakeup.
                Some(libc::EINTR) => {}
                Some(libc::EBUSY | libc::EAGAIN) => want = want.saturating_sub(self.make_room()?),
                Some(libc::EBADR) => {
                    self.lost = true;
                    return Err(e);
                }
                _ => return Err(e),
            }
        }
    }

    /// The kernel refused entries because completions are waiting: move
    /// those in the completion queue to `completed`, which lets the kernel
    /// flush its overflow into the room made, and count them. With none
    /// there, block for one without submitting (asking again at once would
    /// spin).
    fn make_room(&mut self) -> io::Result<usize> {
        let taken = self.reap();
        if taken > 0 {
            return Ok(taken);
        }
        loop {
            let flags = io_uring::EnterFlags::GETEVENTS.bits();
            // SAFETY: io_uring_enter with nothing to submit, no argument
            // pointer and no flag giving one a meaning: the kernel touches
            // only the rings `IoUring` mapped and owns.
            match unsafe { self.uring.submitter().enter::<libc::sigset_t>(0, 1, flags, None) } {
                Ok(_) => return Ok(self.reap()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => {
                    self.lost |= e.raw_os_error() == Some(libc::EBADR);
                    return Err(e);
                }
            }
        }
    }

    /// Move every completion in the kernel's queue to `completed`; returns
    /// how many entries were taken off the queue.
    fn reap(&mut self) -> usize {
        let mut taken = 0;
        for cqe in self.uring.completion() {
            taken += 1;
            self.completed.extend(finish(&mut self.ops, cqe.user_data(), cqe.result()));
        }
        taken
    }

    /// Submit what is queued, wait for at least one completion, and move
    /// every available completion into `out`.
    #[cfg(test)]
    pub(crate) fn wait(&mut self, out: &mut Vec<Completion<T>>) -> io::Result<()> {
        self.wait_for(out, 1)
    }

    /// As `wait`, waiting for at least `min` completions (0: just submit
    /// and take what is there). Completions already taken from the kernel
    /// count toward `min`.
    pub(crate) fn wait_for(&mut self, out: &mut Vec<Completion<T>>, min: usize) -> io::Result<()> {
        self.enter(min.saturating_sub(self.completed.len()))?;
        self.drain(out);
        Ok(())
    }

    /// Hand what is queued to the kernel now, without waiting: replies go
    /// out before the loop spends a slice of CPU on deferred work.
    pub(crate) fn flush(&mut self) {
        // Nothing queued, nothing to say: with deferred task work an enter
        // that does not wait does no work but the system call.
        if self.uring.submission().is_empty() {
            return;
        }
        if let Err(e) = self.enter(0) {
            log::debug!("ring: submit: {e}");
        }
    }

    /// Move every available completion into `out` without waiting.
    pub(crate) fn drain(&mut self, out: &mut Vec<Completion<T>>) {
        out.extend(self.completed.drain(..));
        for cqe in self.uring.completion() {
            out.extend(finish(&mut self.ops, cqe.user_data(), cqe.result()));
        }
    }

    /// Shut down: cancel everything in flight and wait for each completion,
    /// so no buffer is freed while the kernel may still touch it. Returns
    /// the tokens of what was still in flight or not yet handed out (for the
    /// caller's check). Some operations cannot be cancelled (a read of a
    /// regular file, a close); they are waited for.
    pub(crate) fn cancel_all(&mut self) -> io::Result<Vec<T>> {
        if self.lost {
            return Err(io::Error::from_raw_os_error(libc::EBADR));
        }
        let keys: Vec<usize> = self.ops.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.push(&opcode::AsyncCancel::new(key as u64).build().user_data(OWN_CANCEL))?;
        }
        let mut tokens: Vec<T> = self.completed.drain(..).map(|c| c.token).collect();
        while !self.ops.is_empty() {
            self.enter(1)?;
            self.reap();
            tokens.extend(self.completed.drain(..).map(|c| c.token));
        }
        Ok(tokens)
    }
}

/// Dropped on any path — a clean return, an error out of the loop, a panic
/// unwinding through it — the ring cancels what is in flight and waits for
/// every completion before its records (the memory the kernel writes) are
/// freed. If even that wait fails, the records are leaked, never freed under
/// the kernel.
impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        match self.cancel_all() {
            Ok(left) => {
                log::debug!("ring: dropped after waiting for {} operation(s)", left.len());
                #[cfg(test)]
                tests::WAITED_ON_DROP.with(|n| n.set(n.get() + left.len()));
            }
            Err(e) => {
                log::error!(
                    "ring: dropped with {} operation(s) the kernel may still touch ({e}): leaking their memory",
                    self.ops.len()
                );
                std::mem::forget(std::mem::take(&mut self.ops));
            }
        }
    }
}

/// The `user_data` of the ring's own cancellations (`cancel_all`): no slab
/// key reaches it, and its completions are no one's.
const OWN_CANCEL: u64 = u64::MAX;

/// The completion of the operation `key`, its record removed from the slab.
/// `None` for the ring's own cancellations, and for a key not in flight.
fn finish<T>(ops: &mut Slab<Op<T>>, key: u64, result: i32) -> Option<Completion<T>> {
    if key == OWN_CANCEL {
        return None;
    }
    let Some(op) = ops.try_remove(key as usize) else {
        log::error!("ring: completion for unknown operation {key}");
        return None;
    };
    let mut buf = op.buf;
    if let (Some(at), Ok(n)) = (op.read_at, usize::try_from(result)) {
        debug_assert!(at + n <= buf.capacity());
        // SAFETY: the kernel reported writing `n` bytes starting at `at`,
        // inside the room `prepare` reserved for the read.
        unsafe { buf.set_len(at + n.min(buf.capacity() - at)) };
    }
    let fd = match op.makes_fd && result >= 0 {
        // SAFETY: a non-negative result of an openat2 or an accept is a new
        // fd that nothing else owns.
        true => Some(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(result) }),
        false => op.fd,
    };
    Some(Completion { token: op.token, result, buf, fd, statx: op.statx, map: op.map })
}

/// Fill `op` with what the kernel will touch and build its entry.
///
/// (Longer than most: one arm per operation, each small, side by side so
/// what each keeps alive for the kernel can be compared at a glance.)
fn prepare<T>(op: &mut Op<T>, sub: Sub) -> squeue::Entry {
    match sub {
        Sub::Accept { fd } => {
            op.makes_fd = true;
            opcode::Accept::new(types::Fd(fd), std::ptr::null_mut(), std::ptr::null_mut())
                .flags(libc::SOCK_CLOEXEC)
                .build()
        }
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
            op.makes_fd = true;
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
        Sub::Read { fd, owned, mut buf, len, offset, expect } => {
            let at = buf.len();
            buf.reserve(len as usize);
            op.buf = buf;
            op.fd = owned;
            op.read_at = Some(at);
            // `reserve` made room for `len` bytes past the length `at`: the
            // kernel writes them, and `finish` sets the length to cover
            // exactly the count it reports.
            let spare = op.buf.spare_capacity_mut();
            debug_assert!(spare.len() >= len as usize);
            let entry = opcode::Read::new(types::Fd(fd), spare.as_mut_ptr().cast::<u8>(), len).offset(offset).build();
            // A large read is copied by a kernel worker, not inline while
            // the loop submits: the loop's turn stays short however many
            // megabytes clients read, and others' requests go on.
            if copied_by_a_worker(len, expect) {
                entry.flags(squeue::Flags::ASYNC)
            } else {
                entry
            }
        }
        Sub::Populate { map } => {
            let (addr, len) = map.pages();
            op.map = Some(map);
            opcode::Madvise::new(addr.cast(), len as libc::off_t, libc::MADV_POPULATE_READ).build()
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
        #[cfg(test)]
        Sub::Nop => opcode::Nop::new().build(),
    }
}

/// io_uring lengths are u32; our buffers are bounded far below that (the
/// largest is one msize), so saturating is never reached in practice and
/// would only shorten an operation, never overrun a buffer.
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
