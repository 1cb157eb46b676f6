//! The agents table: one slot per live agent process the last scan found.
//!
//! A slot remembers only what identifies the agent — harness, pid,
//! starttime — and, once resolved, its session (id, route, transcript).
//! Every field the tree serves is derived again from disk when read; the
//! slot is the identity those reads hang off. A scan replaces the table's
//! view of the machine (`update`): a pid that vanished, or that now runs a
//! process with another starttime (a reused pid), loses its slot, and a
//! freed slot comes back with a new generation, so a node id of the old
//! agent never resolves to the new one.

use std::collections::HashMap;

use slab::Slab;

use crate::harness::Harness;

/// An agent the scan found: enough to tell it from a reused pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub harness: Harness,
    pub pid: u32,
    pub starttime: u64,
}

/// What resolving an agent's session found.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Session {
    /// The session id (empty when unresolved).
    pub id: Vec<u8>,
    /// The route that resolved it: registry, fd, dir, lock, none.
    pub via: &'static str,
    /// The transcript, relative to the harness's base.
    pub transcript: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub(crate) struct Agent {
    pub found: Found,
    /// `None` until a resolution answered; an agent whose resolution found
    /// nothing is asked again on every scan.
    pub session: Option<Session>,
    pub gen: u32,
}

#[derive(Default)]
pub(crate) struct Agents {
    slots: Slab<Agent>,
    by_pid: HashMap<u32, usize>,
    next_gen: u32,
    /// What every process's command line said it is (`judged`).
    pub judged: super::judged::Judged,
}

impl Agents {
    /// Make the table what the scan saw: drop the gone and the reborn, add
    /// the new. (Which of them a scan resolves again is `resolved`'s say.)
    pub(crate) fn update(&mut self, found: &[Found]) {
        let seen: HashMap<u32, &Found> = found.iter().map(|f| (f.pid, f)).collect();
        let gone: Vec<u32> = self
            .by_pid
            .iter()
            .filter(|(pid, &slot)| seen.get(pid).is_none_or(|f| **f != self.slots[slot].found))
            .map(|(pid, _)| *pid)
            .collect();
        for pid in gone {
            let slot = self.by_pid.remove(&pid).expect("listed above");
            self.slots.remove(slot);
        }
        for f in found {
            if !self.by_pid.contains_key(&f.pid) {
                self.next_gen = self.next_gen.wrapping_add(1);
                let slot = self.slots.insert(Agent { found: *f, session: None, gen: self.next_gen });
                self.by_pid.insert(f.pid, slot);
            }
        }
    }

    /// The agents whose session is resolved, by pid and starttime: a scan
    /// does not ask them again.
    pub(crate) fn resolved(&self) -> Vec<(u32, u64)> {
        self.slots
            .iter()
            .filter(|(_, a)| a.session.as_ref().is_some_and(|s| !s.id.is_empty() || s.via == "none"))
            .map(|(_, a)| (a.found.pid, a.found.starttime))
            .collect()
    }

    /// The slot of a live agent of `harness` with `pid`.
    pub(crate) fn find(&self, harness: Harness, pid: u32) -> Option<(u32, u32)> {
        let &slot = self.by_pid.get(&pid)?;
        let a = &self.slots[slot];
        (a.found.harness == harness).then_some((slot as u32, a.gen))
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&Agent> {
        self.slots.get(slot as usize).filter(|a| a.gen == gen)
    }

    pub(crate) fn get_mut(&mut self, slot: u32, gen: u32) -> Option<&mut Agent> {
        self.slots.get_mut(slot as usize).filter(|a| a.gen == gen)
    }

    /// Every agent: (slot, generation, agent).
    pub(crate) fn all(&self) -> impl Iterator<Item = (u32, u32, &Agent)> {
        self.slots.iter().map(|(slot, a)| (slot as u32, a.gen, a))
    }

    /// The agents of one harness, by pid: (pid, slot, generation).
    pub(crate) fn of_harness(&self, harness: Harness) -> Vec<(u32, u32, u32)> {
        let mut out: Vec<(u32, u32, u32)> = self
            .slots
            .iter()
            .filter(|(_, a)| a.found.harness == harness)
            .map(|(slot, a)| (a.found.pid, slot as u32, a.gen))
            .collect();
        out.sort_unstable();
        out
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(pid: u32, starttime: u64) -> Found {
        Found { harness: Harness::Claude, pid, starttime }
    }

    #[test]
    fn a_reused_pid_is_a_new_agent_and_the_old_id_never_resolves_to_it() {
        let mut t = Agents::default();
        t.update(&[found(42, 100)]);
        let old = t.find(Harness::Claude, 42).unwrap();
        t.update(&[found(42, 200)]);
        let new = t.find(Harness::Claude, 42).unwrap();
        assert!(t.get(old.0, old.1).is_none() || old != new);
        assert!(t.get(old.0, old.1).is_none(), "the old agent's id must not resolve");
        assert_eq!(t.get(new.0, new.1).unwrap().found.starttime, 200);
    }

    #[test]
    fn an_agent_gone_from_the_scan_loses_its_slot() {
        let mut t = Agents::default();
        t.update(&[found(1, 1), found(2, 2)]);
        t.update(&[found(2, 2)]);
        assert!(t.find(Harness::Claude, 1).is_none());
        assert!(t.find(Harness::Claude, 2).is_some());
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn an_unresolved_agent_is_asked_again_on_every_scan() {
        let mut t = Agents::default();
        t.update(&[found(7, 7)]);
        assert!(t.resolved().is_empty(), "a new agent is to be resolved");
        t.update(&[found(7, 7)]);
        assert!(t.resolved().is_empty(), "one that resolved nothing is asked again");
        let (slot, gen) = t.find(Harness::Claude, 7).unwrap();
        t.get_mut(slot, gen).unwrap().session = Some(Session { id: b"s".to_vec(), via: "registry", transcript: None });
        t.update(&[found(7, 7)]);
        assert_eq!(t.resolved(), vec![(7, 7)], "a resolved agent is not asked again");
    }

    #[test]
    fn a_pid_of_another_harness_is_not_found_under_this_one() {
        let mut t = Agents::default();
        t.update(&[Found { harness: Harness::Codex, pid: 5, starttime: 5 }]);
        assert!(t.find(Harness::Claude, 5).is_none());
        assert!(t.find(Harness::Codex, 5).is_some());
    }
}
