//! A Tread of an open file on disk: one pread through the ring, straight
//! into the reply's buffer (its header written first, its count filled in
//! when the bytes are back). The buffer is charged to the connection until
//! the record is reaped, flushed or not, so a client that pipelines reads
//! and never reads a reply is held to its budget.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::errors::Error;
use crate::proto;
use crate::ring::Sub;

use super::cx::{fail, Cx, Event, Reply, Step};

/// The bytes of an Rread's header: size[4] type[1] tag[2] count[4].
pub(crate) const RREAD_HEADER_BYTES: usize = 11;

pub(crate) struct Read {
    tag: u16,
    /// The fid's file, held until the read is back (a clunk meanwhile
    /// must not close it under the kernel).
    file: Option<Rc<OwnedFd>>,
    offset: u64,
    count: u32,
}

impl Read {
    pub(crate) fn new(tag: u16, file: Rc<OwnedFd>, offset: u64, count: u32) -> Read {
        Read { tag, file: Some(file), offset, count }
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
                cx.ops.submit(0, Sub::Read { fd, owned: None, buf, len: self.count, offset: self.offset });
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
