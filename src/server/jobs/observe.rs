//! An agent observed for its `wait` readers: a job of the daemon's own.
//!
//! What a reader compares with what it last reported — whether the agent
//! lives, its status word (`active::derive::watched`) — is read from the
//! few files it comes from once per change of the agent's watch, however
//! many readers wait: a kernel mount with a `cat wait` in each of a
//! thousand processes is a thousand readers of maybe a hundred agents, and
//! a change wakes them all at once. The first reader a change wakes starts
//! the observation (`Step::WaitObserve`); the others wait on it. It leaves
//! what it found on the watch (`Waits::observed`), with the watch's
//! sequence number when it began, so a change that lands meanwhile makes
//! its readers look again.

use crate::active::derive::{self as active, Watched};
use crate::errors::Error;

use super::super::watch::{AgentKey, On};
use super::cx::{Cx, Event, Step, Wake};
use super::gather::{Gather, Ran};

pub(crate) struct Observe {
    agent: AgentKey,
    seq: u64,
    g: Gather,
}

impl Observe {
    pub(crate) fn new(agent: AgentKey) -> Observe {
        Observe { agent, seq: 0, g: Gather::default() }
    }

    /// The agent it observes: one observation of an agent at a time.
    pub(crate) fn agent(&self) -> AgentKey {
        self.agent
    }

    pub(crate) fn step(&mut self, ev: Event, cx: &mut Cx) -> Step {
        if let Event::Start = ev {
            self.seq = cx.waits.seq(On::Agent(self.agent));
        } else if let Err(step) = self.g.on_event(cx, ev) {
            return step;
        }
        let (slot, gen) = self.agent;
        let ran = self.g.run(cx, |cx, facts, needs| match cx.agents.get(slot, gen) {
            // Gone from the table: not the process it was.
            None => Some(Watched { alive: false, status: None }),
            Some(a) => {
                let (found, session) = (a.found, a.session.clone());
                active::watched(&found, session.as_ref(), facts, needs)
            }
        });
        match ran {
            Ran::Done(w) => self.done(cx, Ok(w)),
            Ran::Wait(step) => step,
            Ran::Failed(e) => self.done(cx, Err(e)),
        }
    }

    fn done(&mut self, cx: &mut Cx, found: Result<Watched, Error>) -> Step {
        let result = found.map(|w| cx.waits.observed(self.agent, self.seq, w));
        std::mem::take(&mut self.g).release(cx);
        Step::Finished(Wake::Observed(result))
    }

    pub(crate) fn release(self, cx: &mut Cx) {
        self.g.release(cx);
    }
}
