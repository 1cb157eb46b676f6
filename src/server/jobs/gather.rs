//! The facts executor: what runs a sans-I/O derivation (`crate::facts`)
//! against the disk, for whichever job derives — the scan, an agent's
//! fields, a walk onto a derived file.
//!
//! A job holds a `Gather` and calls its derivation with the facts so far;
//! what the derivation wants and does not have becomes a batch of probes
//! (`Want::Bytes` a slurp, `Want::Meta` a look, `Want::List` an open and
//! an inline getdents), except readlinks, which io_uring has no operation
//! for and which run inline — the derivations ask for them only under
//! `/proc` (an fd table, a cwd), at most `LINKS_PER_ROUND_MAX` a round.
//! When the batch is back its answers join the facts and the derivation
//! runs again.
//!
//! A compressed transcript (`zst::is_compressed`) is read as what it
//! decodes to: its head (`Want::Bytes`) decoded from its first compressed
//! bytes, inline and bounded by the want's size; its tail (`Want::Tail`)
//! from the decoded copy its chat index holds (`pool::Inflated`), which a
//! refresh of its chat makes when there is none as the file is now — the
//! job waits for that refresh (`Step::WaitChat`) and derives again.
//!
//! Every wanted path is composed by the derivation from fixed parts and
//! names it checked; the executor checks once more that no component of a
//! path under a harness is empty, `.`, `..` or excluded, and answers such a
//! want EACCES without touching the disk.

use std::ffi::CString;
use std::os::fd::OwnedFd;

use crate::errors::Error;
use crate::exclude;
use crate::facts::{Fact, Facts, Root, Want, SLURP_BYTES_MAX, TOO_MANY_ENTRIES};
use crate::meta::Meta;
use crate::sessions::SessionKey;
use crate::tree::{Backing, Tree};
use crate::zst;

use super::super::probe::{Batch, Kind, Probe, Target};
use super::cx::{drive, ChatOf, Cx, Event, Need, Step};

/// Rounds of gathering one derivation may take. Each round is one batch of
/// reads that the previous answers made necessary; the deepest ladder (a
/// codex lock: /proc/locks, the lock dir, the day dirs, the rollout heads)
/// takes a handful, a scan of thousands of processes some tens. Past it
/// the job fails loudly rather than loop.
pub(crate) const GATHER_ROUNDS_MAX: u32 = 4096;
/// Reads one round plans, and readlinks it runs inline: a scan of a machine
/// with thousands of processes is cut into rounds of this many, each a
/// turn of the loop, so no other client waits behind more than one round.
pub(crate) const GATHER_BATCH_MAX: usize = 128;
const _: () =
    assert!(GATHER_BATCH_MAX <= super::super::probe::BATCH_IN_FLIGHT_MAX, "a round's probes are all in flight at once");
pub(crate) const LINKS_PER_ROUND_MAX: usize = 256;
/// Entries a `Want::List` reads at most (an fd table, a day of rollouts);
/// past it the want fails, so the route resolves nothing rather than guess
/// from part of a listing.
pub(crate) const LIST_ENTRIES_MAX: usize = 65_536;

/// A gathering in progress.
#[derive(Default)]
pub(crate) struct Gather {
    pub facts: Facts,
    /// The wants of the batch in flight, in probe order.
    wants: Vec<Want>,
    batch: Batch,
    fetching: bool,
    rounds: u32,
    /// A read that failed for want of fds or memory: the facts cannot be
    /// trusted to say what is absent (a scan would drop agents, a field
    /// would answer not-found), so the derivation answers this (`run`).
    starved: Option<Error>,
    /// A compressed transcript's tail wanted, whose decoded copy is not
    /// there (or not as the file is now): the next fetch waits for the
    /// refresh of its chat, which makes it (`waiting` while it runs).
    to_inflate: Option<Box<(Want, SessionKey)>>,
    waiting: Option<Want>,
    /// What a look found a moment ago will do (`Gather::recent`).
    recent: bool,
}

/// What a derivation run over the facts came to (`Gather::run`).
pub(crate) enum Ran<T> {
    /// It answered.
    Done(T),
    /// Reads are in flight, or a turn must pass: the job returns this and
    /// runs again on its next event.
    Wait(Step),
    /// The facts cannot be believed (a read failed for want of fds or
    /// memory), or it wanted more than `GATHER_ROUNDS_MAX` rounds.
    Failed(Error),
}

/// What the job does after asking for what its derivation needs.
enum Fetch {
    /// Everything needed was answered inline: run the derivation again.
    Again,
    /// Reads are in flight, or a turn must pass first.
    Wait(Step),
    /// Past `GATHER_ROUNDS_MAX`: the derivation fails.
    OutOfRounds,
}

impl Gather {
    /// A gathering for an answer a moment old will do for (a `usage`): a
    /// file's or a directory's look from the last moment
    /// (`Listings::seen`) stands for one of its own.
    pub(crate) fn recent() -> Gather {
        Gather { recent: true, ..Gather::default() }
    }

    /// Feed an event to the batch in flight: `Ok` when the derivation is to
    /// run again (the batch is in, or none was out), else the step to
    /// return meanwhile.
    pub(crate) fn on_event(&mut self, cx: &mut Cx, ev: Event) -> Result<(), Step> {
        if let (Some(want), Event::Refreshed(r)) = (&self.waiting, &ev) {
            // A failed decoding (past --max-inflated, not zstd) is the
            // tail's answer: an error, not another wait.
            if let Err(e) = r {
                self.facts.insert(want.clone(), Err(e.entry().1 as i32));
            }
            self.waiting = None;
            return Ok(());
        }
        if !self.fetching {
            return Ok(());
        }
        drive(&mut self.batch, &mut cx.ops, ev)?;
        self.fetching = false;
        self.absorb(cx);
        Ok(())
    }

    /// Run `derive` over the facts gathered so far until it answers,
    /// gathering what it says it still needs: the one loop every job that
    /// derives runs (after `on_event` took the event it was woken by).
    pub(crate) fn run<T>(
        &mut self,
        cx: &mut Cx,
        mut derive: impl FnMut(&mut Cx, &Facts, &mut Vec<Want>) -> Option<T>,
    ) -> Ran<T> {
        loop {
            if let Some(e) = self.starved {
                return Ran::Failed(e);
            }
            let mut needs = Vec::new();
            if let Some(answer) = derive(cx, &self.facts, &mut needs) {
                return Ran::Done(answer);
            }
            match self.fetch(cx, needs) {
                Fetch::Again => continue,
                Fetch::Wait(step) => return Ran::Wait(step),
                Fetch::OutOfRounds => return Ran::Failed(Error::Io),
            }
        }
    }

    /// The derivation wants `needs`: answer readlinks inline, probe the
    /// rest (at most `GATHER_BATCH_MAX` a round).
    fn fetch(&mut self, cx: &mut Cx, needs: Vec<Want>) -> Fetch {
        self.rounds += 1;
        if self.rounds > GATHER_ROUNDS_MAX {
            log::warn!("a derivation wanted more than {GATHER_ROUNDS_MAX} rounds of reads; giving up");
            return Fetch::OutOfRounds;
        }
        if let Some((want, key)) = self.to_inflate.take().map(|b| *b) {
            self.waiting = Some(want);
            return Fetch::Wait(Step::WaitChat { of: ChatOf::Session(std::rc::Rc::new(key)), need: Need::Now });
        }
        let (mut probes, mut links, mut more) = (Vec::new(), 0, false);
        let mut seen = std::collections::HashSet::with_capacity(needs.len());
        self.wants.clear();
        for want in needs {
            if self.facts.contains(&want) || !seen.insert(want.clone()) {
                continue;
            }
            if let Want::Link { root, rel } = &want {
                if links == LINKS_PER_ROUND_MAX {
                    more = true;
                    continue;
                }
                links += 1;
                let fact = readlink(cx.tree, *root, rel);
                self.facts.insert(want, fact);
                continue;
            }
            if probes.len() == GATHER_BATCH_MAX {
                more = true;
                continue;
            }
            if let Some(fact) = self.recent.then(|| seen_lately(cx, &want)).flatten() {
                self.facts.insert(want, fact);
                continue;
            }
            let (Some(backing), Some(kind)) = (want_backing(cx.tree, &want), probe_kind(cx, &want)) else {
                self.facts.insert(want, Err(libc::EACCES));
                continue;
            };
            probes.push(Probe::new(Target::Beneath(backing), kind, cx.cfg.allow_hard_links));
            self.wants.push(want);
        }
        if probes.is_empty() {
            // Only readlinks this round, and more to come: a turn of the
            // loop passes before the next round rather than run them all.
            return if more { Fetch::Wait(Step::Yield) } else { Fetch::Again };
        }
        let old = std::mem::replace(&mut self.batch, Batch::new(probes));
        old.release(&mut cx.ops);
        self.fetching = true;
        match drive(&mut self.batch, &mut cx.ops, Event::Start) {
            Ok(()) => {
                self.fetching = false;
                self.absorb(cx);
                Fetch::Again
            }
            Err(step) => Fetch::Wait(step),
        }
    }

    /// The batch is back: fold each probe's answer into the facts.
    fn absorb(&mut self, cx: &mut Cx) {
        let batch = std::mem::take(&mut self.batch);
        for (want, p) in std::mem::take(&mut self.wants).into_iter().zip(batch.probes) {
            if let Want::Meta { root, rel } | Want::List { root, rel } = &want {
                cx.listings.saw(*root, rel, p.found());
            }
            let fact = match (&want, p.found()) {
                (_, Err(e @ (libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS))) => {
                    self.starved.get_or_insert(Error::from_errno(e));
                    Err(e)
                }
                (_, Err(e)) => Err(e),
                (Want::Bytes { rel, max, .. }, Ok(_)) if zst::is_compressed(rel) => {
                    zst::head(&p.data, (*max).min(SLURP_BYTES_MAX) as usize).map(Fact::Bytes).map_err(|e| {
                        log::debug!("a compressed transcript's head does not decode: {e}");
                        libc::EIO
                    })
                }
                (Want::Tail { root: Root::Harness(h), rel, max }, Ok(m)) if zst::is_compressed(rel) => {
                    match cx.chats.inflated(m.dev, m.ino, m.btime, m.size, m.mtime_ns()) {
                        Some(copy) => {
                            let all = copy.map.as_deref().unwrap_or_default();
                            let from = all.len().saturating_sub((*max).min(SLURP_BYTES_MAX) as usize);
                            Ok(Fact::Bytes(all[from..].to_vec()))
                        }
                        None => {
                            // Its chat's refresh decodes it (`fetch`).
                            let (harness, transcript) = (*h, rel.clone().into());
                            let key = SessionKey { harness, id: Box::default(), transcript, sub: None, agent: None };
                            self.to_inflate.get_or_insert_with(|| Box::new((want.clone(), key)));
                            p.release(&mut cx.ops);
                            continue;
                        }
                    }
                }
                (Want::Bytes { .. } | Want::Tail { .. }, Ok(_)) => {
                    // The read buffer was sized for the most; keep a copy
                    // of what came, and free the buffer whole. (Shrunk in
                    // place, each left a few bytes live every buffer's
                    // length apart, and the heap could neither reuse nor
                    // return the rest: a scan of 3,200 command lines held
                    // 15 MB of it.)
                    let data = p.data[..].to_vec();
                    Ok(Fact::Bytes(data))
                }
                (Want::Meta { .. }, Ok(m)) => Ok(Fact::Meta(m)),
                (Want::List { .. }, Ok(m)) if !m.is_dir() => Err(libc::ENOTDIR),
                (Want::List { root, rel }, Ok(m)) => match listed(cx, *root, rel, &m, p.fd.as_ref()) {
                    Some(fact) => fact,
                    // A listing kept that no longer holds: no fact, and the
                    // derivation asks again (and reads it).
                    None => {
                        p.release(&mut cx.ops);
                        continue;
                    }
                },
                (Want::Link { .. }, Ok(_)) => Err(libc::EINVAL),
            };
            p.release(&mut cx.ops);
            self.facts.insert(want, fact);
        }
    }

    /// Give back the fds of a batch still held.
    pub(crate) fn release(self, cx: &mut Cx) {
        self.batch.release(&mut cx.ops);
    }
}

/// A directory `m` a probe found: read through its open `fd`, or, looked
/// at only, its kept listing if the directory is as it was (`None`: it is
/// not, and must be read).
fn listed(cx: &mut Cx, root: Root, rel: &[u8], m: &Meta, fd: Option<&OwnedFd>) -> Option<Result<Fact, i32>> {
    let Some(fd) = fd else { return cx.listings.check(root, rel, m).map(|names| Ok(Fact::Names(names))) };
    let taken = crate::meta::wall_ns();
    Some(match super::super::dirents::read(fd, LIST_ENTRIES_MAX) {
        Ok(names) => {
            let names = std::rc::Rc::new(names);
            cx.listings.keep(root, rel, m, names.clone(), taken);
            Ok(Fact::Names(names))
        }
        Err(Error::DirTooLarge) => Err(TOO_MANY_ENTRIES),
        Err(e) => Err(e.errno() as i32),
    })
}

/// How a want is probed; `None` for a readlink, which no probe reads
/// (`fetch` runs them inline).
fn probe_kind(cx: &Cx, want: &Want) -> Option<Kind> {
    Some(match *want {
        // What its copy holds is known only once it is looked at.
        Want::Tail { root: Root::Harness(_), ref rel, .. } if zst::is_compressed(rel) => Kind::Look,
        // Its first compressed bytes, as many as a slurp reads.
        Want::Bytes { root: Root::Harness(_), ref rel, .. } if zst::is_compressed(rel) => Kind::Slurp(SLURP_BYTES_MAX),
        Want::Bytes { max, .. } => Kind::Slurp(max.min(SLURP_BYTES_MAX)),
        Want::Tail { max, .. } => Kind::SlurpTail(max.min(SLURP_BYTES_MAX)),
        Want::Meta { .. } => Kind::Look,
        // A listing kept: a look says whether it still holds.
        Want::List { root, ref rel } if cx.listings.kept(root, rel) => Kind::Look,
        Want::List { .. } => Kind::Read,
        Want::Link { .. } => return None,
    })
}

/// What a look a moment ago says of `want`, if one did and it says all a
/// fact needs: a file's statx, a directory's listing as kept and as the
/// look found it, or that it is not there.
fn seen_lately(cx: &mut Cx, want: &Want) -> Option<Result<Fact, i32>> {
    match want {
        Want::Meta { root, rel } => Some(cx.listings.seen(*root, rel)?.map(Fact::Meta)),
        Want::List { root, rel } => match cx.listings.seen(*root, rel)? {
            Err(e) => Some(Err(e)),
            Ok(m) if !m.is_dir() => Some(Err(libc::ENOTDIR)),
            Ok(m) => cx.listings.check(*root, rel, &m).map(|names| Ok(Fact::Names(names))),
        },
        _ => None,
    }
}

/// Where a want's path lives, or `None` when the path may not be read.
fn want_backing(tree: &Tree, want: &Want) -> Option<Backing> {
    let (Want::Bytes { root, rel, .. }
    | Want::Tail { root, rel, .. }
    | Want::List { root, rel }
    | Want::Meta { root, rel }
    | Want::Link { root, rel }) = want;
    let base = match root {
        Root::Proc => tree.proc_base().clone(),
        Root::Harness(h) => tree.harness_base(*h)?.clone(),
    };
    if !rel_is_safe(rel, matches!(root, Root::Harness(_))) {
        return None;
    }
    let rel = if rel.is_empty() { b".".to_vec() } else { rel.clone() };
    Some(Backing { base, rel: CString::new(rel).ok()? })
}

/// readlink of a path under a root, inline (no ring operation exists).
pub(crate) fn readlink(tree: &Tree, root: Root, rel: &[u8]) -> Result<Fact, i32> {
    let base = match root {
        Root::Proc => tree.proc_base(),
        Root::Harness(h) => tree.harness_base(h).ok_or(libc::ENOENT)?,
    };
    if !rel_is_safe(rel, matches!(root, Root::Harness(_))) {
        return Err(libc::EACCES);
    }
    let mut path = base.as_bytes().to_vec();
    path.push(b'/');
    path.extend_from_slice(rel);
    let path = CString::new(path).map_err(|_| libc::EINVAL)?;
    match rustix::fs::readlink(path.as_c_str(), Vec::new()) {
        Ok(target) => Ok(Fact::Link(target.into_bytes())),
        Err(e) => Err(e.raw_os_error()),
    }
}

/// Every component is a plain name (not empty, `.`, `..`), and under a
/// harness none is excluded.
fn rel_is_safe(rel: &[u8], harness: bool) -> bool {
    rel.is_empty()
        || rel
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b".." && !c.contains(&0) && !(harness && exclude::excluded(c)))
}

#[cfg(test)]
mod tests {
    use super::rel_is_safe;

    #[test]
    fn a_wanted_path_under_a_harness_never_names_an_excluded_file() {
        assert!(rel_is_safe(b"projects/-home-x/abc.jsonl", true));
        assert!(!rel_is_safe(b"projects/-home-x/token.jsonl", true));
        assert!(!rel_is_safe(b"sessions/../.credentials.json", true));
        assert!(!rel_is_safe(b"a//b", true));
        assert!(rel_is_safe(b"1234/environ", false));
    }
}
