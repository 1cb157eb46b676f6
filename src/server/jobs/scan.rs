//! The scan of the agents: a job of the daemon's own, which requests that
//! need a fresh `/active` wait on (a listing of `/active` or a harness
//! under it, a walk that misses). Concurrent needs share one scan.
//!
//! It runs `active::derive::scan` over facts gathered through the ring,
//! then makes the agents table what it saw. A scan that fails (the process
//! table cannot be listed, or the derivation runs out of rounds) leaves the
//! table as the last good scan made it, and its waiters get `i/o error`
//! rather than an empty or stale listing.

use crate::active::derive::{self, Scanned};
use crate::errors::Error;
use crate::facts::{Root, Want};

use super::cx::{Cx, Event, Step, Wake};
use super::gather::{Gather, Ran};

#[derive(Default)]
pub(crate) struct Scan {
    g: Gather,
    /// What the derivation knows besides the facts, taken when the scan
    /// starts: the verdicts it trusts stay those for all its rounds.
    ctx: Option<derive::Ctx>,
}

impl Scan {
    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        let ctx = match &self.ctx {
            Some(ctx) => ctx.clone(),
            None => self.ctx.insert(begin(cx)).clone(),
        };
        match self.g.run(cx, |_, facts, needs| derive::scan(&ctx, facts, needs)) {
            Ran::Done(scanned) => self.landed(cx, &ctx, scanned),
            Ran::Wait(step) => step,
            Ran::Failed(e) => {
                log::warn!("scan: {}; the agents table stays as the last scan left it", e.text());
                failed(e)
            }
        }
    }

    /// The scan is back: the table becomes what it saw, and the verdicts
    /// it came to are kept.
    fn landed(&mut self, cx: &mut Cx, ctx: &derive::Ctx, scanned: Vec<Scanned>) -> Step {
        // A process table that could not be listed is not an empty one.
        if let Some(errno) = self.g.facts.error(&Want::List { root: Root::Proc, rel: Vec::new() }) {
            let e = std::io::Error::from_raw_os_error(errno);
            log::warn!("scan: listing {:?}: {e}", cx.tree.proc_base());
            return failed(Error::Io);
        }
        let now = std::time::Instant::now();
        for (pid, ino, harness) in derive::judged(ctx, &self.g.facts) {
            cx.agents.judged.judge(pid, ino, harness, now);
        }
        let listed = derive::listed_pids(&self.g.facts);
        cx.agents.judged.keep_only(&listed);
        let found: Vec<_> = scanned.iter().map(|s| s.found).collect();
        cx.agents.update(&found);
        for s in scanned {
            let Some(session) = s.session else { continue };
            if let Some((slot, gen)) = cx.agents.find(s.found.harness, s.found.pid) {
                if let Some(a) = cx.agents.get_mut(slot, gen) {
                    a.session = Some(session);
                }
            }
        }
        Step::Finished(Wake::Scanned(Ok(())))
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }
}

/// What a scan starting now knows besides the facts.
fn begin(cx: &mut Cx) -> derive::Ctx {
    cx.real.retry_bases(cx.tree);
    derive::Ctx {
        // Under a fixture `--proc` the daemon is not among the processes
        // listed: its real pid may be a fixture's agent's.
        own_pid: if cx.tree.proc_is_real() { std::process::id() } else { 0 },
        real_bases: cx.real.bases.clone(),
        home: cx.real.home.clone(),
        tmp: cx.real.tmp.clone(),
        resolved: cx.agents.resolved(),
        known: cx.agents.judged.trusted(std::time::Instant::now()),
    }
}

fn failed(e: Error) -> Step {
    Step::Finished(Wake::Scanned(Err(e)))
}
