//! A Tread of an open file on disk: one pread through the ring, straight
//! into the reply's buffer (its header written first, its count filled in
//! when the bytes are back). The buffer is charged to the connection until
//! the record is reaped, flushed or not, so a client that pipelines reads
//! and never reads a reply is held to its budget.
//!
//! A client asks for as much as its msize allows whatever the file holds
//! (Linux: 128 KiB for a 100-byte file, and again at its end to see 0), so
//! what decides whether a kernel worker copies the bytes
//! (`ring::READ_ASYNC_BYTES_MIN`) is what the read is expected to copy: the
//! count, or less where the file was shorter when it was opened. A file
//! that grew since is read inline, at most a count's bytes (one msize), as
//! any small read is; handing every such read to a worker was two context
//! switches each, two a `cat` of a small file (bench/README, ops.rs).

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::errors::Error;
use crate::proto;
use crate::ring::Sub;

use super::cx::{fail, Cx, Event, Reply, Step};

pub(crate) use crate::proto::RREAD_HEADER_BYTES;

pub(crate) struct Read {
    tag: u16,
    /// The fid's file, held until the read is back (a clunk meanwhile
    /// must not close it under the kernel).
    file: Option<Rc<OwnedFd>>,
    offset: u64,
    count: u32,
    /// The bytes it is expected to copy: `count`, or what the file held
    /// past `offset` when it was opened, if less.
    expect: u32,
}

impl Read {
    /// A read of `count` bytes at `offset` of a file that held `size`
    /// bytes when it was opened.
    pub(crate) fn new(tag: u16, file: Rc<OwnedFd>, offset: u64, count: u32, size: u64) -> Read {
        let expect = size.saturating_sub(offset).min(count as u64) as u32;
        Read { tag, file: Some(file), offset, count, expect }
    }

    pub(crate) fn charge(&self) -> usize {
        self.count as usize + RREAD_HEADER_BYTES
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start | Event::Resume => {
                if !cx.admit_read(self.count as usize) {
                    return Step::Yield;
                }
                let fd = self.file.as_ref().expect("held until released").as_raw_fd();
                let mut buf = Vec::with_capacity(self.charge());
                proto::rread_begin(&mut buf, self.tag);
                let (len, offset, expect) = (self.count, self.offset, self.expect);
                cx.ops.submit(0, Sub::Read { fd, owned: None, buf, len, offset, expect });
                Step::Wait
            }
            Event::Done(_, c) if c.result < 0 => fail(match -c.result {
                libc::EISDIR => Error::IsDir,
                e => Error::from_errno(e),
            }),
            Event::Done(_, c) => {
                let mut bytes = c.buf;
                proto::rread_finish(&mut bytes, 0);
                Step::Answer(Ok(Reply::Read(bytes)))
            }
            _ => Step::Wait,
        }
    }

    pub(crate) fn release(mut self, cx: &mut Cx) {
        if let Some(file) = self.file.take() {
            super::super::world::release_file(cx.ops.ring, cx.held, file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{copied_by_a_worker, READ_ASYNC_BYTES_MIN};

    /// A Tread at the Linux client's default msize (128 KiB).
    const COUNT: u32 = 128 * 1024 - proto::IOHDRSZ;

    fn read(offset: u64, size: u64) -> Read {
        let fd: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        Read::new(1, Rc::new(fd), offset, COUNT, size)
    }

    #[test]
    fn a_full_count_read_of_a_small_file_is_copied_inline_not_by_a_worker() {
        for (offset, size, expect) in [(0, 100, 100), (100, 100, 0), (4096, 100, 0), (0, 0, 0), (1000, 66_000, 65_000)]
        {
            let r = read(offset, size);
            assert_eq!(r.expect, expect, "offset {offset} of a {size}-byte file");
            assert!(!copied_by_a_worker(r.count, r.expect), "offset {offset} of a {size}-byte file");
        }
    }

    #[test]
    fn a_read_of_a_large_file_is_copied_by_a_worker() {
        let r = read(0, 1 << 30);
        assert_eq!((r.count, r.expect), (COUNT, COUNT));
        assert!(copied_by_a_worker(r.count, r.expect));
        let tail = read((1 << 20) - READ_ASYNC_BYTES_MIN as u64, 1 << 20);
        assert!(copied_by_a_worker(tail.count, tail.expect), "exactly READ_ASYNC_BYTES_MIN left");
    }
}
