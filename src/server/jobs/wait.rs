//! An agent's `wait` file: its open, and its reads, which park until the
//! agent changes.
//!
//! The open takes the agent's watch (`watch::hold`: inotify on the files
//! its status and chat come from, a poll of its pidfd) and makes a reader
//! whose cursor is the agent as it is now: its status, how many messages
//! its chat has, whether it lives. A read evaluates the agent again — its
//! status and life as the watch's last observation found them
//! (`jobs::observe`, shared by every reader of the agent and made afresh
//! once per change), its messages from a chat refresh — and answers one
//! line per change since the cursor, oldest first, as many as fit the
//! count:
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

use crate::chat::pool::ChatRef;
use crate::errors::Error;
use crate::proto::{self, Qid, QTFILE};
use crate::tree::{agent_qid_path, chat_format, Part};

use super::super::fids::Opened;
use super::super::watch::{hold, AgentCursor, AgentKey, On, Reader, ReaderRef, Seen};
use super::cx::{fail, Cursor, Cx, Event, Need, Reply, Step};

/// Small, because a kernel mount parks thousands (`cat wait` in many
/// processes): while parked it is its request and its reader.
pub(crate) struct Wait {
    what: What,
    /// The evaluation under way; none while parked.
    eval: Option<Box<Eval>>,
}

enum What {
    Open { fid: u32, agent: AgentKey },
    Read { tag: u16, count: u32, reader: ReaderRef },
}

/// One evaluation of the agent.
struct Eval {
    agent: AgentKey,
    /// The watch's sequence the facts it compares are from.
    seq: u64,
    /// The agent as last observed, until its chat is counted.
    seen: Option<Seen>,
    /// Whether it asked for its chat again, after a refresh it joined
    /// found the pool busy.
    asked_again: bool,
}

impl Wait {
    pub(crate) fn open(fid: u32, slot: u32, gen: u32) -> Wait {
        Wait { what: What::Open { fid, agent: (slot, gen) }, eval: None }
    }

    pub(crate) fn read(tag: u16, reader: ReaderRef, count: u32) -> Wait {
        Wait { what: What::Read { tag, count, reader }, eval: None }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start => {
                if let What::Open { agent, .. } = self.what {
                    if let Err(e) = hold(cx.tree, cx.agents, cx.ops.ring, cx.waits, agent) {
                        return fail(e);
                    }
                }
                self.evaluate(cx)
            }
            Event::Changed => self.evaluate(cx),
            Event::Observed(Ok(())) => self.observed(cx),
            Event::Observed(Err(e)) => fail(e),
            Event::Refreshed(r) => self.refreshed(cx, r),
            _ => Step::Wait,
        }
    }

    /// Begin an evaluation: the agent as observed at the watch's sequence
    /// now, observed afresh unless another reader's observation is that.
    fn evaluate(&mut self, cx: &mut Cx) -> Step {
        let agent = match self.what {
            What::Open { agent, .. } => agent,
            What::Read { tag, reader, .. } => match cx.waits.reader(reader) {
                Some(Reader::Agent { cursor, .. }) if cursor.gone => return answer(tag, reader, Vec::new(), None),
                Some(Reader::Agent { agent, .. }) => *agent,
                _ => return fail(Error::FidNotOpen),
            },
        };
        let seq = cx.waits.seq(On::Agent(agent));
        self.eval = Some(Box::new(Eval { agent, seq, seen: None, asked_again: false }));
        match cx.waits.seen(agent) {
            Some(seen) if seen.seq == seq => self.observed(cx),
            _ => Step::WaitObserve(agent),
        }
    }

    /// The agent is observed: count its chat, while it lives and has one.
    fn observed(&mut self, cx: &mut Cx) -> Step {
        let Some(e) = self.eval.as_mut() else { return Step::Wait };
        let Some(seen) = cx.waits.seen(e.agent) else { return fail(Error::FidNotOpen) };
        // What it compares is from then: a change since makes it look again.
        (e.seq, e.seen) = (seen.seq, Some(seen.clone()));
        let (slot, gen) = e.agent;
        if seen.alive && chat_format(cx.agents, slot, gen).is_some() {
            return Step::WaitChat { of: super::ChatOf::Agent(slot, gen), need: Need::Watched };
        }
        self.chat_known(cx, None)
    }

    /// The chat's refresh is back: the watch pins its entry, so the next
    /// change indexes only what the transcript grew by. No transcript is
    /// no messages; any other failure is the answer (never a count of 0).
    fn refreshed(&mut self, cx: &mut Cx, r: Result<ChatRef, Error>) -> Step {
        let Some(e) = self.eval.as_mut() else { return Step::Wait };
        match r {
            Ok(r) => {
                cx.waits.pin_chat(e.agent, r.i, cx.chats);
                self.chat_known(cx, Some(r))
            }
            Err(Error::NotFound) => self.chat_known(cx, None),
            // The refresh this joined was a listing's, which may not make
            // an entry past the cap; this one's own may.
            Err(Error::ChatsBusy) if !e.asked_again => {
                e.asked_again = true;
                Step::WaitChat { of: super::ChatOf::Agent(e.agent.0, e.agent.1), need: Need::Watched }
            }
            Err(err) => fail(err),
        }
    }

    /// The agent and its chat are known: open the reader, or answer what
    /// changed, or park.
    fn chat_known(&mut self, cx: &mut Cx, chat: Option<ChatRef>) -> Step {
        let Some(e) = self.eval.take() else { return Step::Wait };
        let (alive, status) = e.seen.map_or((false, None), |s| (s.alive, s.status));
        let index = chat.and_then(|r| cx.chats.get(r)).map(|e| &e.index);
        let now = AgentCursor { status, messages: index.map_or(0, |i| i.len()), gone: !alive };
        let (tag, reader, count) = match self.what {
            What::Open { fid, agent } => {
                let r = cx.waits.add_reader(Reader::Agent { agent, cursor: now });
                let found = cx.agents.get(agent.0, agent.1).map(|a| a.found);
                let qid = Qid { ty: QTFILE, version: 0, path: agent_qid_path(found.as_ref(), Part::Wait) };
                return Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Wait(r) }));
            }
            What::Read { tag, reader, count } => (tag, reader, count),
        };
        let Some(Reader::Agent { cursor, .. }) = cx.waits.reader(reader) else { return fail(Error::FidNotOpen) };
        let (lines, next, unsaid) =
            changes(cursor, &now, count as usize, |id, out| index.is_some_and(|i| i.name(id, out)));
        if !lines.is_empty() {
            return answer(tag, reader, lines, Some(next));
        }
        if unsaid {
            // A change no whole line of fits the count: said at once, and
            // nothing lost (the cursor stays), as inotify answers a read
            // too small for its next event.
            return fail(Error::ReadTooSmall);
        }
        if cx.waits.seq(On::Agent(e.agent)) != e.seq {
            return self.evaluate(cx);
        }
        Step::WaitWatch(On::Agent(e.agent))
    }

    pub(crate) fn release(self, _cx: &mut Cx) {}
}

/// The read `tag` of `reader` answered `lines`, its cursor to be `next`
/// once they are delivered.
fn answer(tag: u16, reader: ReaderRef, lines: Vec<u8>, next: Option<AgentCursor>) -> Step {
    let mut bytes = Vec::with_capacity(lines.len() + super::read::RREAD_HEADER_BYTES);
    proto::rread_begin(&mut bytes, tag);
    bytes.extend_from_slice(&lines);
    proto::rread_finish(&mut bytes, 0);
    Step::Answer(Ok(Reply::Wait { reader, bytes, cursor: next.map(Cursor::Agent) }))
}

/// The lines that say how `now` differs from `was`, oldest first (the
/// status, each new message, the exit), as many whole lines as fit in
/// `room` bytes; the cursor after exactly those; and whether a change was
/// left unsaid because its line did not fit. `name` writes a message's
/// name.
pub(crate) fn changes(
    was: &AgentCursor,
    now: &AgentCursor,
    room: usize,
    mut name: impl FnMut(usize, &mut Vec<u8>) -> bool,
) -> (Vec<u8>, AgentCursor, bool) {
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
            return (out, next, true);
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
            return (out, next, true);
        }
        next.messages = id + 1;
    }
    if now.gone && !was.gone && next.messages >= now.messages {
        if !push(&mut out, b"gone\n") {
            return (out, next, true);
        }
        next.gone = true;
    }
    (out, next, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(status: Option<&str>, messages: usize, gone: bool) -> AgentCursor {
        AgentCursor { status: status.map(|s| s.as_bytes().into()), messages, gone }
    }

    fn names(id: usize, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(format!("{id:08}-user").as_bytes());
        true
    }

    #[test]
    fn a_status_change_then_each_new_message_then_the_exit_is_one_line_each() {
        let (lines, next, unsaid) =
            changes(&cursor(Some("busy"), 1, false), &cursor(Some("idle"), 3, true), 4096, names);
        assert!(!unsaid);
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
        let (lines, next, unsaid) = changes(&was, &now, "status idle\nmessage 00000000-user\n".len() + 5, names);
        assert_eq!(String::from_utf8(lines).unwrap(), "status idle\nmessage 00000000-user\n");
        assert_eq!(next, cursor(Some("idle"), 1, false));
        assert!(unsaid, "a message was left for the next read");
        let (rest, last, _) = changes(&next, &now, 4096, names);
        assert_eq!(String::from_utf8(rest).unwrap(), "message 00000001-user\n");
        assert_eq!(last, now);
    }

    /// Issue 21, defect 7: a read no whole line fits used to park forever.
    #[test]
    fn a_change_whose_line_fits_no_read_is_unsaid_and_the_cursor_stays() {
        let was = cursor(Some("idle"), 0, false);
        for now in [cursor(Some("busy"), 0, false), cursor(Some("idle"), 1, false), cursor(Some("idle"), 0, true)] {
            let (lines, next, unsaid) = changes(&was, &now, 3, names);
            assert_eq!((lines.as_slice(), unsaid), (&b""[..], true), "{now:?}");
            assert_eq!(next, was);
        }
    }

    #[test]
    fn nothing_changed_is_no_line_and_a_status_gone_away_is_not_reported() {
        let was = cursor(Some("idle"), 4, false);
        assert_eq!(changes(&was, &was, 4096, names).0, b"");
        assert_eq!(changes(&was, &cursor(None, 4, false), 4096, names).0, b"");
    }
}
