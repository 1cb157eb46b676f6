//! A Tread of a chat message: the index plans which stretch of the
//! transcript renders the bytes wanted (from a resume point it remembers,
//! so reading a long message front to back is linear), the stretch is read
//! through the ring with the fd the index was built from, and rendered.
//! An index that started over since the fid was opened answers not-found,
//! never another file's bytes.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::chat::pool::ChatRef;
use crate::chat::ReadPlan;
use crate::errors::Error;
use crate::proto;
use crate::ring::Sub;

use super::cx::{fail, Cx, Event, Reply, Step};
use super::read::RREAD_HEADER_BYTES;

pub(crate) struct ChatRead {
    tag: u16,
    entry: ChatRef,
    id: u32,
    offset: u64,
    count: u32,
    plan: Option<ReadPlan>,
    /// The transcript's fd, held until the read is back (a refresh may
    /// replace the entry's meanwhile).
    file: Option<Rc<OwnedFd>>,
}

impl ChatRead {
    pub(crate) fn new(tag: u16, entry: ChatRef, id: u32, offset: u64, count: u32) -> ChatRead {
        ChatRead { tag, entry, id, offset, count, plan: None, file: None }
    }

    pub(crate) fn charge(&self) -> usize {
        self.count as usize + RREAD_HEADER_BYTES
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start | Event::Resume if !cx.admit_read(self.count as usize) => Step::Yield,
            Event::Start | Event::Resume => self.start(cx),
            Event::Done(_, c) if c.result < 0 => fail(Error::Io),
            Event::Done(_, c) => self.render(cx, &c.buf),
            _ => Step::Wait,
        }
    }

    fn start(&mut self, cx: &mut Cx) -> Step {
        let Some(e) = cx.chats.get(self.entry) else { return fail(Error::NotFound) };
        let Some(plan) = e.index.render_plan(self.id as usize, self.offset, u64::from(self.count)) else {
            return fail(Error::NotFound);
        };
        self.plan = Some(plan);
        if plan.file_len == 0 {
            return self.render(cx, &[]);
        }
        let Some(file) = e.fd.clone() else { return fail(Error::Io) };
        let (fd, len) = (file.as_raw_fd(), plan.file_len as u32);
        self.file = Some(file);
        cx.ops.submit(
            0,
            Sub::Read {
                fd,
                owned: None,
                buf: Vec::with_capacity(len as usize),
                len,
                offset: plan.file_offset,
                expect: len,
            },
        );
        Step::Wait
    }

    fn render(&mut self, cx: &mut Cx, input: &[u8]) -> Step {
        let plan = self.plan.expect("planned at the start");
        // The index started over under the read: the message is gone.
        let Some(e) = cx.chats.get_mut(self.entry) else { return fail(Error::NotFound) };
        let mut bytes = Vec::with_capacity(plan.count() as usize + RREAD_HEADER_BYTES);
        proto::rread_begin(&mut bytes, self.tag);
        e.index.render(&plan, input, &mut bytes);
        proto::rread_finish(&mut bytes, 0);
        Step::Answer(Ok(Reply::Read(bytes)))
    }

    pub(crate) fn release(mut self, cx: &mut Cx) {
        if let Some(file) = self.file.take() {
            super::super::world::release_file(cx.ops.ring, cx.held, file);
        }
    }
}
