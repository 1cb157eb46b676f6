//! A probe: one look at a file on disk through the ring — open it beneath
//! its harness's base, statx it, and (for a probe that only looks) close it
//! again — and `Batch`, many probes of one job in flight together.
//!
//! This is the path resolver every view shares. The base is configuration
//! and is opened with ordinary resolution (it may be a symlink); the path
//! beneath it is opened with `openat2` and `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, so the kernel refuses,
//! atomically, any step out of the base and any symlink at any depth —
//! including a directory swapped for a symlink between a walk and a read.
//! A look opens with `O_PATH`, which never blocks and never runs a
//! device's open; a read opens with `O_RDONLY | O_NONBLOCK | O_NOFOLLOW`,
//! and only after a look said the file is regular or a directory. A
//! regular file with more than one hard link is reported absent, as a
//! symlink is, unless `--allow-hard-links`: its other name may be any file
//! of the user's.
//!
//! A probe is a small state machine driven by its completions; the job that
//! owns it keeps its fds until the last completion, so a flushed request's
//! fds are closed by the ring, never under it.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use crate::meta::{Meta, STATX_MASK};
use crate::ring::{Completion, Sub};
use crate::tree::Backing;

use super::ops::{release_shared, Ops, Token};

const RESOLVE_SAFE: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;

/// The errno a probe reports for a regular file with other names: "too
/// many links", treated like a symlink's ELOOP — not there.
pub(crate) const HARD_LINKED: i32 = libc::EMLINK;

/// Probes one job keeps in flight at once: enough to list a directory at
/// the disk's pace, few enough that one listing never fills the ring.
pub(crate) const BATCH_IN_FLIGHT_MAX: usize = 128;
const _: () =
    assert!(BATCH_IN_FLIGHT_MAX < crate::ring::RING_ENTRIES as usize, "one batch never fills the submission queue");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Look only: O_PATH, closed again.
    Look,
    /// Open for reading and keep the fd.
    Read,
    /// Open, check it is a regular file, read its first bytes (at most
    /// the given count) into `data`, close: a registry record, a /proc
    /// file, a transcript's head.
    Slurp(u32),
    /// As `Slurp`, the last bytes: a transcript's tail.
    SlurpTail(u32),
}

pub(crate) enum Target {
    /// A path beneath a harness base.
    Beneath(Backing),
    /// One name in a directory the job holds open (a listing's entries):
    /// statx with AT_SYMLINK_NOFOLLOW, no traversal.
    At { dirfd: RawFd, name: CString },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    OpenBase,
    OpenRel,
    Statx,
    ReadData,
    Done,
}

pub(crate) struct Probe {
    target: Target,
    kind: Kind,
    phase: Phase,
    /// Whether a regular file with other names may be served.
    hard_links: bool,
    /// The base directory, held until the openat2 beneath it has completed
    /// (io_uring may run that open on a worker after later entries, and it
    /// resolves the dirfd number only then); shared with `Bases`.
    base: Option<Rc<OwnedFd>>,
    /// The opened file, kept for `Kind::Read`.
    pub fd: Option<OwnedFd>,
    /// What the probe found: the file's meta, or the errno that stopped it.
    pub result: Option<Result<Meta, i32>>,
    /// For `Kind::Slurp`: the bytes read.
    pub data: Vec<u8>,
}

impl Probe {
    pub(crate) fn new(target: Target, kind: Kind, hard_links: bool) -> Self {
        Probe { target, kind, phase: Phase::Idle, hard_links, base: None, fd: None, result: None, data: Vec::new() }
    }

    pub(crate) fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// What it found; a probe that never ran found nothing.
    pub(crate) fn found(&self) -> Result<Meta, i32> {
        self.result.unwrap_or(Err(libc::ENOENT))
    }

    /// Submit the first operation as the job's op `op`.
    pub(crate) fn start(&mut self, ops: &mut Ops, op: u32) {
        match &self.target {
            Target::Beneath(b) => {
                // A look at the base itself opens it afresh (and keeps that):
                // whether a harness is there at all is never a window old.
                if let Some(base) = ops.bases.get(&b.base).filter(|_| b.rel.as_bytes() != b".") {
                    return self.open_beneath(ops, op, base);
                }
                let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
                let path = b.base.clone();
                ops.submit(op, Sub::OpenAt2 { dirfd: libc::AT_FDCWD, path, flags, resolve: 0 });
                self.phase = Phase::OpenBase;
            }
            Target::At { dirfd, name } => {
                let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT;
                ops.submit(op, Sub::Statx { dirfd: *dirfd, path: name.clone(), flags, mask: STATX_MASK });
                self.phase = Phase::Statx;
            }
        }
    }

    /// Advance on a completion. Returns true when the probe is done.
    pub(crate) fn step(&mut self, ops: &mut Ops, op: u32, mut c: Completion<Token>) -> bool {
        match self.phase {
            Phase::OpenBase => self.base_opened(ops, op, c.result, c.fd.take()),
            Phase::OpenRel => self.rel_opened(ops, op, c.result, c.fd.take()),
            Phase::Statx => self.statxed(ops, op, c),
            Phase::ReadData => self.data_read(ops, c),
            Phase::Idle | Phase::Done => {}
        }
        self.done()
    }

    /// Give back what it holds: its fds, closed through the ring.
    pub(crate) fn release(self, ops: &mut Ops) {
        if let Some(base) = self.base {
            release_shared(ops.ring, base);
        }
        if let Some(fd) = self.fd {
            ops.close(fd);
        }
    }

    fn finish(&mut self, ops: &mut Ops, result: Result<Meta, i32>) {
        if result.is_err() || self.kind != Kind::Read {
            if let Some(fd) = self.fd.take() {
                ops.close(fd);
            }
        }
        self.result = Some(result);
        self.phase = Phase::Done;
    }

    fn base_opened(&mut self, ops: &mut Ops, op: u32, result: i32, fd: Option<OwnedFd>) {
        let Target::Beneath(b) = &self.target else {
            unreachable!("Phase::OpenBase is entered only from a Beneath target (`start`)")
        };
        let Some(base) = fd else {
            if let Some(kept) = ops.bases.forget(&b.base) {
                release_shared(ops.ring, kept);
            }
            return self.finish(ops, Err(-result.min(-1)));
        };
        let base = Rc::new(base);
        if let Some(old) = ops.bases.keep(&b.base, &base) {
            release_shared(ops.ring, old);
        }
        ops.bases.arm(ops.ring);
        self.open_beneath(ops, op, base);
    }

    /// Open the target beneath its base.
    fn open_beneath(&mut self, ops: &mut Ops, op: u32, base: Rc<OwnedFd>) {
        let Target::Beneath(b) = &self.target else {
            unreachable!("called only with a base just opened for a Beneath target")
        };
        let flags = match self.kind {
            Kind::Look => libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            Kind::Read | Kind::Slurp(_) | Kind::SlurpTail(_) => {
                libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC
            }
        } as u64;
        let (dirfd, path) = (base.as_raw_fd(), b.rel.clone());
        ops.submit(op, Sub::OpenAt2 { dirfd, path, flags, resolve: RESOLVE_SAFE });
        self.base = Some(base);
        self.phase = Phase::OpenRel;
    }

    fn rel_opened(&mut self, ops: &mut Ops, op: u32, result: i32, fd: Option<OwnedFd>) {
        if let Some(base) = self.base.take() {
            release_shared(ops.ring, base);
        }
        let Some(fd) = fd else { return self.finish(ops, Err(-result.min(-1))) };
        let flags = libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW;
        let dirfd = fd.as_raw_fd();
        self.fd = Some(fd);
        ops.submit(op, Sub::Statx { dirfd, path: CString::default(), flags, mask: STATX_MASK });
        self.phase = Phase::Statx;
    }

    fn statxed(&mut self, ops: &mut Ops, op: u32, c: Completion<Token>) {
        if c.result < 0 {
            return self.finish(ops, Err(-c.result));
        }
        let meta = Meta::from_statx(c.statx.as_deref().expect("a statx completion carries its buffer"));
        // openat2 hands back an O_PATH fd on a trailing symlink when asked
        // for O_PATH|O_NOFOLLOW; a symlink is never served, so it is simply
        // not there.
        if meta.is_symlink() {
            return self.finish(ops, Err(libc::ELOOP));
        }
        if meta.is_hard_linked() && !self.hard_links {
            return self.finish(ops, Err(HARD_LINKED));
        }
        let slurp = match self.kind {
            Kind::Slurp(max) => Some((max, 0)),
            Kind::SlurpTail(max) => Some((max, meta.size.saturating_sub(max as u64))),
            Kind::Look | Kind::Read => None,
        };
        if let (Some((max, offset)), Some(fd)) = (slurp, &self.fd) {
            if !meta.is_regular() {
                return self.finish(ops, Err(libc::EINVAL));
            }
            let (fd, buf) = (fd.as_raw_fd(), Vec::with_capacity(max as usize));
            let expect = meta.size.saturating_sub(offset).min(max as u64) as u32;
            ops.submit(op, Sub::Read { fd, owned: None, buf, len: max, offset, expect });
            self.result = Some(Ok(meta));
            self.phase = Phase::ReadData;
            return;
        }
        self.finish(ops, Ok(meta));
    }

    fn data_read(&mut self, ops: &mut Ops, c: Completion<Token>) {
        let meta = self.result.take().expect("a slurp reads after its statx");
        if c.result < 0 {
            return self.finish(ops, Err(-c.result));
        }
        self.data = c.buf;
        self.finish(ops, meta);
    }
}

/// Is an errno a probe reports one that means "not there" — as opposed to
/// "could not look" (out of fds, out of memory, an i/o error), which must
/// reach the client as itself and never as not-found?
pub(crate) fn means_absent(errno: i32) -> bool {
    matches!(errno, libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EXDEV | HARD_LINKED)
}

/// Many probes of one job: started as the ring has room, at most
/// `BATCH_IN_FLIGHT_MAX` in flight, each completion routed by its index
/// (the job's op number).
#[derive(Default)]
pub(crate) struct Batch {
    pub probes: Vec<Probe>,
    started: usize,
    done: usize,
    in_flight: usize,
}

/// Where a batch stands after a start or a completion.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Every probe is done.
    Complete,
    /// Probes are in flight; a completion will come.
    Running,
    /// Nothing of this batch is in flight and the ring had no room: the
    /// job must yield a turn and call `pump` again.
    Stalled,
}

impl Batch {
    pub(crate) fn new(probes: Vec<Probe>) -> Batch {
        Batch { probes, started: 0, done: 0, in_flight: 0 }
    }

    pub(crate) fn one(probe: Probe) -> Batch {
        Batch::new(vec![probe])
    }

    pub(crate) fn push(&mut self, probe: Probe) {
        self.probes.push(probe);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Start as many probes as the ring and the per-job bound allow.
    pub(crate) fn pump(&mut self, ops: &mut Ops) -> Progress {
        while self.started < self.probes.len() && self.in_flight < BATCH_IN_FLIGHT_MAX && ops.room() > 0 {
            let i = self.started;
            self.probes[i].start(ops, i as u32);
            self.started += 1;
            self.in_flight += 1;
        }
        self.progress()
    }

    /// A completion for probe `op`; starts more as room frees.
    pub(crate) fn on_done(&mut self, ops: &mut Ops, op: u32, c: Completion<Token>) -> Progress {
        let Some(p) = self.probes.get_mut(op as usize) else { return self.progress() };
        if p.step(ops, op, c) {
            self.done += 1;
            self.in_flight -= 1;
        }
        self.pump(ops)
    }

    fn progress(&self) -> Progress {
        if self.done == self.probes.len() {
            Progress::Complete
        } else if self.in_flight > 0 {
            Progress::Running
        } else {
            Progress::Stalled
        }
    }

    /// Give back every probe's fds.
    pub(crate) fn release(self, ops: &mut Ops) {
        for p in self.probes {
            p.release(ops);
        }
    }

    /// A batch of one probe, done: what it found and the fd it opened (a
    /// `Kind::Read`'s), the rest given back.
    pub(crate) fn into_one(mut self, ops: &mut Ops) -> (Result<Meta, i32>, Option<OwnedFd>) {
        let Some(p) = self.probes.first_mut() else { return (Err(libc::ENOENT), None) };
        let (found, fd) = (p.found(), p.fd.take());
        self.release(ops);
        (found, fd)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ring::{Ring, RING_ENTRIES};
    use crate::server::ops::Bases;
    use crate::server::ops::JOB_OPS_MAX;

    /// How long a test waits for its completions before it fails.
    const DEADLINE: Duration = Duration::from_secs(20);

    /// A job's view of the ring, as `World::cx` makes it.
    struct Job {
        ring: Ring<Token>,
        in_flight: u32,
        job_ops: usize,
        bases: Bases,
    }

    impl Job {
        fn new(job_ops: usize) -> Job {
            Job { ring: Ring::new(RING_ENTRIES).unwrap(), in_flight: 0, job_ops, bases: Bases::new(Duration::ZERO) }
        }

        fn ops(&mut self) -> Ops<'_> {
            Ops {
                ring: &mut self.ring,
                key: 0,
                gen: 0,
                in_flight: &mut self.in_flight,
                job_ops: &mut self.job_ops,
                bases: &mut self.bases,
            }
        }

        /// Wait for at least one completion and hand each to `batch` as
        /// `park::on_op` does (the counts go down first); the progress
        /// after each, and the most probes seen in flight.
        fn complete(&mut self, batch: &mut Batch) -> (Progress, usize) {
            let mut done = Vec::new();
            let deadline = Instant::now() + DEADLINE;
            while done.is_empty() {
                assert!(Instant::now() < deadline, "no completion came back");
                self.ring.wait_for(&mut done, 1).unwrap();
            }
            let (mut progress, mut most) = (Progress::Running, 0);
            for c in done {
                let Token::Req { op, .. } = c.token else { panic!("not a job's operation: {:?}", c.token) };
                self.in_flight -= 1;
                self.job_ops -= 1;
                progress = batch.on_done(&mut self.ops(), op, c);
                most = most.max(batch.in_flight).max(self.ring.in_flight());
            }
            (progress, most)
        }
    }

    /// `n` looks at `/` itself, each a single statx.
    fn looks(root: &OwnedFd, n: usize) -> Batch {
        let probe = || Probe::new(Target::At { dirfd: root.as_raw_fd(), name: c".".into() }, Kind::Look, false);
        Batch::new((0..n).map(|_| probe()).collect())
    }

    fn root() -> OwnedFd {
        std::fs::File::open("/").unwrap().into()
    }

    #[test]
    fn a_batch_starts_only_what_the_ring_has_room_for_and_stalls_with_none() {
        let root = root();
        let mut job = Job::new(JOB_OPS_MAX - 3);
        let mut batch = looks(&root, 10);
        assert_eq!(batch.pump(&mut job.ops()), Progress::Running);
        assert_eq!((batch.in_flight, job.ring.in_flight(), job.job_ops), (3, 3, JOB_OPS_MAX));
        // Other jobs take the room as ours come back.
        job.job_ops += 3;
        let mut progress = Progress::Running;
        while batch.in_flight > 0 {
            progress = job.complete(&mut batch).0;
        }
        assert_eq!(progress, Progress::Stalled, "nothing in flight, no room: the job must yield");
        assert_eq!((batch.done, batch.in_flight, job.ring.in_flight(), job.ops().room()), (3, 0, 0, 0));
        assert_eq!(batch.pump(&mut job.ops()), Progress::Stalled, "still no room");
        job.job_ops -= 1;
        assert_eq!(batch.pump(&mut job.ops()), Progress::Running, "room for one starts one");
        assert_eq!(batch.in_flight, 1);
    }

    #[test]
    fn a_batch_with_room_never_has_more_than_its_bound_in_flight() {
        const PROBES: usize = 1000;
        let root = root();
        let mut job = Job::new(0);
        let mut batch = looks(&root, PROBES);
        assert_eq!(batch.pump(&mut job.ops()), Progress::Running);
        assert_eq!((batch.in_flight, job.ring.in_flight()), (BATCH_IN_FLIGHT_MAX, BATCH_IN_FLIGHT_MAX));
        let mut most = batch.in_flight;
        loop {
            let (progress, seen) = job.complete(&mut batch);
            most = most.max(seen);
            if progress == Progress::Complete {
                break;
            }
            assert_eq!(progress, Progress::Running);
        }
        assert_eq!(most, BATCH_IN_FLIGHT_MAX, "at most the bound in flight, and the bound reached");
        assert_eq!((job.job_ops, job.in_flight, job.ring.in_flight()), (0, 0, 0));
        assert!(batch.probes.iter().all(|p| p.done() && p.found().is_ok_and(|m| m.is_dir())));
    }
}
