//! A probe: one look at a file on disk through the ring — open it beneath
//! its harness's base, statx it, and (for a probe that only looks) close it
//! again.
//!
//! This is the path resolver every view shares. The base is configuration
//! and is opened with ordinary resolution (it may be a symlink); the path
//! beneath it is opened with `openat2` and `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, so the kernel refuses,
//! atomically, any step out of the base and any symlink at any depth —
//! including a directory swapped for a symlink between a walk and a read.
//! A look opens with `O_PATH`, which never blocks and never runs a
//! device's open; a read opens with `O_RDONLY | O_NONBLOCK | O_NOFOLLOW`,
//! and only after a look said the file is regular or a directory.
//!
//! A probe is a small state machine driven by its completions
//! (`Probe::start`, `Probe::step`); the request that owns it keeps its fds
//! until the last completion, so a flushed request's fds are closed by the
//! ring, never under it.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::ring::{Completion, Ring, Sub};
use crate::tree::{Backing, Meta};

use super::Token;

const RESOLVE_SAFE: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
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

pub enum Target {
    /// A path beneath a harness base.
    Beneath(Backing),
    /// One name in a directory the request holds open (a listing's
    /// entries): statx with AT_SYMLINK_NOFOLLOW, no traversal.
    At { dirfd: RawFd, name: CString },
    /// Nothing: a turn of the loop (a gathering cut into rounds yields).
    Yield,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    OpenBase,
    OpenRel,
    Statx,
    ReadData,
    Yielded,
    Done,
}

pub struct Probe {
    target: Target,
    kind: Kind,
    phase: Phase,
    /// Whether `start` has run.
    pub started: bool,
    /// The base directory, held until the openat2 beneath it has completed
    /// (io_uring may run that open on a worker after later entries, and it
    /// resolves the dirfd number only then).
    base: Option<OwnedFd>,
    /// The opened file, kept for `Kind::Read`.
    pub fd: Option<OwnedFd>,
    /// What the probe found: the file's meta, or the errno that stopped it.
    pub result: Option<Result<Meta, i32>>,
    /// For `Kind::Slurp`: the bytes read.
    pub data: Vec<u8>,
}

impl Probe {
    pub fn new(target: Target, kind: Kind) -> Self {
        Probe {
            target,
            kind,
            phase: Phase::OpenBase,
            started: false,
            base: None,
            fd: None,
            result: None,
            data: Vec::new(),
        }
    }

    pub fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Submit the first operation.
    pub fn start(&mut self, ring: &mut Ring<Token>, token: Token) {
        self.started = true;
        match &self.target {
            Target::Beneath(b) => {
                let flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
                let path = b.base.clone();
                ring.submit(token, Sub::OpenAt2 { dirfd: libc::AT_FDCWD, path, flags, resolve: 0 });
                self.phase = Phase::OpenBase;
            }
            Target::Yield => {
                ring.submit(token, Sub::Timeout { nanos: 1 });
                self.phase = Phase::Yielded;
            }
            Target::At { dirfd, name } => {
                let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT;
                ring.submit(
                    token,
                    Sub::Statx {
                        dirfd: *dirfd,
                        path: name.clone(),
                        flags,
                        mask: libc::STATX_BASIC_STATS | libc::STATX_BTIME,
                    },
                );
                self.phase = Phase::Statx;
            }
        }
    }

    /// Advance on a completion. Returns true when the probe is done.
    pub fn step(&mut self, ring: &mut Ring<Token>, token: Token, c: Completion<Token>) -> bool {
        match self.phase {
            Phase::OpenBase => self.base_opened(ring, token, c.result),
            Phase::OpenRel => self.rel_opened(ring, token, c.result),
            Phase::Statx => self.statxed(ring, token, c),
            Phase::ReadData => self.data_read(ring, c),
            Phase::Yielded => self.finish(ring, Err(libc::ETIME)),
            Phase::Done => {}
        }
        self.done()
    }

    fn finish(&mut self, ring: &mut Ring<Token>, result: Result<Meta, i32>) {
        if result.is_err() || self.kind != Kind::Read {
            if let Some(fd) = self.fd.take() {
                ring.submit(Token::Discard, Sub::Close { fd });
            }
        }
        self.result = Some(result);
        self.phase = Phase::Done;
    }

    fn base_opened(&mut self, ring: &mut Ring<Token>, token: Token, result: i32) {
        if result < 0 {
            return self.finish(ring, Err(-result));
        }
        // SAFETY: a non-negative openat2 result is a new fd we now own.
        let base = unsafe { OwnedFd::from_raw_fd(result) };
        let Target::Beneath(b) = &self.target else { unreachable!("only Beneath opens a base") };
        let flags = match self.kind {
            Kind::Look => libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            Kind::Read | Kind::Slurp(_) | Kind::SlurpTail(_) => {
                libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC
            }
        } as u64;
        let (dirfd, path) = (base.as_raw_fd(), b.rel.clone());
        ring.submit(token, Sub::OpenAt2 { dirfd, path, flags, resolve: RESOLVE_SAFE });
        self.base = Some(base);
        self.phase = Phase::OpenRel;
    }

    fn rel_opened(&mut self, ring: &mut Ring<Token>, token: Token, result: i32) {
        if let Some(base) = self.base.take() {
            ring.submit(Token::Discard, Sub::Close { fd: base });
        }
        if result < 0 {
            return self.finish(ring, Err(-result));
        }
        // SAFETY: a non-negative openat2 result is a new fd we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(result) };
        let flags = libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW;
        let dirfd = fd.as_raw_fd();
        self.fd = Some(fd);
        ring.submit(
            token,
            Sub::Statx { dirfd, path: CString::default(), flags, mask: libc::STATX_BASIC_STATS | libc::STATX_BTIME },
        );
        self.phase = Phase::Statx;
    }

    fn statxed(&mut self, ring: &mut Ring<Token>, token: Token, c: Completion<Token>) {
        if c.result < 0 {
            return self.finish(ring, Err(-c.result));
        }
        let meta = Meta::from_statx(c.statx.as_deref().expect("a statx completion carries its buffer"));
        // openat2 hands back an O_PATH fd on a trailing symlink when asked
        // for O_PATH|O_NOFOLLOW; a symlink is never served, so it is simply
        // not there.
        if meta.is_symlink() {
            return self.finish(ring, Err(libc::ELOOP));
        }
        let slurp = match self.kind {
            Kind::Slurp(max) => Some((max, 0)),
            Kind::SlurpTail(max) => Some((max, meta.size.saturating_sub(max as u64))),
            Kind::Look | Kind::Read => None,
        };
        if let (Some((max, offset)), Some(fd)) = (slurp, &self.fd) {
            if !meta.is_regular() {
                return self.finish(ring, Err(libc::EINVAL));
            }
            let (fd, buf) = (fd.as_raw_fd(), Vec::with_capacity(max as usize));
            ring.submit(token, Sub::Read { fd, owned: None, buf, len: max, offset });
            self.result = Some(Ok(meta));
            self.phase = Phase::ReadData;
            return;
        }
        self.finish(ring, Ok(meta));
    }

    fn data_read(&mut self, ring: &mut Ring<Token>, c: Completion<Token>) {
        let meta = self.result.take().expect("a slurp reads after its statx");
        if c.result < 0 {
            return self.finish(ring, Err(-c.result));
        }
        self.data = c.buf;
        self.finish(ring, meta);
    }
}
