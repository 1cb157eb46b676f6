//! An agent's `wait` file: its open, and its reads, which park until the
//! agent changes.
//!
//! The open takes the agent's watch (`watch::Waits::acquire`: inotify on
//! the files its status and chat come from, a poll of its pidfd) and makes
//! a reader whose cursor is the agent as it is now: its status, how many
//! messages its chat has, whether it lives. A read evaluates the agent
//! again — `active::derive::watched` for the status and the liveness, a
//! chat refresh for the messages — and answers one line per change since
//! the cursor, oldest first, as many as fit the count:
//!
//! ```text
//! status idle
//! message 00000042-assistant
//! gone
//! ```
//!
//! With nothing to say it parks on the watch, unless the watch moved while
//! it was evaluating (then it evaluates again). The cursor moves when the
//! reply is delivered (`reply::deliver`), so a flushed read loses nothing.
//! After `gone` every read answers 0 bytes. The offset is ignored: the file
//! is a stream.

use crate::active::derive::{self as active, Watched};
use crate::chat::pool::ChatRef;
use crate::errors::Error;
use crate::proto::{self, Qid, QTFILE};
use crate::tree::{agent_qid_path, chat_format, Part};

use super::super::conn::Opened;
use super::super::watch::{hold, AgentCursor, AgentKey, Reader, ReaderRef};
use super::cx::{fail, Cursor, Cx, Event, Reply, Step};
use super::gather::{Fetch, Gather};

pub(crate) struct Wait {
    agent: AgentKey,
    what: What,
    g: Gather,
    /// What the evaluation found so far: the agent, then its chat.
    watched: Option<Watched>,
    /// The watch's sequence when this evaluation began.
    seq: u64,
}

enum What {
    Open { fid: u32 },
    Read { tag: u16, reader: ReaderRef, count: u32 },
}

impl Wait {
    pub(crate) fn open(fid: u32, slot: u32, gen: u32) -> Wait {
        Wait { agent: (slot, gen), what: What::Open { fid }, g: Gather::default(), watched: None, seq: 0 }
    }

    pub(crate) fn read(tag: u16, reader: ReaderRef, agent: AgentKey, count: u32) -> Wait {
        let what = What::Read { tag, reader, count };
        Wait { agent, what, g: Gather::default(), watched: None, seq: 0 }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start => {
                if let What::Open { .. } = self.what {
                    if let Err(e) = self.take_watch(cx) {
                        return fail(e);
                    }
                }
                return self.evaluate(cx);
            }
            Event::Changed => return self.evaluate(cx),
            Event::Refreshed(r) => return self.chat_known(cx, r.ok()),
            ev => {
                if let Err(step) = self.g.on_event(cx, ev) {
                    return step;
                }
            }
        }
        self.derive(cx)
    }

    /// Hold the agent's watch for the reader this open makes; a watch made
    /// now gets its exit poll.
    fn take_watch(&mut self, cx: &mut Cx) -> Result<(), Error> {
        hold(cx.tree, cx.agents, cx.ops.ring, cx.waits, self.agent)
    }

    /// Begin an evaluation of the agent from fresh facts.
    fn evaluate(&mut self, cx: &mut Cx) -> Step {
        if let What::Read { reader, .. } = self.what {
            match cx.waits.reader(reader) {
                Some(Reader::Agent { cursor, .. }) if cursor.gone => return self.answer(cx, Vec::new(), None),
                Some(_) => {}
                None => return fail(Error::FidNotOpen),
            }
        }
        self.seq = cx.waits.seq(Some(self.agent));
        self.watched = None;
        let old = std::mem::take(&mut self.g);
        old.release(cx);
        self.derive(cx)
    }

    fn derive(&mut self, cx: &mut Cx) -> Step {
        loop {
            if let Some(e) = self.g.starved() {
                return fail(e);
            }
            let Some(a) = cx.agents.get(self.agent.0, self.agent.1) else {
                self.watched = Some(Watched { alive: false, status: None });
                return self.chat_known(cx, None);
            };
            let (found, session) = (a.found, a.session.clone());
            let mut needs = Vec::new();
            if let Some(w) = active::watched(&found, session.as_ref(), &self.g.facts, &mut needs) {
                let alive = w.alive;
                self.watched = Some(w);
                // A chat to count, while the agent lives and has one.
                if alive && chat_format(cx.agents, self.agent.0, self.agent.1).is_some() {
                    return Step::WaitChat { slot: self.agent.0, gen: self.agent.1, recent: false };
                }
                return self.chat_known(cx, None);
            }
            match self.g.fetch(cx, needs) {
                Fetch::Again => continue,
                Fetch::Wait(step) => return step,
                Fetch::OutOfRounds => return fail(Error::Io),
            }
        }
    }

    /// The agent and its chat are known: open the reader, or answer what
    /// changed, or park.
    fn chat_known(&mut self, cx: &mut Cx, chat: Option<ChatRef>) -> Step {
        let watched = self.watched.take().unwrap_or(Watched { alive: false, status: None });
        let index = chat.and_then(|r| cx.chats.get(r)).map(|e| &e.index);
        let now = AgentCursor { status: watched.status, messages: index.map_or(0, |i| i.len()), gone: !watched.alive };
        let (reader, count) = match self.what {
            What::Open { fid } => {
                let r = cx.waits.add_reader(Reader::Agent { agent: self.agent, cursor: now });
                let found = cx.agents.get(self.agent.0, self.agent.1).map(|a| a.found);
                let qid = Qid { ty: QTFILE, version: 0, path: agent_qid_path(found.as_ref(), Part::Wait) };
                return Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Wait(r) }));
            }
            What::Read { reader, count, .. } => (reader, count),
        };
        let Some(Reader::Agent { cursor, .. }) = cx.waits.reader(reader) else { return fail(Error::FidNotOpen) };
        let (lines, next) = changes(cursor, &now, count as usize, |id, out| {
            index.is_some_and(|i| i.name(id, out))
        });
        if !lines.is_empty() {
            return self.answer(cx, lines, Some(next));
        }
        if cx.waits.seq(Some(self.agent)) != self.seq {
            return self.evaluate(cx);
        }
        Step::WaitWatch(Some(self.agent))
    }

    fn answer(&self, _cx: &mut Cx, lines: Vec<u8>, next: Option<AgentCursor>) -> Step {
        let What::Read { tag, reader, .. } = self.what else { unreachable!("only a read answers lines") };
        let mut bytes = Vec::with_capacity(lines.len() + super::read::RREAD_HEADER_BYTES);
        proto::rread_begin(&mut bytes, tag);
        bytes.extend_from_slice(&lines);
        proto::rread_finish(&mut bytes, 0);
        Step::Answer(Ok(Reply::Wait { reader, bytes, cursor: next.map(Cursor::Agent) }))
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }
}

/// The lines that say how `now` differs from `was`, oldest first (the
/// status, each new message, the exit), as many whole lines as fit in
/// `room` bytes; and the cursor after exactly those. `name` writes a
/// message's name.
pub(crate) fn changes(
    was: &AgentCursor,
    now: &AgentCursor,
    room: usize,
    mut name: impl FnMut(usize, &mut Vec<u8>) -> bool,
) -> (Vec<u8>, AgentCursor) {
    let mut out = Vec::new();
    let mut next = was.clone();
    let push = |out: &mut Vec<u8>, line: &[u8]| {
        let fits = out.len() + line.len() <= room;
        if fits {
            out.extend_from_slice(line);
        }
        fits
    };
    if let Some(s) = now.status.as_ref().filter(|s| was.status.as_ref() != Some(*s)) {
        let line = [&b"status "[..], s, b"\n"].concat();
        if !push(&mut out, &line) {
            return (out, next);
        }
        next.status = Some(s.clone());
    }
    for id in was.messages..now.messages {
        let mut line = b"message ".to_vec();
        if !name(id, &mut line) {
            break;
        }
        line.push(b'\n');
        if !push(&mut out, &line) {
            return (out, next);
        }
        next.messages = id + 1;
    }
    if now.gone && !was.gone && next.messages >= now.messages && push(&mut out, b"gone\n") {
        next.gone = true;
    }
    (out, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(status: Option<&str>, messages: usize, gone: bool) -> AgentCursor {
        AgentCursor { status: status.map(|s| s.as_bytes().to_vec()), messages, gone }
    }

    fn names(id: usize, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(format!("{id:08}-user").as_bytes());
        true
    }

    #[test]
    fn a_status_change_then_each_new_message_then_the_exit_is_one_line_each() {
        let (lines, next) = changes(&cursor(Some("busy"), 1, false), &cursor(Some("idle"), 3, true), 4096, names);
        assert_eq!(
            String::from_utf8(lines).unwrap(),
            "status idle\nmessage 00000001-user\nmessage 00000002-user\ngone\n"
        );
        assert_eq!(next, cursor(Some("idle"), 3, true));
    }

    #[test]
    fn only_whole_lines_that_fit_are_answered_and_the_cursor_moves_past_them_only() {
        let was = cursor(None, 0, false);
        let now = cursor(Some("idle"), 2, false);
        let (lines, next) = changes(&was, &now, "status idle\nmessage 00000000-user\n".len() + 5, names);
        assert_eq!(String::from_utf8(lines).unwrap(), "status idle\nmessage 00000000-user\n");
        assert_eq!(next, cursor(Some("idle"), 1, false));
        let (rest, last) = changes(&next, &now, 4096, names);
        assert_eq!(String::from_utf8(rest).unwrap(), "message 00000001-user\n");
        assert_eq!(last, now);
    }

    #[test]
    fn nothing_changed_is_no_line_and_a_status_gone_away_is_not_reported() {
        let was = cursor(Some("idle"), 4, false);
        assert_eq!(changes(&was, &was, 4096, names).0, b"");
        assert_eq!(changes(&was, &cursor(None, 4, false), 4096, names).0, b"");
    }
}
