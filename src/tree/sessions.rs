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
//! bounded by the listing cap.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use slab::Slab;
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
    /// no `agents/`).
    pub(crate) fn child(name: &[u8], sub: bool) -> Option<SPart> {
        match name {
            b"transcript" => Some(SPart::Transcript),
            b"chat" => Some(SPart::Chat),
            b"agents" if !sub => Some(SPart::Agents),
            b"usage" => Some(SPart::Usage),
            _ => SField::from_name(name).filter(|f| !sub || *f == SField::Model).map(SPart::Field),
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

struct Slot {
    key: Rc<SessionKey>,
    refs: u32,
    gen: u32,
}

/// One harness's hints: a session id, and the session the listing found.
type Hints = HashMap<Box<[u8]>, Rc<SessionKey>, BuildHasherDefault<WyHash>>;

#[derive(Default)]
pub(crate) struct SessionTable {
    slots: Slab<Slot>,
    index: HashMap<Rc<SessionKey>, usize, BuildHasherDefault<WyHash>>,
    next_gen: u32,
    hints: [Hints; Harness::COUNT],
}

impl SessionTable {
    /// Take a reference on `key`, interning it: (slot, generation).
    pub(crate) fn acquire_key(&mut self, key: &Rc<SessionKey>) -> (u32, u32) {
        if let Some(&slot) = self.index.get(key) {
            let e = &mut self.slots[slot];
            e.refs += 1;
            return (slot as u32, e.gen);
        }
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let slot = self.slots.insert(Slot { key: key.clone(), refs: 1, gen });
        self.index.insert(key.clone(), slot);
        (slot as u32, gen)
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&Rc<SessionKey>> {
        self.slots.get(slot as usize).filter(|e| e.gen == gen).map(|e| &e.key)
    }

    pub(crate) fn acquire(&mut self, slot: u32, gen: u32) {
        if let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) {
            e.refs += 1;
        }
    }

    pub(crate) fn release(&mut self, slot: u32, gen: u32) {
        let Some(e) = self.slots.get_mut(slot as usize).filter(|e| e.gen == gen) else { return };
        e.refs -= 1;
        if e.refs == 0 {
            let e = self.slots.remove(slot as usize);
            self.index.remove(&e.key);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// What the last listing of `h` found: replaces the hints before it.
    pub(crate) fn set_hints(&mut self, h: Harness, keys: impl IntoIterator<Item = Rc<SessionKey>>) {
        let hints = &mut self.hints[h.index()];
        hints.clear();
        hints.extend(keys.into_iter().map(|k| (k.id.clone(), k)));
        hints.shrink_to_fit();
    }

    /// More of what the listing of `h` under way finds (after `set_hints`
    /// cleared the last one's).
    pub(crate) fn add_hints(&mut self, h: Harness, keys: impl IntoIterator<Item = Rc<SessionKey>>) {
        self.hints[h.index()].extend(keys.into_iter().map(|k| (k.id.clone(), k)));
    }

    /// The session the last listing of `h` named `id`, if it did.
    pub(crate) fn hint(&self, h: Harness, id: &[u8]) -> Option<Rc<SessionKey>> {
        self.hints[h.index()].get(id).cloned()
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
