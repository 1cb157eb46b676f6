//! The session table: node ids for `/sessions/<h>/<id>/` and what is below
//! it, and the hints a listing leaves for the walks that follow it.
//!
//! A session's node is named by its key (`sessions::SessionKey`: harness,
//! id, transcript, and the subagent where it is one) and the part of its
//! directory. As with mirrored places (`paths`), a walk carries keys as
//! values and only the key a fid binds to is interned, with a reference
//! count and a generation, so the table holds exactly the sessions some fid
//! names and a node id kept past its slot's life never resolves again.
//!
//! The hints map a session id to the transcript the last listing of its
//! harness found, so a walk to each entry of a listing (a kernel mount's
//! `ls -l`) looks at one file rather than list the harness again. A hint
//! is only a guess to look at: the walk checks the transcript is there, and
//! a miss lists the harness afresh. Each harness keeps one listing's worth,
//! bounded by the listing cap (two while a listing is under way: the last
//! one's hints are replaced as the new one finds its sessions, and what it
//! did not find goes when it ends).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use wyhash::WyHash;

use crate::harness::Harness;
use crate::sessions::{SField, SessionKey};

/// What of a session's directory a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SPart {
    Dir,
    Field(SField),
    Transcript,
    Chat,
    ChatMsg(u32),
    Agents,
    /// Its tokens, and its subagents' (`jobs::usage`).
    Usage,
}

const PAYLOAD_BITS: u32 = 28;

impl SPart {
    pub(crate) fn code(self) -> u32 {
        let (kind, n) = match self {
            SPart::Dir => (0, 0),
            SPart::Field(f) => (1, f as u32),
            SPart::Transcript => (2, 0),
            SPart::Chat => (3, 0),
            SPart::ChatMsg(id) => (4, id),
            SPart::Agents => (5, 0),
            SPart::Usage => (6, 0),
        };
        kind << PAYLOAD_BITS | (n & ((1 << PAYLOAD_BITS) - 1))
    }

    pub(crate) fn from_code(code: u32) -> Option<SPart> {
        let n = code & ((1 << PAYLOAD_BITS) - 1);
        Some(match code >> PAYLOAD_BITS {
            0 => SPart::Dir,
            1 => SPart::Field(*SField::ALL.get(n as usize)?),
            2 => SPart::Transcript,
            3 => SPart::Chat,
            4 => SPart::ChatMsg(n),
            5 => SPart::Agents,
            6 => SPart::Usage,
            _ => return None,
        })
    }

    pub(crate) fn is_dir(self) -> bool {
        matches!(self, SPart::Dir | SPart::Chat | SPart::Agents)
    }

    /// The part named `name` in a session's directory (a subagent's has
    /// no `agents/`, and only the fields a subagent has).
    pub(crate) fn child(name: &[u8], sub: bool) -> Option<SPart> {
        match name {
            b"transcript" => Some(SPart::Transcript),
            b"chat" => Some(SPart::Chat),
            b"agents" if !sub => Some(SPart::Agents),
            b"usage" => Some(SPart::Usage),
            _ => SField::from_name(name).filter(|f| !sub || f.of_subagent()).map(SPart::Field),
        }
    }

    pub(crate) fn name(self) -> &'static [u8] {
        match self {
            SPart::Field(f) => f.name().as_bytes(),
            SPart::Transcript => b"transcript",
            SPart::Chat => b"chat",
            SPart::Agents => b"agents",
            SPart::Usage => b"usage",
            SPart::Dir | SPart::ChatMsg(_) => b"",
        }
    }
}

/// One harness's hints: a session id, the listing that found it
/// (`begin_hints`) and the session.
type Hints = HashMap<Box<[u8]>, (u32, Rc<SessionKey>), BuildHasherDefault<WyHash>>;

#[derive(Default)]
pub(crate) struct SessionTable {
    /// The sessions fids hold (`interned`).
    keys: super::interned::Interned<Rc<SessionKey>>,
    hints: [Hints; Harness::COUNT],
    /// Each harness's last listing's number (`begin_hints`).
    listings: [u32; Harness::COUNT],
    /// Codex rollouts' parents, learned once a file (`sessions::Parents`).
    parents: Rc<crate::sessions::Parents>,
}

impl SessionTable {
    /// Take a reference on `key`, interning it: (slot, generation).
    pub(crate) fn acquire_key(&mut self, key: &Rc<SessionKey>) -> (u32, u32) {
        self.keys.acquire_key(key)
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&Rc<SessionKey>> {
        self.keys.get(slot, gen)
    }

    pub(crate) fn acquire(&mut self, slot: u32, gen: u32) {
        self.keys.acquire(slot, gen)
    }

    pub(crate) fn release(&mut self, slot: u32, gen: u32) {
        self.keys.release(slot, gen)
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// What a listing of `h` found, all at once (`begin_hints`,
    /// `add_hints`, `end_hints`).
    pub(crate) fn set_hints(&mut self, h: Harness, keys: impl IntoIterator<Item = Rc<SessionKey>>) {
        let n = self.begin_hints(h);
        self.add_hints(h, n, keys);
        self.end_hints(h, n);
    }

    /// A listing of `h` starts: the number its hints are added under. The
    /// last listing's stay until this one ends, and are replaced one id at
    /// a time as it finds them, so no turn drops a whole listing's worth.
    pub(crate) fn begin_hints(&mut self, h: Harness) -> u32 {
        let n = &mut self.listings[h.index()];
        *n = n.wrapping_add(1);
        *n
    }

    /// More of what listing `n` of `h` finds.
    pub(crate) fn add_hints(&mut self, h: Harness, n: u32, keys: impl IntoIterator<Item = Rc<SessionKey>>) {
        self.hints[h.index()].extend(keys.into_iter().map(|k| (k.id.clone(), (n, k))));
    }

    /// Listing `n` of `h` is whole: the hints only earlier listings left
    /// (sessions since gone) go.
    pub(crate) fn end_hints(&mut self, h: Harness, n: u32) {
        let hints = &mut self.hints[h.index()];
        // Listings are numbered in order; a later one under way keeps its own.
        hints.retain(|_, (m, _)| m.wrapping_sub(n) as i32 >= 0);
        if hints.capacity() > 2 * hints.len() + 64 {
            hints.shrink_to_fit();
        }
    }

    /// The codex rollouts' parents the derivations learn and consult.
    pub(crate) fn parents(&self) -> Rc<crate::sessions::Parents> {
        self.parents.clone()
    }

    /// The session the last listing of `h` named `id`, if it did.
    pub(crate) fn hint(&self, h: Harness, id: &[u8]) -> Option<Rc<SessionKey>> {
        self.hints[h.index()].get(id).map(|(_, k)| k.clone())
    }
}

/// A session node's qid path: synthetic, stable for the key (across
/// daemon runs too), apart from the agents' and the skeleton's.
pub(crate) fn qid_path(key: &SessionKey, part: SPart) -> u64 {
    let mut bytes = Vec::with_capacity(key.transcript.len() + 64);
    bytes.push(key.harness.index() as u8);
    bytes.extend_from_slice(&part.code().to_le_bytes());
    bytes.extend_from_slice(&key.transcript);
    if let Some(s) = &key.sub {
        bytes.push(0);
        bytes.extend_from_slice(&s.rel);
    }
    crate::meta::QID_PATH_SYNTHETIC | (1 << 62) | (wyhash::wyhash(&bytes, 0x5e55_1075) >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str, transcript: &str) -> Rc<SessionKey> {
        Rc::new(SessionKey {
            harness: Harness::Claude,
            id: id.as_bytes().into(),
            transcript: transcript.as_bytes().into(),
            sub: None,
            agent: None,
        })
    }

    fn hinted(t: &SessionTable, id: &str) -> Option<String> {
        t.hint(Harness::Claude, id.as_bytes()).map(|k| String::from_utf8_lossy(&k.transcript).into_owned())
    }

    #[test]
    fn a_listing_replaces_hints_as_it_goes_and_drops_the_gone_at_its_end() {
        let mut t = SessionTable::default();
        t.set_hints(Harness::Claude, [key("a", "p/a.jsonl"), key("b", "p/b.jsonl")]);
        let n = t.begin_hints(Harness::Claude);
        t.add_hints(Harness::Claude, n, [key("a", "q/a.jsonl")]);
        // Under way: the last listing's hints still answer.
        assert_eq!(hinted(&t, "a").as_deref(), Some("q/a.jsonl"));
        assert_eq!(hinted(&t, "b").as_deref(), Some("p/b.jsonl"));
        t.end_hints(Harness::Claude, n);
        assert_eq!(hinted(&t, "a").as_deref(), Some("q/a.jsonl"));
        assert_eq!(hinted(&t, "b"), None, "a session the listing did not find is no longer hinted");
    }

    #[test]
    fn an_earlier_listing_ending_keeps_a_later_ones_hints() {
        let mut t = SessionTable::default();
        let first = t.begin_hints(Harness::Claude);
        let second = t.begin_hints(Harness::Claude);
        t.add_hints(Harness::Claude, second, [key("new", "p/new.jsonl")]);
        t.add_hints(Harness::Claude, first, [key("old", "p/old.jsonl")]);
        t.end_hints(Harness::Claude, first);
        assert_eq!(hinted(&t, "new").as_deref(), Some("p/new.jsonl"));
        t.end_hints(Harness::Claude, second);
        assert_eq!(hinted(&t, "new").as_deref(), Some("p/new.jsonl"));
        assert_eq!(hinted(&t, "old"), None);
    }
}
