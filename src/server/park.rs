//! Parked requests: the one mechanism for everything that waits.
//!
//! A request that cannot be answered at once becomes a `Record` in a slab:
//! its owner (a connection's tag, or the daemon itself for a scan or a
//! chat refresh), its job, the operations it has in flight, and whatever
//! it charged to its connection (a read's buffer, a walk's future fid).
//! Its tag goes into the connection's `parked` table.
//!
//! Four functions are the whole life of a record, and nothing else touches
//! one:
//! - `park` / `start_internal` make it and step its job with `Start`;
//! - `on_op` is the one route from the ring to a job: the generation is
//!   checked, the in-flight count goes down, and the job is stepped — or,
//!   when nobody wants the answer any more and the job is not pinned, the
//!   completion is dropped (an fd it carries closes through the ring);
//! - `answer` is the one place a request is answered, and it asserts it is
//!   answered exactly once (lib9p's `respond()`): the reply goes out only
//!   if the connection is alive and its table still maps the tag to this
//!   record;
//! - `reap` drops it once it is answered (or unwanted) and its last
//!   operation is back, giving back what it charged and what its job holds.
//!
//! So a Tflush, a Tversion and a hang-up are one rule: remove the tag. The
//! record finishes its operations quietly and is reaped.
//!
//! A job that waits on another — the scan of the agents, a chat index's
//! refresh — is a waiter of that job's record; when the awaited job
//! finishes, each waiter is stepped with the outcome. A job that yields
//! goes on the ready list, stepped once the turn's replies are on their way.

use std::collections::HashMap;

use slab::Slab;

use crate::errors::Error;
use crate::ring::{Completion, Sub};

use super::jobs::{
    observe::Observe,
    refresh::{Refresh, TranscriptKey, CHAT_FRESH_FOR},
    Cx, Event, Job, Need, Step,
};
use super::keymap::KeyMap;
pub(crate) use super::ops::Id;
use super::ops::Token;
use super::recent::Recent;
use super::slots::Slots;
use super::watch::AgentKey;
use super::{reply, Server};

/// Who wants the answer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Owner {
    Client {
        conn: usize,
        conn_gen: u32,
        tag: u16,
    },
    /// The daemon's own job (a scan, a refresh): wanted until it finishes.
    Internal,
}

pub(crate) struct Record {
    owner: Owner,
    gen: u32,
    in_flight: u32,
    /// Answered (or, for an internal job, finished): asserted to happen once.
    answered: bool,
    /// Bytes charged to the owner's connection until the record is reaped
    /// (at most a msize).
    charge: u32,
    /// A walk that reserved a fid in the fid caps until it lands.
    reserved_fid: bool,
    /// A read of a `wait` file (`--max-waits`, not `REQS_PARKED_MAX`).
    wait: bool,
    job: Job,
}

pub(crate) struct Reqs {
    slab: Slab<Record>,
    next_gen: u32,
    /// The scan of the agents in flight, if one is.
    scan: Option<Id>,
    /// The refresh in flight for each transcript.
    refreshes: HashMap<TranscriptKey, Id>,
    /// The observation in flight for each watched agent.
    observes: HashMap<AgentKey, Id>,
    /// Records that yielded, stepped next turn.
    ready: Vec<Id>,
    /// The records waiting for each job of the daemon's own to finish, by
    /// its key (kept apart: a client's record, which nobody waits on, is
    /// the smaller for it, and a kernel mount parks thousands).
    waiters: KeyMap<usize, Vec<Id>>,
    /// Where each transcript's last refresh left its index, and when.
    /// Only for `CHAT_FRESH_FOR`: nothing older is of use (`Recent`).
    refreshed: Recent<TranscriptKey, crate::chat::pool::ChatRef>,
    /// The chat slots refreshes take, and the refreshes queued for one.
    slots: Slots,
    /// Waiters woken by a job of the daemon's own that finished, with
    /// what woke them: stepped one after another by the outermost
    /// `settle`, never from inside the step that finished the job (a chain
    /// of jobs finishing is a loop, not a recursion as deep as the chain).
    woken: std::collections::VecDeque<(Id, Event)>,
    /// Whether a `settle` is stepping the woken already.
    waking: bool,
}

impl Reqs {
    /// No request yet; `max_chats` chat refreshes at once (`--max-chats`).
    pub(crate) fn new(max_chats: usize) -> Reqs {
        Reqs {
            slab: Slab::new(),
            next_gen: 0,
            scan: None,
            refreshes: HashMap::new(),
            observes: HashMap::new(),
            ready: Vec::new(),
            waiters: KeyMap::default(),
            refreshed: Recent::new(CHAT_FRESH_FOR),
            slots: Slots::new(max_chats),
            woken: Default::default(),
            waking: false,
        }
    }

    fn insert(&mut self, owner: Owner, job: Job, charge: usize, reserved_fid: bool) -> Id {
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let wait = job.is_wait();
        let charge = u32::try_from(charge).expect("a charge is at most a msize");
        let rec = Record { owner, gen, in_flight: 0, answered: false, charge, reserved_fid, wait, job };
        Id { key: self.slab.insert(rec), gen }
    }

    /// `waiter` waits for the daemon's own job `on` to finish.
    fn wait_for(&mut self, on: Id, waiter: Id) {
        self.waiters.entry(on.key).or_default().push(waiter);
    }

    fn get(&self, id: Id) -> Option<&Record> {
        self.slab.get(id.key).filter(|r| r.gen == id.gen)
    }

    fn get_mut(&mut self, id: Id) -> Option<&mut Record> {
        self.slab.get_mut(id.key).filter(|r| r.gen == id.gen)
    }

    /// Records alive, and records that yielded for the next turn.
    /// Give back the record slab's room past its last live record.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.slab.shrink_to_fit();
    }

    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }
}

impl Server {
    /// Park a client's request: a record, its tag in the connection's
    /// table, and its job's first step.
    pub(super) fn park(&mut self, idx: usize, tag: u16, job: Job) {
        let (charge, reserved, wait) = (job.charge(), job.reserves_fid(), job.is_wait());
        let conn = &mut self.conns[idx];
        conn.charged += charge;
        conn.waits_parked.take(usize::from(wait));
        self.world.waits.parked.take(usize::from(wait));
        if reserved {
            conn.fids.reserve(&mut self.world.fids_total);
        }
        let owner = Owner::Client { conn: idx, conn_gen: conn.gen, tag };
        let id = self.reqs.insert(owner, job, charge, reserved);
        self.conns[idx].parked.insert(tag, id.key);
        self.step(id, Event::Start);
    }

    /// Start a job of the daemon's own, with `waiter` waiting on it.
    fn start_internal(&mut self, job: Job, waiter: Id) -> Id {
        let id = self.reqs.insert(Owner::Internal, job, 0, false);
        self.reqs.wait_for(id, waiter);
        id
    }

    /// The one route from the ring to a job.
    pub(super) fn on_op(&mut self, key: usize, gen: u32, op: u32, mut c: Completion<Token>) {
        self.world.job_ops -= 1;
        let id = Id { key, gen };
        let Some(rec) = self.reqs.slab.get_mut(key).filter(|r| r.gen == gen) else {
            // A record is reaped only once its operations are back.
            log::error!("a completion outlived its request (op {op})");
            return;
        };
        rec.in_flight -= 1;
        let (answered, pinned) = (rec.answered, rec.job.pinned());
        if answered || !(self.wanted(id) || pinned) {
            if let Some(fd) = c.fd.take() {
                self.world.ring.submit(Token::Discard, Sub::Close { fd });
            }
            return self.reap_if_done(id);
        }
        self.step(id, Event::Done(op, c));
    }

    /// Step the job of `id` with `ev`, and do what it says.
    fn step(&mut self, id: Id, ev: Event) {
        let Some(rec) = self.reqs.slab.get_mut(id.key).filter(|r| r.gen == id.gen) else { return };
        let mut cx = Cx::of(&mut self.world, id.key, id.gen, &mut rec.in_flight);
        let step = rec.job.step(ev, &mut cx);
        self.settle(id, step);
    }

    fn settle(&mut self, id: Id, step: Step) {
        match step {
            Step::Wait => {}
            Step::Yield => self.reqs.ready.push(id),
            Step::WaitScan => self.wait_scan(id),
            Step::WaitChat { of, need } => self.wait_chat(id, &of, need),
            Step::WaitObserve(agent) => self.wait_observe(id, agent),
            Step::WaitWatch(agent) => {
                let reqs = &self.reqs;
                self.world.waits.wait_on(agent, id, |w| reqs.get(w).is_some_and(|r| !r.answered));
            }
            Step::Answer(result) => self.answer(id, result),
            Step::Finished(ev) => self.finish(id, ev),
        }
        self.reap_if_done(id);
        if !std::mem::replace(&mut self.reqs.waking, true) {
            while let Some((w, ev)) = self.reqs.woken.pop_front() {
                self.step(w, ev);
            }
            self.reqs.waking = false;
        }
    }

    /// Is the answer still wanted: for a client, does its tag still name
    /// this record on a live connection; for the daemon, is it unfinished?
    fn wanted(&self, id: Id) -> bool {
        let Some(rec) = self.reqs.get(id) else { return false };
        match rec.owner {
            Owner::Internal => !rec.answered,
            Owner::Client { conn, conn_gen, tag } => {
                self.conns.get(conn).is_some_and(|c| c.gen == conn_gen && c.parked.get(&tag) == Some(&id.key))
            }
        }
    }

    /// The one place a request is answered.
    fn answer(&mut self, id: Id, result: Result<super::jobs::Reply, Error>) {
        let wanted = self.wanted(id);
        let rec = &mut self.reqs.slab[id.key];
        assert!(!rec.answered, "a request is answered exactly once");
        rec.answered = true;
        let Owner::Client { conn, tag, .. } = rec.owner else {
            // A job of the daemon's own finishes (`Step::Finished`): one that
            // answers is a bug, loud in a debug build; a release build
            // drops the answer and serves on.
            debug_assert!(false, "a job of the daemon's own answered");
            log::error!("a job of the daemon's own answered; its answer is dropped");
            return reply::discard(&mut self.world, result);
        };
        if !wanted {
            return reply::discard(&mut self.world, result);
        }
        let c = &mut self.conns[conn];
        c.parked.remove(&tag);
        reply::deliver(&mut self.world, c, tag, result);
        self.dirty.push(conn);
    }

    /// A job of the daemon's own is over: wake whoever waited on it.
    fn finish(&mut self, id: Id, ev: super::jobs::Wake) {
        let rec = &mut self.reqs.slab[id.key];
        assert!(!rec.answered, "a job finishes exactly once");
        rec.answered = true;
        let waiters = self.reqs.waiters.remove(&id.key).unwrap_or_default();
        match &rec.job {
            Job::Scan(_) => self.reqs.scan = None,
            Job::Observe(o) => {
                self.reqs.observes.remove(&o.agent());
            }
            Job::Refresh(r) => {
                self.reqs.refreshes.remove(r.key());
                match ev {
                    super::jobs::Wake::Refreshed(Ok(at)) => {
                        self.reqs.refreshed.put(r.key().clone(), at, std::time::Instant::now());
                    }
                    _ => {
                        self.reqs.refreshed.forget(r.key());
                    }
                }
                if r.slotted() {
                    self.hand_on_slot();
                }
            }
            _ => {}
        }
        for w in waiters {
            // (Stepped by the outermost `settle`: see `Reqs::woken`.)
            self.reqs.woken.push_back((w, ev.into()));
        }
    }

    /// A refresh that held a chat slot finished: the first queued refresh
    /// someone still waits for takes the slot over and starts next turn
    /// (from the ready list: no recursion however long the queue); the
    /// queued ones nobody waits for any more finish unheard.
    fn hand_on_slot(&mut self) {
        let Reqs { slots, waiters, slab, .. } = &mut self.reqs;
        let live = |w: &Id| slab.get(w.key).is_some_and(|r| r.gen == w.gen);
        let (next, dropped) = slots.give_back(|id| waiters.get(&id.key).is_some_and(|ws| ws.iter().any(live)));
        if let Some(next) = next {
            if let Some(Job::Refresh(r)) = self.reqs.get_mut(next).map(|rec| &mut rec.job) {
                r.take_slot();
            }
            self.reqs.ready.push(next);
        }
        for id in dropped {
            self.settle(id, Step::Finished(super::jobs::Wake::Refreshed(Err(Error::ChatsBusy))));
        }
    }

    /// Drop the record once nothing more can happen to it: answered (or
    /// unwanted, and not pinned) with its last operation back.
    fn reap_if_done(&mut self, id: Id) {
        let Some(rec) = self.reqs.get(id) else { return };
        let over = rec.answered || !(self.wanted(id) || rec.job.pinned());
        if rec.in_flight > 0 || !over || self.reqs.waiters.contains_key(&id.key) {
            return;
        }
        let rec = self.reqs.slab.remove(id.key);
        if let Owner::Client { conn, conn_gen, .. } = rec.owner {
            if let Some(c) = self.conns.get_mut(conn).filter(|c| c.gen == conn_gen) {
                c.charged -= rec.charge as usize;
                c.waits_parked.give(usize::from(rec.wait));
                if rec.reserved_fid {
                    c.fids.unreserve(&mut self.world.fids_total);
                }
                self.dirty.push(conn);
            } else if rec.reserved_fid {
                // Its connection went, and its fids with it.
                self.world.fids_total.give(1);
            }
        }
        self.world.waits.parked.give(usize::from(rec.wait));
        let mut none = 0;
        rec.job.release(&mut Cx::of(&mut self.world, id.key, id.gen, &mut none));
    }

    /// Records whose tags a Tflush, a Tversion or a hang-up removed: those
    /// with nothing in flight and nothing to wait for go now.
    pub(super) fn forget(&mut self, keys: Vec<usize>) {
        for key in keys {
            if let Some(gen) = self.reqs.slab.get(key).map(|r| r.gen) {
                self.reap_if_done(Id { key, gen });
            }
        }
    }

    /// Park `id` until the next scan of the agents lands, starting one
    /// unless one runs.
    fn wait_scan(&mut self, id: Id) {
        if let Some(scan) = self.reqs.scan.filter(|s| self.reqs.get(*s).is_some()) {
            return self.reqs.wait_for(scan, id);
        }
        let scan = self.start_internal(Job::Scan(Box::default()), id);
        self.reqs.scan = Some(scan);
        self.step(scan, Event::Start);
    }

    /// Park `id` until an observation of `agent` lands, starting one
    /// unless one runs.
    fn wait_observe(&mut self, id: Id, agent: AgentKey) {
        if let Some(o) = self.reqs.observes.get(&agent).copied().filter(|o| self.reqs.get(*o).is_some()) {
            return self.reqs.wait_for(o, id);
        }
        let o = self.start_internal(Job::Observe(Box::new(Observe::new(agent))), id);
        self.reqs.observes.insert(agent, o);
        self.step(o, Event::Start);
    }

    /// Park `id` until the chat index of agent (`slot`, `gen`) is fresh,
    /// sharing the refresh of its transcript with anyone else reading it;
    /// with `recent`, one that landed a moment ago will do.
    fn wait_chat(&mut self, id: Id, of: &super::jobs::ChatOf, need: Need) {
        let recent = matches!(need, Need::Recent | Need::Usage);
        let Some(refresh) = Refresh::for_chat(&self.world, of, need == Need::Watched) else {
            return self.step(id, Event::Refreshed(Err(Error::NotFound)));
        };
        let fresh = self
            .reqs
            .refreshed
            .get(refresh.key(), std::time::Instant::now())
            .filter(|r| recent && self.world.chats.get(**r).is_some());
        if let Some(&r) = fresh {
            return self.step(id, Event::Refreshed(Ok(r)));
        }
        if let Some(r) = self.reqs.refreshes.get(refresh.key()).copied().filter(|r| self.reqs.get(*r).is_some()) {
            // A refresh under way may have sized the file before what this
            // request must see was written (a wait woken by that very
            // append): unless an older index will do, it goes round again.
            if let Some(Job::Refresh(running)) = self.reqs.get_mut(r).map(|rec| &mut rec.job) {
                if !recent {
                    running.again();
                }
                if need != Need::Usage {
                    // This one reads the index: a digest will not do.
                    running.needs_index();
                }
            }
            return self.reqs.wait_for(r, id);
        }
        let key = refresh.key().clone();
        // A `wait` reader's refresh takes no slot (`slots`); any other
        // takes one, or queues for one.
        let mut refresh = refresh;
        if need != Need::Usage {
            refresh.needs_index();
        }
        let go = need == Need::Watched || self.reqs.slots.take();
        if go && need != Need::Watched {
            refresh.take_slot();
        }
        let r = self.start_internal(Job::Refresh(Box::new(refresh)), id);
        self.reqs.refreshes.insert(key, r);
        if go {
            return self.step(r, Event::Start);
        }
        if self.reqs.slots.enqueue(r).is_err() {
            log::warn!("{} chat refreshes wait for a slot: refused", self.reqs.slots.queued());
            self.settle(r, Step::Finished(super::jobs::Wake::Refreshed(Err(Error::ChatsBusy))));
        }
    }

    /// The watch these reads parked on moved: step each that is still
    /// parked (a flushed one is gone).
    pub(super) fn wake(&mut self, ids: Vec<Id>) {
        for id in ids {
            if self.reqs.get(id).is_some() {
                self.step(id, Event::Changed);
            }
        }
    }

    /// Step every record that yielded last turn (one slice each); those
    /// nobody wants any more are reaped instead.
    pub(super) fn run_ready(&mut self) {
        for id in std::mem::take(&mut self.reqs.ready) {
            let Some(rec) = self.reqs.get(id) else { continue };
            if rec.answered || !(self.wanted(id) || rec.job.pinned()) {
                self.reap_if_done(id);
                continue;
            }
            self.step(id, Event::Resume);
        }
    }
}
