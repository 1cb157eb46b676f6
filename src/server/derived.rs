//! The derived views' jobs: the scan of the agents, and an agent's fields
//! for a stat, an open or a listing. Each runs a derivation of
//! `active::derive` over facts gathered through the ring (`gather`).

use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use crate::active::derive::{self, Scanned};
use crate::errors::Error;
use crate::facts::{Root, Want};
use crate::proto::{Qid, QTFILE};
use crate::tree::{Attr, Field, Loc, Part};

use super::conn::{DirEntry, Opened};
use super::gather::{Gathering, GATHER_ROUNDS_MAX};
use super::job::{Derivation, Job, Pending, Purpose, Reply, Req, Step, SubPurpose};
use super::Server;

impl Server {
    /// Start a scan of the agents unless one is running. Requests that need
    /// it are in `scan_waiters` and resume when it lands.
    pub(super) fn start_scan(&mut self) {
        if self.scanning {
            return;
        }
        self.scanning = true;
        self.next_req_gen = self.next_req_gen.wrapping_add(1);
        let req = Req::internal(self.next_req_gen, Job::Gather { d: Derivation::Scan, g: Gathering::default() });
        let key = self.reqs.insert(req);
        let step = self.gather_step(key);
        self.settle(key, step);
    }

    /// Run the job's derivation; fetch what it wants, or finish.
    pub(super) fn gather_step(&mut self, key: usize) -> Step {
        loop {
            let Job::Gather { d, g } = &mut self.reqs[key].job else { unreachable!("only a gathering gathers") };
            let mut g = std::mem::take(g);
            let d = *d;
            g.rounds += 1;
            if g.rounds > GATHER_ROUNDS_MAX {
                log::warn!("a derivation wanted more than {GATHER_ROUNDS_MAX} rounds of reads; giving up");
                return self.derivation_failed(d);
            }
            let mut needs = Vec::new();
            let done = self.derive(&d, &g, &mut needs);
            if let Some(step) = done {
                return step;
            }
            let probes = self.plan_wants(&mut g, needs);
            let req = &mut self.reqs[key];
            req.probes = probes;
            if let Job::Gather { g: slot, .. } = &mut req.job {
                *slot = g;
            }
            if !req.probes.is_empty() {
                return Step::Wait;
            }
        }
    }

    /// Run `d` over the facts: `Some` step when it answered.
    fn derive(&mut self, d: &Derivation, g: &Gathering, needs: &mut Vec<Want>) -> Option<Step> {
        match *d {
            Derivation::Scan => {
                let ctx = self.derive_ctx();
                let scanned = derive::scan(&ctx, &g.facts, needs)?;
                // A process table that could not be listed is not an empty one.
                if let Some(errno) = g.facts.error(&Want::List { root: Root::Proc, rel: Vec::new() }) {
                    log::warn!(
                        "scan: listing {:?}: {}",
                        self.tree.proc_base(),
                        std::io::Error::from_raw_os_error(errno)
                    );
                    return Some(self.scan_failed());
                }
                self.scan_landed(scanned);
                Some(Step::Finished)
            }
            Derivation::Fields { slot, gen, purpose } => {
                let Some(agent) = self.tree.agents.get(slot, gen) else {
                    return Some(Step::Answer(Err(Error::NotFound)));
                };
                let (found, session) = (agent.found, agent.session.clone());
                let transcript = session.as_ref().and_then(|s| s.transcript.clone());
                let fields = derive::fields(&found, session.as_ref(), &g.facts, needs);
                // A listing shows the transcript with its real size and time.
                let meta = match (purpose, transcript) {
                    (Purpose::List { .. }, Some(rel)) => g.facts.meta(Root::Harness(found.harness), &rel, needs)?,
                    _ => None,
                };
                let Some(fields) = fields? else { return Some(Step::Answer(Err(Error::NotFound))) };
                Some(Step::Answer(self.fields_answer(slot, gen, purpose, fields, meta)))
            }
            Derivation::Sub { slot, gen, purpose } => {
                let Some(agent) = self.tree.agents.get(slot, gen) else {
                    return Some(Step::Answer(Err(Error::NotFound)));
                };
                let (found, session) = (agent.found, agent.session.clone());
                Some(Step::Answer(self.sub_answer(slot, gen, purpose, &found, session.as_ref(), g, needs)?))
            }
        }
    }

    /// `agents/`, `agents/<name>/` and `agents/<name>/model`, derived.
    #[allow(clippy::too_many_arguments)]
    fn sub_answer(
        &mut self,
        slot: u32,
        gen: u32,
        purpose: SubPurpose,
        found: &crate::tree::agents::Found,
        session: Option<&crate::tree::agents::Session>,
        g: &Gathering,
        needs: &mut Vec<Want>,
    ) -> Option<Result<Reply, Error>> {
        let loc = |part| Loc::Agent { slot, gen, part };
        let name_of = |tree: &crate::tree::Tree, i: u32| {
            tree.agents.get(slot, gen).and_then(|a| a.subagents.get(i as usize).cloned())
        };
        Some(match purpose {
            SubPurpose::ListAgents { fid } => {
                let names = derive::subagents(found, session, &g.facts, needs)?;
                let Some(agent) = self.tree.agents.get_mut(slot, gen) else { return Some(Err(Error::NotFound)) };
                let mut entries = Vec::new();
                for n in &names {
                    let Some(i) = agent.subagent_index(n) else { return Some(Err(Error::DirTooLarge)) };
                    entries.push(DirEntry { loc: loc(Part::Sub(i)), attr: Attr::Skeleton });
                }
                let qid = self.tree.skeleton_qid(&loc(Part::Agents));
                Ok(Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) })
            }
            SubPurpose::ListSub { fid, i } => {
                let Some(name) = name_of(&self.tree, i) else { return Some(Err(Error::NotFound)) };
                let model = derive::subagent_model(found, session, &name, &g.facts, needs);
                let rel = session.and_then(|s| s.transcript.as_deref()).and_then(|m| derive::subagent_rel(m, &name));
                let meta = match &rel {
                    Some(rel) => g.facts.meta(Root::Harness(found.harness), rel, needs)?,
                    None => None,
                };
                let Some(meta) = meta else { return Some(Err(Error::NotFound)) };
                let mut entries = Vec::new();
                if let Some(model) = model? {
                    let text = line(&model);
                    entries.push(DirEntry { loc: loc(Part::SubModel(i)), attr: self.text_attr(&text) });
                }
                entries.push(DirEntry { loc: loc(Part::SubTranscript(i)), attr: Attr::Disk(meta) });
                let qid = self.tree.skeleton_qid(&loc(Part::Sub(i)));
                Ok(Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) })
            }
            SubPurpose::OpenModel { i, .. } | SubPurpose::StatModel(i) => {
                let Some(name) = name_of(&self.tree, i) else { return Some(Err(Error::NotFound)) };
                let Some(model) = derive::subagent_model(found, session, &name, &g.facts, needs)? else {
                    return Some(Err(Error::NotFound));
                };
                let text = line(&model);
                match purpose {
                    SubPurpose::StatModel(_) => {
                        Ok(Reply::Stat { loc: loc(Part::SubModel(i)), attr: self.text_attr(&text) })
                    }
                    _ => {
                        let SubPurpose::OpenModel { fid, .. } = purpose else { unreachable!() };
                        let qid = self.text_qid(slot, gen, Part::SubModel(i), &text);
                        Ok(Reply::Open { fid, qid, opened: Opened::Text(Rc::new(text)) })
                    }
                }
            }
        })
    }

    fn text_attr(&self, text: &[u8]) -> Attr {
        Attr::Text {
            len: text.len() as u64,
            version: crate::tree::text_version(&String::from_utf8_lossy(text)),
            mtime: self.tree.started_unix(),
        }
    }

    fn derivation_failed(&mut self, d: Derivation) -> Step {
        match d {
            Derivation::Scan => self.scan_failed(),
            Derivation::Fields { .. } | Derivation::Sub { .. } => Step::Answer(Err(Error::Io)),
        }
    }

    /// The scan failed: the table stays the last good scan's, and the
    /// requests that waited for this one answer an error rather than a
    /// listing that is not the machine's.
    fn scan_failed(&mut self) -> Step {
        self.tree.agents.scan_error = Some(Error::Io);
        self.scanning = false;
        self.wake_scan_waiters();
        Step::Finished
    }

    /// The scan is back: the table becomes what it saw, and every request
    /// that waited for it resumes.
    fn scan_landed(&mut self, scanned: Vec<Scanned>) {
        self.tree.agents.scan_error = None;
        let found: Vec<_> = scanned.iter().map(|s| s.found).collect();
        self.tree.agents.update(&found);
        for s in scanned {
            let Some(session) = s.session else { continue };
            if let Some((slot, gen)) = self.tree.agents.find(s.found.harness, s.found.pid) {
                if let Some(a) = self.tree.agents.get_mut(slot, gen) {
                    a.session = Some(session);
                }
            }
        }
        self.scanning = false;
        self.wake_scan_waiters();
    }

    /// What the derivations compare paths against, resolved as /proc spells
    /// them. Resolved once at start (before the loop runs); a base that did
    /// not exist then is tried again per scan until it does — at most five
    /// short path walks, the only filesystem calls made off the ring here.
    fn derive_ctx(&mut self) -> derive::Ctx {
        for h in 0..5u8 {
            if self.real.bases[h as usize].is_none() {
                self.real.bases[h as usize] = self.tree.harness_base(h).and_then(|b| canonical(b.as_bytes()));
            }
        }
        derive::Ctx {
            own_pid: std::process::id(),
            real_bases: self.real.bases.clone(),
            home: self.real.home.clone(),
            tmp: self.real.tmp.clone(),
            resolved: self.tree.agents.resolved(),
        }
    }

    /// Turn an agent's fields into the answer its request wanted.
    fn fields_answer(
        &self,
        slot: u32,
        gen: u32,
        purpose: Purpose,
        fields: std::collections::BTreeMap<Field, Vec<u8>>,
        transcript: Option<crate::tree::Meta>,
    ) -> Result<Reply, Error> {
        let text_attr = |text: &[u8]| Attr::Text {
            len: text.len() as u64,
            version: crate::tree::text_version(&String::from_utf8_lossy(text)),
            mtime: self.tree.started_unix(),
        };
        match purpose {
            Purpose::Stat(field) => {
                let text = fields.get(&field).ok_or(Error::NotFound)?;
                Ok(Reply::Stat { loc: Loc::Agent { slot, gen, part: Part::Field(field) }, attr: text_attr(text) })
            }
            Purpose::Open { fid, field } => {
                let text = fields.get(&field).ok_or(Error::NotFound)?;
                let qid = self.field_qid(slot, gen, field, text);
                Ok(Reply::Open { fid, qid, opened: Opened::Text(Rc::new(text.clone())) })
            }
            Purpose::List { fid } => {
                let mut entries: Vec<DirEntry> = fields
                    .iter()
                    .map(|(f, text)| DirEntry {
                        loc: Loc::Agent { slot, gen, part: Part::Field(*f) },
                        attr: text_attr(text),
                    })
                    .collect();
                if let Some(m) = transcript {
                    entries
                        .push(DirEntry { loc: Loc::Agent { slot, gen, part: Part::Transcript }, attr: Attr::Disk(m) });
                }
                // chat/ reads the transcript: listed only when it is there;
                // agents/ is a claude session's, beside it.
                let format = self.tree.chat_format(slot, gen);
                if transcript.is_some() && format.is_some() {
                    entries.push(DirEntry { loc: Loc::Agent { slot, gen, part: Part::Chat }, attr: Attr::Skeleton });
                }
                if transcript.is_some() && format == Some(crate::chat::Format::Claude) {
                    entries.push(DirEntry { loc: Loc::Agent { slot, gen, part: Part::Agents }, attr: Attr::Skeleton });
                }
                let tree = &self.tree;
                entries.sort_by(|a, b| tree.name(&a.loc).cmp(&tree.name(&b.loc)));
                let qid = tree.skeleton_qid(&Loc::Agent { slot, gen, part: Part::Dir });
                Ok(Reply::Open { fid, qid, opened: Opened::Dir(Rc::new(entries)) })
            }
        }
    }
}

impl Server {
    /// A walk's step onto an agent's field: the field is there only if its
    /// derivation yields it, and its qid carries its text's version, as a
    /// listing, a stat and an open of it do.
    pub(super) fn walk_on(&mut self, key: usize, mut step: Step) -> Step {
        while let Step::WalkField = step {
            step = self.walk_field(key);
        }
        step
    }

    fn walk_field(&mut self, key: usize) -> Step {
        let Job::Walk(w) = &mut self.reqs[key].job else { unreachable!("only a walk walks") };
        let (slot, gen, pending) = w.field.clone().expect("set by walk_next");
        let mut g = std::mem::take(&mut w.g);
        g.rounds += 1;
        let Some(agent) = self.tree.agents.get(slot, gen) else { return self.walk_field_end(key, None) };
        let (found, session) = (agent.found, agent.session.clone());
        let mut needs = Vec::new();
        let derived: Option<Option<(Part, Qid)>> = match &pending {
            Pending::Field(field) => derive::fields(&found, session.as_ref(), &g.facts, &mut needs).map(|fields| {
                let text = fields.and_then(|mut f| f.remove(field))?;
                Some((Part::Field(*field), self.field_qid(slot, gen, *field, &text)))
            }),
            Pending::Sub(name) => derive::subagents(&found, session.as_ref(), &g.facts, &mut needs).map(|names| {
                names.contains(name).then_some(())?;
                let i = self.tree.agents.get_mut(slot, gen)?.subagent_index(name)?;
                let part = Part::Sub(i);
                Some((part, self.tree.skeleton_qid(&Loc::Agent { slot, gen, part })))
            }),
            Pending::SubModel(i) => {
                let name = agent.subagents.get(*i as usize).cloned().unwrap_or_default();
                derive::subagent_model(&found, session.as_ref(), &name, &g.facts, &mut needs).map(|model| {
                    let text = line(&model?);
                    Some((Part::SubModel(*i), self.text_qid(slot, gen, Part::SubModel(*i), &text)))
                })
            }
        };
        let got = match derived {
            Some(got) => got,
            None if g.rounds <= GATHER_ROUNDS_MAX => {
                let probes = self.plan_wants(&mut g, needs);
                let req = &mut self.reqs[key];
                req.probes = probes;
                if let Job::Walk(w) = &mut req.job {
                    w.g = g;
                }
                return if req.probes.is_empty() { Step::WalkField } else { Step::Wait };
            }
            None => None,
        };
        if let (Some((part, _)), Job::Walk(w)) = (&got, &mut self.reqs[key].job) {
            w.next = Some(Loc::Agent { slot, gen, part: *part });
        }
        self.walk_field_end(key, got.map(|(_, qid)| qid))
    }

    /// The field was derived: step onto it, or end the walk short.
    fn walk_field_end(&mut self, key: usize, qid: Option<Qid>) -> Step {
        let Job::Walk(w) = &mut self.reqs[key].job else { unreachable!() };
        let next = w.next.take();
        w.field = None;
        w.g = Gathering::default();
        match (qid, next) {
            (Some(qid), Some(next)) => {
                w.qids.push(qid);
                w.cur_is_dir = matches!(next, Loc::Agent { part, .. } if part.is_dir());
                w.cur = next;
                let req = &mut self.reqs[key];
                let Job::Walk(w) = &mut req.job else { unreachable!() };
                super::job::walk_next(&self.tree, w, &mut req.probes)
            }
            _ => super::job::walk_end(w),
        }
    }

    /// A field's qid: a file, its path the agent's, its version its text's.
    pub(super) fn field_qid(&self, slot: u32, gen: u32, field: Field, text: &[u8]) -> Qid {
        self.text_qid(slot, gen, Part::Field(field), text)
    }

    /// The qid of derived text: a file, its version its text's hash.
    pub(super) fn text_qid(&self, slot: u32, gen: u32, part: Part, text: &[u8]) -> Qid {
        let version = crate::tree::text_version(&String::from_utf8_lossy(text));
        Qid { ty: QTFILE, version, path: self.tree.agent_qid_path(slot, gen, part) }
    }
}

/// A derived value as a file's text: one line.
fn line(v: &[u8]) -> Vec<u8> {
    let mut t = v.to_vec();
    t.push(b'\n');
    t
}

/// Paths resolved as the kernel spells them (readlink of /proc's fd links
/// and cwd gives resolved paths).
#[derive(Default)]
pub struct RealPaths {
    pub bases: [Option<Vec<u8>>; 5],
    pub home: Vec<u8>,
    pub tmp: Vec<u8>,
}

impl RealPaths {
    /// Resolve at start: the bases that exist, `$HOME`, the temp dir.
    pub fn at_start(tree: &crate::tree::Tree) -> RealPaths {
        let mut bases: [Option<Vec<u8>>; 5] = Default::default();
        for (h, b) in bases.iter_mut().enumerate() {
            *b = tree.harness_base(h as u8).and_then(|b| canonical(b.as_bytes()));
        }
        let home = std::env::var_os("HOME").map(|h| h.into_encoded_bytes()).unwrap_or_default();
        let tmp = std::env::temp_dir().into_os_string().into_encoded_bytes();
        RealPaths { bases, home: canonical(&home).unwrap_or(home), tmp: canonical(&tmp).unwrap_or(tmp) }
    }
}

fn canonical(path: &[u8]) -> Option<Vec<u8>> {
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    std::fs::canonicalize(path).ok().map(|p| p.into_os_string().into_encoded_bytes())
}
