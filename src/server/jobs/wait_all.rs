//! `/active/wait`: the same as an agent's `wait`, for the whole machine.
//!
//! A read rescans the processes, derives every agent's status, and answers
//! one line per change since its reader's cursor:
//!
//! ```text
//! new claude 345104
//! status claude 345104 busy
//! gone codex 2117
//! ```
//!
//! With nothing to say it parks on the machine's watch, which every agent's
//! watch wakes (the reader holds one for each agent it knows) and, while a
//! read is parked, a rescan timer: a new process makes no inotify event.

use crate::active::derive::{self as active, Watched};
use crate::errors::Error;
use crate::proto::{self, Qid};

use super::super::fids::Opened;
use super::super::watch::{hold_for_machine, AgentKey, MachineCursor, On, Reader, ReaderRef};
use super::cx::{fail, Cursor, Cx, Event, Reply, Step};
use super::gather::{Gather, Ran};

pub(crate) struct WaitAll {
    what: What,
    g: Gather,
    seq: u64,
    /// Each agent's watch's sequence number when this evaluation began:
    /// an observation made at it still holds (`derive`).
    seqs: Option<std::collections::HashMap<AgentKey, u64>>,
}

enum What {
    Open { fid: u32, qid: Qid },
    Read { tag: u16, reader: ReaderRef, count: u32 },
}

impl WaitAll {
    pub(crate) fn open(fid: u32, qid: Qid) -> WaitAll {
        WaitAll { what: What::Open { fid, qid }, g: Gather::default(), seq: 0, seqs: None }
    }

    pub(crate) fn read(tag: u16, reader: ReaderRef, count: u32) -> WaitAll {
        WaitAll { what: What::Read { tag, reader, count }, g: Gather::default(), seq: 0, seqs: None }
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        match ev {
            Event::Start | Event::Changed => {
                self.seq = cx.waits.seq(On::Machine);
                self.seqs = None;
                std::mem::take(&mut self.g).release(cx);
                return Step::WaitScan;
            }
            Event::Scanned(Err(e)) => return fail(e),
            Event::Scanned(Ok(())) => {}
            ev => {
                if let Err(step) = self.g.on_event(cx, ev) {
                    return step;
                }
            }
        }
        self.derive(cx)
    }

    /// Every agent of the fresh table, with its status. An agent whose
    /// watch has not moved since its last observation (by this or any
    /// reader: `Waits::seen`) has that status still — its watch is on the
    /// files its status comes from — and is not read again: a rescan a
    /// second with 200 agents read 400 files a second for nothing (issue
    /// 21, defect 8). Whether it lives the scan said.
    fn derive(&mut self, cx: &mut Cx) -> Step {
        let agents: Vec<_> = cx.agents.all().map(|(slot, gen, a)| ((slot, gen), a.found, a.session.clone())).collect();
        let seqs =
            self.seqs.get_or_insert_with(|| agents.iter().map(|(k, ..)| (*k, cx.waits.seq(On::Agent(*k)))).collect());
        let ran = self.g.run(cx, |cx, facts, needs| {
            let mut now = MachineCursor::new();
            let mut observed = Vec::new();
            let mut waiting = false;
            for (key, found, session) in &agents {
                let seq = seqs.get(key).copied().unwrap_or(0);
                if let Some(seen) = cx.waits.seen(*key).filter(|s| s.seq == seq && s.alive) {
                    now.insert((found.harness, found.pid), (*key, seen.status.as_deref().map(<[u8]>::to_vec)));
                    continue;
                }
                match active::watched(found, session.as_ref(), facts, needs) {
                    None => waiting = true,
                    Some(Watched { alive: false, .. }) => {}
                    Some(w) => {
                        now.insert((found.harness, found.pid), (*key, w.status.clone()));
                        observed.push((*key, seq, w));
                    }
                }
            }
            (!waiting).then_some((now, observed))
        });
        match ran {
            Ran::Done((now, observed)) => {
                for (key, seq, w) in observed {
                    cx.waits.observed(key, seq, w);
                }
                self.known(cx, now)
            }
            Ran::Wait(step) => step,
            Ran::Failed(e) => fail(e),
        }
    }

    fn known(&mut self, cx: &mut Cx, now: MachineCursor) -> Step {
        let (tag, reader, count) = match self.what {
            What::Open { fid, qid } => {
                // The reader holds a watch on each agent it knows, so their
                // changes wake its reads.
                let mut held = std::collections::BTreeSet::new();
                for (key, _) in now.values() {
                    if hold_for_machine(cx.tree, cx.agents, cx.ops.ring, cx.waits, *key) {
                        held.insert(*key);
                    }
                }
                let r = cx.waits.add_reader(Reader::Machine { cursor: Box::new(now), held });
                return Step::Answer(Ok(Reply::Open { fid, qid, opened: Opened::Wait(r) }));
            }
            What::Read { tag, reader, count } => (tag, reader, count),
        };
        let Some(Reader::Machine { cursor, .. }) = cx.waits.reader(reader) else { return fail(Error::FidNotOpen) };
        let (lines, next, unsaid) = changes(cursor, &now, count as usize);
        if lines.is_empty() && unsaid {
            // As an agent's `wait`: a change no read of this count can say.
            return fail(Error::ReadTooSmall);
        }
        if !lines.is_empty() {
            let mut bytes = Vec::with_capacity(lines.len() + super::read::RREAD_HEADER_BYTES);
            proto::rread_begin(&mut bytes, tag);
            bytes.extend_from_slice(&lines);
            proto::rread_finish(&mut bytes, 0);
            return Step::Answer(Ok(Reply::Wait { reader, bytes, cursor: Some(Cursor::Machine(Box::new(next))) }));
        }
        if cx.waits.seq(On::Machine) != self.seq {
            self.seq = cx.waits.seq(On::Machine);
            return Step::WaitScan;
        }
        // Parked, it holds nothing of this evaluation's.
        std::mem::take(&mut self.g).release(cx);
        Step::WaitWatch(On::Machine)
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }
}

/// The lines that say how the machine's agents changed from `was` to
/// `now`, in (harness, pid) order — an agent gone, an agent new (and its
/// status), a status changed — as many whole lines as fit in `room`; the
/// cursor after exactly those; and whether an agent's change was left
/// unsaid because its lines did not fit.
pub(crate) fn changes(was: &MachineCursor, now: &MachineCursor, room: usize) -> (Vec<u8>, MachineCursor, bool) {
    let mut out = Vec::new();
    let mut next = was.clone();
    let keys: std::collections::BTreeSet<_> = was.keys().chain(now.keys()).copied().collect();
    for key @ (h, pid) in keys {
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let status_line = |s: &[u8]| [format!("status {} {pid} ", h.name()).as_bytes(), s, b"\n"].concat();
        match (was.get(&key), now.get(&key)) {
            (Some(_), None) => lines.push(format!("gone {} {pid}\n", h.name()).into_bytes()),
            (None, Some((_, status))) => {
                lines.push(format!("new {} {pid}\n", h.name()).into_bytes());
                lines.extend(status.as_deref().map(status_line));
            }
            (Some((_, old)), Some((_, new))) if new.is_some() && old != new => {
                lines.extend(new.as_deref().map(status_line));
            }
            _ => continue,
        }
        let all: usize = lines.iter().map(Vec::len).sum();
        if out.len() + all > room {
            return (out, next, true);
        }
        lines.iter().for_each(|l| out.extend_from_slice(l));
        match now.get(&key) {
            Some(v) => next.insert(key, v.clone()),
            None => next.remove(&key),
        };
    }
    (out, next, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;

    fn cursor(agents: &[(Harness, u32, Option<&str>)]) -> MachineCursor {
        agents.iter().map(|&(h, pid, s)| ((h, pid), ((pid, 1), s.map(|s| s.as_bytes().to_vec())))).collect()
    }

    #[test]
    fn an_agent_new_with_its_status_one_gone_and_a_status_changed_are_a_line_each() {
        let was = cursor(&[(Harness::Claude, 10, Some("busy")), (Harness::Codex, 20, None)]);
        let now = cursor(&[(Harness::Claude, 10, Some("idle")), (Harness::Claude, 11, Some("busy"))]);
        let (lines, next, unsaid) = changes(&was, &now, 4096);
        assert_eq!(
            String::from_utf8(lines).unwrap(),
            "status claude 10 idle\nnew claude 11\nstatus claude 11 busy\ngone codex 20\n"
        );
        assert_eq!((next, unsaid), (now, false));
    }

    #[test]
    fn a_change_that_does_not_fit_waits_for_the_next_read() {
        let was = cursor(&[]);
        let now = cursor(&[(Harness::Claude, 10, None), (Harness::Claude, 11, None)]);
        let (lines, next, unsaid) = changes(&was, &now, "new claude 10\n".len());
        assert_eq!((lines.as_slice(), unsaid), (&b"new claude 10\n"[..], true));
        assert_eq!(next, cursor(&[(Harness::Claude, 10, None)]));
        assert_eq!(changes(&next, &now, 4096).0, b"new claude 11\n");
        // A read that fits not even the first: unsaid, the cursor where it was.
        let (lines, same, unsaid) = changes(&next, &now, 5);
        assert_eq!((lines.as_slice(), unsaid, same), (&b""[..], true, next));
    }
}
