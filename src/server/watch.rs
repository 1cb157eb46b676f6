//! Notifications: the readers of `wait` files, and the watches that say
//! when something they report may have changed.
//!
//! A **reader** is one open of a `wait` file: an agent's
//! (`/active/<h>/<pid>/wait`: its status, its chat's message count, whether
//! it lives) or the machine's (`/active/wait`: which agents there are, and
//! each one's status). It remembers what it last reported (its cursor), so
//! changes made while no read is parked come with the next read; its cursor
//! moves only when a reply carrying the change is delivered, so a flushed
//! read loses nothing.
//!
//! A **watch** is what wakes a parked read. An agent's watch is inotify
//! watches (through the ring: a read of the inotify fd) on the files its
//! status and chat come from — claude's `sessions/` directory (its record
//! is `<pid>.json`), the transcript — and a poll of a pidfd for its exit.
//! Every event bumps the watch's sequence number and steps the reads parked
//! on it; a read compares the sequence it evaluated at with the current one
//! before it parks, so an event that lands while it is evaluating is never
//! missed. The machine's watch is woken by every agent's, and by a rescan
//! timer (`--rescan-interval`) while one of its reads is parked: new
//! processes make no inotify event.
//!
//! A watch also keeps what the readers compare: the last observation of
//! the agent (`jobs::observe`, one per change however many readers), and a
//! pin on its transcript's chat index, so a change indexes only what the
//! transcript grew by. A watched file that goes from its path (replaced by
//! a rename, deleted) is watched again at the path; an overflowed inotify
//! queue wakes every watch.
//!
//! Watches are counted (`--max-watches` inotify watches in all); an open
//! that needs one past the cap is refused (`No space left on device`, as
//! inotify says), and a watch goes when its last reader does.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;

use slab::Slab;

use crate::active::agents::Agents;
use crate::active::derive::Watched;
use crate::errors::Error;
use crate::harness::Harness;
use crate::ring::{Ring, Sub};
use crate::tree::{Backing, Loc, Part, Tree};

use super::ops::{Id, Token};
use super::usage_watch::UsageWatch;

/// The bytes of one read of the inotify fd: room for a hundred events
/// with names (each 16 bytes and a name of up to 255).
pub(crate) const INOTIFY_READ_BYTES: usize = 8 * 1024;
// inotify refuses (EINVAL) a read too small for the next event: one with
// the longest name must fit.
const _: () = assert!(INOTIFY_READ_BYTES > 16 + 255, "one event of the longest name fits a read");

/// An agent, as the watches name it: its slot and generation.
pub(crate) type AgentKey = (u32, u32);

/// What a reader of an agent's `wait` last reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AgentCursor {
    /// Shared with the observation it came from, and every other reader's.
    pub status: Option<Rc<[u8]>>,
    /// Messages reported (or there at the open).
    pub messages: usize,
    pub gone: bool,
}

/// What the reader of `/active/wait` last reported: every agent it knows,
/// by harness and pid, with its slot and status.
pub(crate) type MachineCursor = std::collections::BTreeMap<(Harness, u32), (AgentKey, Option<Vec<u8>>)>;

pub(crate) enum Reader {
    Agent {
        agent: AgentKey,
        cursor: AgentCursor,
    },
    /// The machine's reader, and the agents it holds watches on.
    Machine {
        cursor: Box<MachineCursor>,
        held: std::collections::BTreeSet<AgentKey>,
    },
    /// A reader of `/usage/wait`: the block it last reported (`None`
    /// before its first read, which answers at once).
    Usage {
        cursor: Option<Rc<[u8]>>,
    },
}

/// What a parked read waits on, and whose inotify watch descriptors wake
/// it: an agent's watch, the machine's, or `/usage/wait`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum On {
    Agent(AgentKey),
    Machine,
    Usage,
}

/// A reader's handle: its slot and generation (a reader's slot is reused
/// once it is clunked; a read still in flight must not move another's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReaderRef {
    pub key: u32,
    pub gen: u32,
}

/// A reader as the table keeps it: its generation, and what its last read
/// asked for or left unfilled (`Waits::read_arrived`).
struct Slot {
    gen: u32,
    reader: Reader,
    read: LastRead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastRead {
    None,
    /// A read at `offset` for `count` bytes is being answered.
    Asked {
        offset: u64,
        count: u32,
    },
    /// Its answer filled only part: a read continuing it would be here.
    Left {
        offset: u64,
        count: u32,
    },
}

/// One inotify watch descriptor, and who it is for: the agents watching
/// it, each with the name an event must carry (a directory's) or none (a
/// file's own events).
struct Wd {
    users: Vec<(On, Option<Vec<u8>>)>,
}

/// One agent's watch.
#[derive(Default)]
pub(crate) struct AgentWatch {
    /// Readers that hold it (agent readers, and machine readers that know
    /// the agent).
    refs: usize,
    wds: Vec<i32>,
    /// The pidfd whose poll says the agent exited, and the poll's ring key
    /// (cancelled when the watch goes).
    pub pidfd: Option<OwnedFd>,
    pub poll: Option<usize>,
    pub seq: u64,
    waiting: Vec<Id>,
    /// The chat pool entry of its transcript, pinned while it lasts.
    chat: Option<usize>,
    /// The last observation of the agent (`jobs::observe`).
    seen: Option<Seen>,
}

/// An agent as an observation found it, and the watch's sequence number
/// when that began.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub seq: u64,
    pub alive: bool,
    pub status: Option<Rc<[u8]>>,
}

/// What a watch leaves when its last reader goes: its pidfd and that
/// fd's poll, for the ring to cancel and close; the chat entry it pinned.
pub(crate) struct Gone {
    pub pidfd: Option<OwnedFd>,
    pub poll: Option<usize>,
    pub chat: Option<usize>,
}

#[derive(Default)]
struct MachineWatch {
    readers: usize,
    seq: u64,
    waiting: Vec<Id>,
}

/// A file to watch for an agent: its place on disk, and for a directory
/// the name of the one entry that matters (`/usage/wait`'s directories
/// name none: every entry matters).
pub(crate) struct WatchPath {
    pub backing: Backing,
    pub name: Option<Vec<u8>>,
}

impl WatchPath {
    /// A directory, every entry of it.
    pub(crate) fn dir(backing: Backing) -> WatchPath {
        WatchPath { backing, name: Some(Vec::new()) }
    }
}

pub(crate) struct Waits {
    readers: Slab<Slot>,
    next_gen: u32,
    inotify: Option<OwnedFd>,
    /// Whether a read of the inotify fd is in flight.
    pub inotify_armed: bool,
    wds: HashMap<i32, Wd>,
    agents: HashMap<AgentKey, AgentWatch>,
    machine: MachineWatch,
    pub usage: UsageWatch,
    /// Whether the machine's rescan timer is in flight.
    pub rescan_armed: bool,
    /// Reads of `wait` files parked now (`--max-waits`).
    pub parked: super::count::Count,
    max_watches: usize,
}

impl Waits {
    pub(crate) fn new(max_watches: usize) -> Waits {
        Waits {
            readers: Slab::new(),
            next_gen: 0,
            inotify: None,
            inotify_armed: false,
            wds: HashMap::new(),
            agents: HashMap::new(),
            machine: MachineWatch::default(),
            usage: UsageWatch::default(),
            rescan_armed: false,
            parked: Default::default(),
            max_watches,
        }
    }

    // -- readers ------------------------------------------------------------

    pub(crate) fn add_reader(&mut self, r: Reader) -> ReaderRef {
        self.next_gen = self.next_gen.wrapping_add(1);
        match r {
            Reader::Machine { .. } => self.machine.readers += 1,
            Reader::Usage { .. } => self.usage.readers += 1,
            Reader::Agent { .. } => {}
        }
        let key = self.readers.insert(Slot { gen: self.next_gen, reader: r, read: LastRead::None });
        ReaderRef { key: u32::try_from(key).expect("readers are bounded by the fid caps"), gen: self.next_gen }
    }

    pub(crate) fn reader(&self, r: ReaderRef) -> Option<&Reader> {
        self.slot(r).map(|s| &s.reader)
    }

    pub(crate) fn reader_mut(&mut self, r: ReaderRef) -> Option<&mut Reader> {
        self.slot_mut(r).map(|s| &mut s.reader)
    }

    fn slot(&self, r: ReaderRef) -> Option<&Slot> {
        self.readers.get(r.key as usize).filter(|s| s.gen == r.gen)
    }

    fn slot_mut(&mut self, r: ReaderRef) -> Option<&mut Slot> {
        self.readers.get_mut(r.key as usize).filter(|s| s.gen == r.gen)
    }

    /// A read of reader `r` at `offset` for `count` bytes arrived: whether
    /// it continues the answer just delivered — at the offset where that
    /// answer ended, asking for exactly what it left of its count. That
    /// is Linux's 9p client filling the rest of one read(2): it reads on
    /// until a read comes back empty, so the continuation is answered 0
    /// bytes at once (`dispatch`), and the read(2) returns the lines. A
    /// client that reads a fixed count never sends one.
    pub(crate) fn read_arrived(&mut self, r: ReaderRef, offset: u64, count: u32) -> bool {
        let Some(s) = self.slot_mut(r) else { return false };
        let continues = s.read == LastRead::Left { offset, count };
        s.read = if continues { LastRead::None } else { LastRead::Asked { offset, count } };
        continues
    }

    /// An answer of `len` bytes was delivered to reader `r`'s last read.
    pub(crate) fn read_answered(&mut self, r: ReaderRef, len: usize) {
        let Some(s) = self.slot_mut(r) else { return };
        s.read = match s.read {
            LastRead::Asked { offset, count } if len > 0 && (len as u64) < u64::from(count) => {
                LastRead::Left { offset: offset.saturating_add(len as u64), count: count - len as u32 }
            }
            _ => LastRead::None,
        };
    }

    /// A reader is clunked: its watches go with it when it was the last.
    /// Returns what they leave (`World::close_watch` lets go of it).
    pub(crate) fn remove_reader(&mut self, r: ReaderRef) -> Vec<Gone> {
        if self.reader(r).is_none() {
            return Vec::new();
        }
        let reader = self.readers.remove(r.key as usize).reader;
        match reader {
            Reader::Agent { agent, .. } => self.release(agent).into_iter().collect(),
            Reader::Machine { held, .. } => {
                self.machine.readers -= 1;
                held.into_iter().filter_map(|agent| self.release(agent)).collect()
            }
            Reader::Usage { .. } => {
                self.usage.readers -= 1;
                if self.usage.readers == 0 {
                    self.watch_usage(&[]).expect("dropping watches adds none");
                    self.usage.clear();
                }
                Vec::new()
            }
        }
    }

    /// Give back the reader slab's room past its last live reader.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.readers.shrink_to_fit();
    }

    // -- watches ------------------------------------------------------------

    /// Watches in use (inotify watch descriptors, each counted once).
    pub(crate) fn watches(&self) -> usize {
        self.wds.len()
    }

    /// Take a reference on `agent`'s watch, making it (its inotify watches
    /// on `paths`) on the first. `Ok(true)` when it was made now (`hold`
    /// arms its exit poll).
    fn acquire(&mut self, agent: AgentKey, paths: &[WatchPath]) -> Result<bool, Error> {
        if let Some(w) = self.agents.get_mut(&agent) {
            w.refs += 1;
            return Ok(false);
        }
        // Counted as if none were shared: a cap is a bound, not a guess.
        if self.wds.len() + paths.len() > self.max_watches {
            return Err(Error::TooManyWatches);
        }
        self.inotify_fd()?;
        let fd = self.inotify.take().expect("made above");
        let added = self.add_all(On::Agent(agent), &fd, paths);
        self.inotify = Some(fd);
        let wds = added?;
        self.agents.insert(agent, AgentWatch { refs: 1, wds, ..AgentWatch::default() });
        Ok(true)
    }

    /// Add the watches of `paths` for `agent`; none of them if one fails.
    fn add_all(&mut self, who: On, fd: &OwnedFd, paths: &[WatchPath]) -> Result<Vec<i32>, Error> {
        let mut wds = Vec::new();
        for p in paths {
            match add_watch(fd, p) {
                Ok(wd) => {
                    let users = &mut self.wds.entry(wd).or_insert_with(|| Wd { users: Vec::new() }).users;
                    // (Two paths of one watcher may be one directory.)
                    if !users.iter().any(|(w, name)| *w == who && *name == p.name) {
                        users.push((who, p.name.clone()));
                    }
                    if !wds.contains(&wd) {
                        wds.push(wd);
                    }
                }
                // A file not there yet (a registry written later) is simply
                // not watched; its directory's other events still wake.
                Err(libc::ENOENT) => {}
                Err(e) => {
                    self.drop_wds_with(fd, who, &wds);
                    return Err(if e == libc::ENOSPC { Error::TooManyWatches } else { Error::from_errno(e) });
                }
            }
        }
        Ok(wds)
    }

    /// Drop a reference; the last removes the watch, and returns what it
    /// leaves.
    pub(crate) fn release(&mut self, agent: AgentKey) -> Option<Gone> {
        let w = self.agents.get_mut(&agent)?;
        w.refs -= 1;
        if w.refs > 0 {
            return None;
        }
        let w = self.agents.remove(&agent).expect("looked up above");
        self.drop_wds(On::Agent(agent), &w.wds);
        Some(Gone { pidfd: w.pidfd, poll: w.poll, chat: w.chat })
    }

    /// An observation of `agent`, begun at sequence `seq`, found `w`.
    pub(crate) fn observed(&mut self, agent: AgentKey, seq: u64, w: Watched) {
        if let Some(watch) = self.agents.get_mut(&agent) {
            watch.seen = Some(Seen { seq, alive: w.alive, status: w.status.map(Rc::from) });
        }
    }

    /// The last observation of `agent`.
    pub(crate) fn seen(&self, agent: AgentKey) -> Option<&Seen> {
        self.agents.get(&agent)?.seen.as_ref()
    }

    /// The agent's transcript is indexed in pool entry `i`: its watch pins
    /// that entry (and lets go of another it pinned before: the agent's
    /// transcript changed).
    pub(crate) fn pin_chat(&mut self, agent: AgentKey, i: usize, pool: &mut crate::chat::pool::Pool) {
        let Some(w) = self.agents.get_mut(&agent) else { return };
        if w.chat == Some(i) {
            return;
        }
        if let Some(old) = w.chat.replace(i) {
            pool.unpin(old);
        }
        pool.pin(i);
    }

    fn drop_wds(&mut self, who: On, wds: &[i32]) {
        if let Some(fd) = self.inotify.take() {
            self.drop_wds_with(&fd, who, wds);
            self.inotify = Some(fd);
        }
    }

    fn drop_wds_with(&mut self, fd: &OwnedFd, who: On, wds: &[i32]) {
        for wd in wds {
            let Some(entry) = self.wds.get_mut(wd) else { continue };
            entry.users.retain(|(w, _)| *w != who);
            if entry.users.is_empty() {
                self.wds.remove(wd);
                // The watch may be gone already (its file deleted).
                let _ = rustix::fs::inotify::remove_watch(fd, *wd);
            }
        }
    }

    fn inotify_fd(&mut self) -> Result<&OwnedFd, Error> {
        if self.inotify.is_none() {
            let flags = rustix::fs::inotify::CreateFlags::CLOEXEC | rustix::fs::inotify::CreateFlags::NONBLOCK;
            let fd = rustix::fs::inotify::init(flags).map_err(|e| Error::from_errno(e.raw_os_error()))?;
            self.inotify = Some(fd);
        }
        Ok(self.inotify.as_ref().expect("made above"))
    }

    /// The inotify fd, while watches exist (the loop keeps a read on it).
    pub(crate) fn inotify(&self) -> Option<&OwnedFd> {
        self.inotify.as_ref().filter(|_| !self.wds.is_empty())
    }

    /// The sequence number an evaluation of what `on` watches starts from.
    pub(crate) fn seq(&self, on: On) -> u64 {
        match on {
            On::Agent(a) => self.agents.get(&a).map_or(0, |w| w.seq),
            On::Machine => self.machine.seq,
            On::Usage => self.usage.seq,
        }
    }

    /// Park `id` on an agent's watch (or the machine's, or the usage
    /// watch's). The list drops
    /// the waiters no longer parked (flushed reads: not `live`) each time
    /// it doubles past 64, so a client flushing and re-reading with
    /// nothing changing cannot grow it without end.
    pub(crate) fn wait_on(&mut self, on: On, id: Id, live: impl Fn(Id) -> bool) {
        let list = match on {
            On::Agent(a) => match self.agents.get_mut(&a) {
                Some(w) => &mut w.waiting,
                None => return,
            },
            On::Machine => &mut self.machine.waiting,
            On::Usage => &mut self.usage.waiting,
        };
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|id| live(*id));
        }
        list.push(id);
    }

    /// Something changed for `agent`: its watch's sequence moves, and the
    /// reads parked on it and on the machine's are handed back to step.
    pub(crate) fn changed(&mut self, agent: AgentKey) -> Vec<Id> {
        let mut woken = self.machine_changed();
        if let Some(w) = self.agents.get_mut(&agent) {
            w.seq += 1;
            woken.append(&mut w.waiting);
        }
        woken
    }

    /// The machine may have changed (a rescan is due): its reads step.
    pub(crate) fn machine_changed(&mut self) -> Vec<Id> {
        self.machine.seq += 1;
        std::mem::take(&mut self.machine.waiting)
    }

    /// Whether a machine read is parked (the rescan timer runs only then).
    pub(crate) fn machine_waiting(&self) -> bool {
        !self.machine.waiting.is_empty()
    }

    /// The agents an inotify event buffer names, each once; and those
    /// whose watched file may have gone from its path — deleted, moved
    /// away (a watch follows its inode, not its path), or replaced by a
    /// rename over it, which while the daemon holds the old file open says
    /// only that its link count changed (`IN_ATTRIB`) — to be watched
    /// again.
    fn agents_in(&mut self, events: &[u8]) -> (Vec<AgentKey>, Vec<AgentKey>) {
        use rustix::fs::inotify::ReadFlags as R;
        let (mut woken, mut again): (Vec<AgentKey>, Vec<AgentKey>) = (Vec::new(), Vec::new());
        for (wd, mask, name) in parse_events(events) {
            if mask & R::QUEUE_OVERFLOW.bits() != 0 {
                // Events were lost: any agent, any usage, may have changed.
                woken = self.agents.keys().copied().collect();
                self.usage.hit(std::time::Instant::now());
                continue;
            }
            let Some(entry) = self.wds.get(&wd) else { continue };
            let gone = mask & (R::IGNORED | R::DELETE_SELF | R::MOVE_SELF | R::ATTRIB).bits() != 0;
            if entry.users.iter().any(|(w, _)| *w == On::Usage) {
                // Anything in a directory of Claude's transcripts.
                self.usage.hit(std::time::Instant::now());
            }
            for (who, want) in &entry.users {
                let On::Agent(agent) = who else { continue };
                let hit = gone || want.as_deref().is_none_or(|w| w == name);
                if hit && !woken.contains(agent) {
                    woken.push(*agent);
                }
                if gone && !again.contains(agent) {
                    again.push(*agent);
                }
            }
        }
        (woken, again)
    }

    /// `/usage/wait`'s directories are `paths` from now on: the new ones
    /// are added before the old ones not among them go, so no event
    /// between is lost. Past `--max-watches` nothing changes and the
    /// evaluation that asked fails: a block followed without its watches
    /// would never move.
    pub(crate) fn watch_usage(&mut self, paths: &[WatchPath]) -> Result<(), Error> {
        let old = std::mem::take(&mut self.usage.wds);
        if self.wds.len() - old.len().min(self.wds.len()) + paths.len() > self.max_watches {
            self.usage.wds = old;
            return Err(Error::TooManyWatches);
        }
        let mut wds = Vec::new();
        if !paths.is_empty() {
            self.inotify_fd()?;
            let fd = self.inotify.take().expect("made above");
            let added = self.add_all(On::Usage, &fd, paths);
            self.inotify = Some(fd);
            match added {
                Ok(new) => wds = new,
                Err(e) => {
                    // (What was added is gone again; the old ones go too.)
                    self.drop_wds(On::Usage, &old);
                    return Err(e);
                }
            }
        }
        let gone: Vec<i32> = old.into_iter().filter(|wd| !wds.contains(wd)).collect();
        self.drop_wds(On::Usage, &gone);
        self.usage.wds = wds;
        Ok(())
    }

    /// Watch `agent`'s `paths` again, from scratch: its old watch
    /// descriptors dropped (one of them names a file no longer at its
    /// path), the paths added anew.
    fn rewatch(&mut self, agent: AgentKey, paths: &[WatchPath]) {
        let Some(old) = self.agents.get_mut(&agent).map(|w| std::mem::take(&mut w.wds)) else { return };
        let Some(fd) = self.inotify.take() else { return };
        self.drop_wds_with(&fd, On::Agent(agent), &old);
        let added = self.add_all(On::Agent(agent), &fd, paths);
        self.inotify = Some(fd);
        match (added, self.agents.get_mut(&agent)) {
            (Ok(wds), Some(w)) => w.wds = wds,
            (Err(e), _) => log::warn!("wait: an agent's files could not be watched again: {}", e.text()),
            // (Its watch went meanwhile: what was added goes too.)
            (Ok(wds), None) => self.drop_wds(On::Agent(agent), &wds),
        }
    }
}

/// What an inotify read says: the agents to wake. A watched file that went
/// is watched again at its path first (a transcript replaced, a record
/// deleted and written anew), and a queue that overflowed wakes them all.
pub(crate) fn on_events(tree: &Tree, agents: &Agents, waits: &mut Waits, events: &[u8]) -> Vec<AgentKey> {
    let (woken, again) = waits.agents_in(events);
    for agent in again {
        waits.rewatch(agent, &watch_paths(tree, agents, agent));
    }
    woken
}

/// Take a reference on `agent`'s watch for a reader. The first makes it:
/// inotify watches on what its facts come from (`watch_paths`) and the
/// watch on its exit (`arm_exit`).
pub(crate) fn hold(
    tree: &Tree,
    agents: &Agents,
    ring: &mut Ring<Token>,
    waits: &mut Waits,
    agent: AgentKey,
) -> Result<(), Error> {
    if waits.acquire(agent, &watch_paths(tree, agents, agent))? {
        arm_exit(tree, ring, agents, waits, agent);
    }
    Ok(())
}

/// `hold`, for a machine reader: past the cap it goes without the watch
/// (logged; the rescans still see the agent come and go). Whether held.
pub(crate) fn hold_for_machine(
    tree: &Tree,
    agents: &Agents,
    ring: &mut Ring<Token>,
    waits: &mut Waits,
    agent: AgentKey,
) -> bool {
    let held = hold(tree, agents, ring, waits, agent);
    held.map_err(|e| log::warn!("/active/wait: no watch on an agent: {}", e.text())).is_ok()
}

/// What an agent's watch watches: for claude, its registry directory
/// (`sessions/`, the event naming `<pid>.json`: the record is rewritten,
/// maybe renamed into place); for every harness, its transcript, where the
/// chat grows and codex's turns are recorded. Under a fixture `--proc`,
/// the agent's `<pid>` directory there too: its removal is the exit.
fn watch_paths(tree: &Tree, agents: &Agents, agent: AgentKey) -> Vec<WatchPath> {
    let Some(a) = agents.get(agent.0, agent.1) else { return Vec::new() };
    let pid = a.found.pid.to_string().into_bytes();
    let mut out = Vec::new();
    if a.found.harness == Harness::Claude {
        let name = [&pid[..], b".json"].concat();
        out.extend(
            tree.beneath(a.found.harness, b"sessions".to_vec()).map(|b| WatchPath { backing: b, name: Some(name) }),
        );
    }
    let transcript = Loc::Agent { slot: agent.0, gen: agent.1, part: Part::Transcript };
    out.extend(tree.backing(&transcript, agents).map(|b| WatchPath { backing: b, name: None }));
    // A fixture's exit is its pid directory's removal (see `arm_exit`).
    if !tree.proc_is_real() {
        let backing = Backing { base: tree.proc_base().clone(), rel: c".".into() };
        out.push(WatchPath { backing, name: Some(pid) });
    }
    out
}

/// A watch made now gets its exit poll: a pidfd of the agent, polled
/// through the ring (`Token::Exit`). With none — the agent has gone
/// already — the reader's evaluation says so. Only under the kernel's
/// `/proc`: a fixture's pids name no process here, so its exits are seen
/// by the watch on its `--proc` directory instead.
fn arm_exit(tree: &Tree, ring: &mut Ring<Token>, agents: &Agents, waits: &mut Waits, agent: AgentKey) {
    let Some(pid) = agents.get(agent.0, agent.1).map(|a| a.found.pid) else { return };
    if !tree.proc_is_real() {
        return;
    }
    if let (Ok(fd), Some(w)) = (crate::sys::pidfd_open(pid), waits.agents.get_mut(&agent)) {
        let (slot, gen) = agent;
        w.poll = Some(ring.submit(Token::Exit { slot, gen }, Sub::PollIn { fd: fd.as_raw_fd() }));
        w.pidfd = Some(fd);
    }
}

/// Add an inotify watch on `p`: a directory's entries written, created,
/// moved in, deleted; a file's appends and truncations. Symlinks are never
/// followed (the path is the mirror's: base and checked names).
fn add_watch(fd: &OwnedFd, p: &WatchPath) -> Result<i32, i32> {
    use rustix::fs::inotify::WatchFlags as W;
    let mut path = p.backing.base.as_bytes().to_vec();
    path.push(b'/');
    path.extend_from_slice(p.backing.rel.as_bytes());
    let path = CString::new(path).map_err(|_| libc::EINVAL)?;
    let flags = match p.name {
        Some(_) => W::CLOSE_WRITE | W::MOVED_TO | W::CREATE | W::DELETE | W::MODIFY | W::ONLYDIR,
        None => W::MODIFY | W::CLOSE_WRITE | W::ATTRIB | W::DELETE_SELF | W::MOVE_SELF,
    } | W::DONT_FOLLOW;
    rustix::fs::inotify::add_watch(fd.as_fd(), path.as_c_str(), flags).map_err(|e| e.raw_os_error())
}

/// The (wd, mask, name) of each event in a buffer read from an inotify
/// fd: wd[4] mask[4] cookie[4] len[4] name[len], NUL-padded.
fn parse_events(buf: &[u8]) -> impl Iterator<Item = (i32, u32, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let head = buf.get(at..at + 16)?;
        let wd = i32::from_ne_bytes(head[0..4].try_into().ok()?);
        let mask = u32::from_ne_bytes(head[4..8].try_into().ok()?);
        let len = u32::from_ne_bytes(head[12..16].try_into().ok()?) as usize;
        let raw = buf.get(at + 16..at + 16 + len)?;
        at += 16 + len;
        let name = &raw[..memchr::memchr(0, raw).unwrap_or(raw.len())];
        Some((wd, mask, name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(wd: i32, name: &[u8]) -> Vec<u8> {
        event_masked(wd, 2, name)
    }

    fn event_masked(wd: i32, mask: u32, name: &[u8]) -> Vec<u8> {
        let len = if name.is_empty() { 0 } else { (name.len() + 1).next_multiple_of(16) };
        let mut e = Vec::new();
        e.extend_from_slice(&wd.to_ne_bytes());
        e.extend_from_slice(&mask.to_ne_bytes());
        e.extend_from_slice(&0u32.to_ne_bytes());
        e.extend_from_slice(&(len as u32).to_ne_bytes());
        let mut n = name.to_vec();
        n.resize(len, 0);
        e.extend(n);
        e
    }

    #[test]
    fn events_parse_to_their_watch_and_name() {
        let mut buf = event(3, b"");
        buf.extend(event(4, b"123.json"));
        let got: Vec<(i32, Vec<u8>)> = parse_events(&buf).map(|(wd, _, n)| (wd, n.to_vec())).collect();
        assert_eq!(got, vec![(3, Vec::new()), (4, b"123.json".to_vec())]);
        assert_eq!(parse_events(&buf[..20]).count(), 1, "a cut event is not read");
    }

    /// Waits with two agents' watches on made-up descriptors: 3 a
    /// directory both watch for their own names, 4 and 5 their files.
    fn two_agents() -> Waits {
        let mut w = Waits::new(100);
        let (a, b) = ((1, 1), (2, 1));
        let (oa, ob) = (On::Agent(a), On::Agent(b));
        w.wds.insert(3, Wd { users: vec![(oa, Some(b"1.json".to_vec())), (ob, Some(b"2.json".to_vec()))] });
        w.wds.insert(4, Wd { users: vec![(oa, None)] });
        w.wds.insert(5, Wd { users: vec![(ob, None)] });
        for k in [a, b] {
            w.agents.insert(k, AgentWatch::default());
        }
        w
    }

    #[test]
    fn a_directory_event_wakes_only_the_agent_it_names() {
        let mut w = two_agents();
        let (woken, again) = w.agents_in(&event(3, b"2.json"));
        assert_eq!((woken, again), (vec![(2, 1)], vec![]));
        let (woken, _) = w.agents_in(&event(3, b"9.json"));
        assert!(woken.is_empty());
    }

    #[test]
    fn a_watched_file_that_went_is_watched_again() {
        use rustix::fs::inotify::ReadFlags as R;
        let mut w = two_agents();
        for mask in [R::IGNORED, R::DELETE_SELF, R::MOVE_SELF, R::ATTRIB] {
            let (woken, again) = w.agents_in(&event_masked(4, mask.bits(), b""));
            assert_eq!((woken, again), (vec![(1, 1)], vec![(1, 1)]), "{mask:?}");
        }
    }

    #[test]
    fn an_overflowed_queue_wakes_every_agent() {
        use rustix::fs::inotify::ReadFlags as R;
        let mut w = two_agents();
        let (mut woken, _) = w.agents_in(&event_masked(-1, R::QUEUE_OVERFLOW.bits(), b""));
        woken.sort();
        assert_eq!(woken, vec![(1, 1), (2, 1)]);
    }
}
