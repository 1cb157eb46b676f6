//! A compressed transcript (codex's `rollout-*.jsonl.zst`, dsh's
//! `session.jsonl.zstd`) decoded into a copy in memory, a slice at a time,
//! for its chat index: not a job, but the stage of a refresh
//! (`refresh::Refresh`) that comes before the index reads the file — and
//! the file the index then reads is the copy.
//!
//! The copy is a memfd, mapped to be written: each turn of the loop
//! decodes `INFLATE_SLICE` bytes of it (about 0.1 ms), so another client's
//! request waits behind one slice; the compressed bytes come in through the
//! ring, `INFLATE_READ_BYTES` a read. Once decoded, the memfd is cut to
//! its length and mapped again for reading (`pool::Inflated::map`: the
//! head and tail a session's fields are derived from), and the index reads
//! it as it reads any transcript: windows mapped, pages brought in, reads
//! by pread.
//!
//! A file that grew (dsh appends a frame at a time) is decoded on from its
//! last whole frame: zstd frames stand alone, and decoding the same bytes
//! again writes the same bytes again, so what the index holds stays true.
//! Every copy counts against `--max-inflated`, all of them together: past
//! it the refresh fails with `File too large`, never a shorter chat.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::errors::Error;
use crate::meta::Meta;
use crate::zst::Inflater;

/// Bytes of the copy decoded a turn: at libzstd's ~1.5 GB/s on this
/// project's bench machine, about 0.09 ms (`cargo bench --bench inflate`).
pub(crate) const INFLATE_SLICE: usize = 128 << 10;
/// Bytes of the compressed file one read brings in.
pub(crate) const INFLATE_READ_BYTES: usize = 1 << 20;

/// The default for `--max-inflated`: bytes of decoded copies held at once.
pub const MAX_INFLATED_DEFAULT: u64 = 1 << 30;

/// A decoding under way.
pub(crate) struct Inflate {
    /// The compressed file, while no read holds it.
    pub src: Option<OwnedFd>,
    /// Its size and mtime when the refresh opened it: decoded to there.
    pub source: (u64, i128),
    /// The compressed bytes read and not yet decoded, from file offset
    /// `input_at`; the next read starts at `next`.
    input: Vec<u8>,
    used: usize,
    input_at: u64,
    next: u64,
    z: Inflater,
    /// The copy, and its writable mapping (`room` bytes, sparse).
    pub copy: Rc<OwnedFd>,
    out: memmap2::MmapMut,
    room: u64,
    /// Bytes of the copy written, and where the last whole frame ended.
    pub written: u64,
    pub frame_end: (u64, u64),
}

/// What the decoding wants next.
pub(crate) enum Progress {
    /// The compressed bytes at `offset`, `len` of them.
    Read { offset: u64, len: usize },
    /// A slice was decoded: the next turn goes on.
    Yield,
    /// All of the file is decoded.
    Done,
}

impl Inflate {
    /// A decoding of the compressed file `meta` describes (its fd is put
    /// in `src` before the first step) into `copy` (a fresh memfd when
    /// `None`), from `from` (the compressed and the copy's offsets where a
    /// whole frame ended: (0, 0) to start), the copy growing to at most
    /// `room` bytes.
    pub(crate) fn new(meta: &Meta, copy: Option<Rc<OwnedFd>>, from: (u64, u64), room: u64) -> Result<Inflate, Error> {
        let copy = match copy {
            Some(c) => c,
            None => Rc::new(rustix::fs::memfd_create("9agents-inflated", rustix::fs::MemfdFlags::CLOEXEC).map_err(io)?),
        };
        // Sparse: pages are taken only as they are written.
        rustix::fs::ftruncate(&*copy, room).map_err(io)?;
        let len = usize::try_from(room).map_err(|_| Error::InflateTooLarge)?;
        // SAFETY: the memfd is this daemon's own, made above or by an
        // earlier decoding of this transcript; nothing else maps it to
        // write, and it is not shrunk while this mapping lives.
        let out = unsafe { memmap2::MmapOptions::new().len(len.max(1)).map_mut(&*copy) }.map_err(|e| {
            log::warn!("inflate: mapping a copy of {room} bytes: {e}");
            Error::NoMemory
        })?;
        Ok(Inflate {
            src: None,
            source: (meta.size, meta.mtime_ns()),
            input: Vec::new(),
            used: 0,
            input_at: from.0,
            next: from.0,
            z: Inflater::new().map_err(io)?,
            copy,
            out,
            room,
            written: from.1,
            frame_end: from,
        })
    }

    /// A read came back: `buf` holds the compressed bytes from `next` on.
    pub(crate) fn landed(&mut self, fd: Option<OwnedFd>, result: i32, buf: Vec<u8>) -> Result<(), Error> {
        self.src = fd;
        if result < 0 {
            return Err(Error::from_errno(-result));
        }
        if buf.is_empty() {
            // The file is shorter than it was when opened: cut short.
            self.source.0 = self.next;
        }
        self.input_at = self.next;
        self.next += buf.len() as u64;
        self.input = buf;
        self.used = 0;
        Ok(())
    }

    /// Decode one slice, or say what is needed first.
    pub(crate) fn step(&mut self) -> Result<Progress, Error> {
        if self.used == self.input.len() {
            if self.next >= self.source.0 {
                return self.drain();
            }
            let len = (self.source.0 - self.next).min(INFLATE_READ_BYTES as u64) as usize;
            return Ok(Progress::Read { offset: self.next, len });
        }
        let at = self.written as usize;
        if self.written >= self.room {
            return Err(Error::InflateTooLarge);
        }
        let end = (at + INFLATE_SLICE).min(self.room as usize);
        let s = self.z.step(&self.input[self.used..], &mut self.out[at..end]).map_err(|e| {
            log::warn!("inflate: a compressed transcript does not decode: {e}");
            Error::Io
        })?;
        self.used += s.read;
        self.written += s.wrote as u64;
        if s.frame_end {
            self.frame_end = (self.input_at + self.used as u64, self.written);
        }
        Ok(Progress::Yield)
    }

    /// The input is all in: decode what the decoder still holds, a slice
    /// a turn, until it writes nothing more.
    fn drain(&mut self) -> Result<Progress, Error> {
        let at = self.written as usize;
        if self.written >= self.room {
            return Err(Error::InflateTooLarge);
        }
        let end = (at + INFLATE_SLICE).min(self.room as usize);
        let s = self.z.step(&[], &mut self.out[at..end]).map_err(io)?;
        self.written += s.wrote as u64;
        if s.frame_end {
            self.frame_end = (self.next, self.written);
        }
        Ok(if s.wrote == 0 { Progress::Done } else { Progress::Yield })
    }

    /// The decoding is over: the copy cut to its length and mapped to be
    /// read, and what it holds of the compressed file.
    pub(crate) fn finish(self) -> Result<(Rc<OwnedFd>, crate::chat::pool::Inflated), Error> {
        drop(self.out);
        rustix::fs::ftruncate(&*self.copy, self.written).map_err(io)?;
        let map = match usize::try_from(self.written) {
            Ok(0) | Err(_) => None,
            // SAFETY: as for the writable mapping; the memfd is never
            // shrunk below this mapping's length while it lives (a new
            // decoding maps it anew, and grows it before it writes).
            Ok(len) => Some(unsafe { memmap2::MmapOptions::new().len(len).map(&*self.copy) }.map_err(|e| {
                log::warn!("inflate: mapping a copy of {len} bytes: {e}");
                Error::NoMemory
            })?),
        };
        let inflated =
            crate::chat::pool::Inflated { source: self.source, frame_end: self.frame_end, len: self.written, map };
        Ok((self.copy, inflated))
    }
}

fn io<E: std::fmt::Display>(e: E) -> Error {
    log::warn!("inflate: {e}");
    Error::Io
}
