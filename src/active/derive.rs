//! The `/active` derivations, sans I/O: the scan of `<proc>` with each new
//! agent's session resolved, and the fields of one agent. Each is a pure
//! function over the facts gathered so far (`crate::facts`) that answers,
//! or pushes what it still wants and returns `None`; the server fetches the
//! wants through the ring and calls again. The routes themselves are the
//! pure functions of the sibling modules; this file is the order they run
//! in and the files they read.

use std::collections::BTreeMap;

use crate::facts::{Facts, Name, Root, Want};

use super::agents::{Found, Session};
use super::judged::Known;
use super::{claude, codex, dsh, head, omp, paths, proc, routes, Field, Harness, Via};

/// Bytes of `<proc>/<pid>/cmdline` read to classify a process: argv[0]
/// and the daemon words come first; a longer command line is classified by
/// its first 16 KiB.
pub(crate) const CMDLINE_BYTES_MAX: u32 = 16 * 1024;
/// Bytes of a `stat` file (a few hundred in practice).
pub(crate) const STAT_BYTES_MAX: u32 = 4 * 1024;
/// Bytes of a transcript's head and of its tail read for its title, model
/// and cwd (see `active::HEAD_BYTES_MAX`, `TAIL_BYTES_MAX`).
pub(crate) const HEAD_BYTES_MAX: u32 = super::HEAD_BYTES_MAX as u32;
pub(crate) const TAIL_BYTES_MAX: u32 = super::TAIL_BYTES_MAX as u32;

/// What the derivations need to know besides the facts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ctx {
    /// The daemon's own pid: its ancestry is never listed. 0 when the
    /// processes are a fixture's, which the daemon is not one of.
    pub own_pid: u32,
    /// Each harness's base as the kernel spells it (resolved), to match
    /// the targets of fd links; `None` when it does not exist.
    pub real_bases: [Option<Vec<u8>>; crate::harness::Harness::COUNT],
    /// `$HOME` and the temp dir, resolved (omp names its stores by them).
    pub home: Vec<u8>,
    pub tmp: Vec<u8>,
    /// Agents already resolved, by pid and starttime: not asked again.
    pub resolved: Vec<(u32, u64)>,
    /// Processes whose verdict holds this scan: their command lines are
    /// not read (`judged`).
    pub known: std::rc::Rc<Known>,
}

/// One agent the scan found, and its session when it resolved one now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scanned {
    pub found: Found,
    pub session: Option<Session>,
}

fn pid_rel(pid: u32, file: &str) -> Vec<u8> {
    format!("{pid}/{file}").into_bytes()
}

/// Scan `<proc>`: every process classified as an agent, not of our own
/// ancestry, with its starttime; and for each not yet resolved, its session.
pub(crate) fn scan(ctx: &Ctx, facts: &Facts, needs: &mut Vec<Want>) -> Option<Vec<Scanned>> {
    let listing = facts.names(Root::Proc, b"", needs)?;
    let mut candidates = Vec::new();
    let mut waiting = false;
    for (pid, ino) in listing.iter().filter_map(|n| Some((pid_of(&n.name)?, n.ino))) {
        let verdict = match trusted(ctx, pid, ino) {
            Some(h) => h,
            None => match facts.bytes_upto(Root::Proc, &pid_rel(pid, "cmdline"), CMDLINE_BYTES_MAX, needs) {
                Some(cmdline) => proc::classify(cmdline),
                None => {
                    waiting = true;
                    continue;
                }
            },
        };
        if let Some(h) = verdict {
            candidates.push((pid, h));
        }
    }
    let ancestry = ancestry(ctx.own_pid, facts, needs);
    if waiting {
        return None;
    }
    let ancestry = ancestry?;
    let mut out = Vec::new();
    let mut complete = true;
    for (pid, h) in candidates {
        if ancestry.contains(&pid) {
            continue;
        }
        let Some(stat) = facts.bytes_upto(Root::Proc, &pid_rel(pid, "stat"), STAT_BYTES_MAX, needs) else {
            complete = false;
            continue;
        };
        let Some(st) = proc::parse_pid_stat(stat) else { continue };
        if matches!(st.state, b'Z' | b'X') {
            continue;
        }
        let found = Found { harness: h, pid, starttime: st.starttime_ticks };
        let session = if ctx.resolved.contains(&(pid, st.starttime_ticks)) {
            None
        } else {
            match resolve(ctx, &found, facts, needs) {
                Some(s) => s,
                None => {
                    complete = false;
                    continue;
                }
            }
        };
        out.push(Scanned { found, session });
    }
    complete.then_some(out)
}

/// The inode procfs reports for a `<proc>/<pid>` entry it could not make
/// an inode for (`proc_fill_cache`'s fallback): it names no process, so no
/// verdict is trusted by it.
const PROC_INO_UNKNOWN: u64 = 1;

/// The verdicts a scan over `facts` came to by reading command lines
/// (those `ctx.known` did not hold): pid, its `<proc>` entry's inode, the
/// harness its command line names. (One that could not be read — the
/// process ended — reads empty, no harness: its pid leaves the listing,
/// and its verdict with it, `Judged::keep_only`.)
pub(crate) fn judged(ctx: &Ctx, facts: &Facts) -> Vec<(u32, u64, Option<Harness>)> {
    let mut unused = Vec::new();
    let Some(listing) = facts.names(Root::Proc, b"", &mut unused) else { return Vec::new() };
    listing
        .iter()
        .filter_map(|n| Some((pid_of(&n.name)?, n.ino)))
        .filter(|&(pid, ino)| trusted(ctx, pid, ino).is_none())
        .filter_map(|(pid, ino)| {
            let rel = pid_rel(pid, "cmdline");
            let cmdline = facts.bytes_upto(Root::Proc, &rel, CMDLINE_BYTES_MAX, &mut unused)?;
            Some((pid, ino, proc::classify(cmdline)))
        })
        .collect()
}

/// The verdict `ctx.known` holds for process `pid` whose `<proc>` entry
/// has inode `ino`, if it may be trusted: the same entry, and one procfs
/// made an inode for.
fn trusted(ctx: &Ctx, pid: u32, ino: u64) -> Option<Option<Harness>> {
    let &(known, h) = ctx.known.get(&pid)?;
    (known == ino && ino != PROC_INO_UNKNOWN).then_some(h)
}

/// The pids the listing of `<proc>` in `facts` holds.
pub(crate) fn listed_pids(facts: &Facts) -> std::collections::HashSet<u32> {
    let mut unused = Vec::new();
    let listing = facts.names(Root::Proc, b"", &mut unused).unwrap_or_default();
    listing.iter().filter_map(|n| pid_of(&n.name)).collect()
}

fn pid_of(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name[0] == b'0' || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

/// The daemon's own pid and its ancestors, read parent by parent; none
/// when the daemon is not among the processes (`own_pid` 0).
fn ancestry(own: u32, facts: &Facts, needs: &mut Vec<Want>) -> Option<Vec<u32>> {
    if own == 0 {
        return Some(Vec::new());
    }
    let mut chain = vec![own];
    let mut pid = own;
    for _ in 0..proc::ANCESTRY_DEPTH_MAX {
        let stat = facts.bytes_upto(Root::Proc, &pid_rel(pid, "stat"), STAT_BYTES_MAX, needs)?;
        let Some(ppid) = proc::parse_pid_stat(stat).map(|s| s.ppid) else { break };
        if ppid == 0 || chain.contains(&ppid) {
            break;
        }
        chain.push(ppid);
        pid = ppid;
    }
    Some(chain)
}

/// Resolve an agent's session through its harness's routes, in order.
/// `Some(None)` when no route answered (asked again next scan).
pub(crate) fn resolve(ctx: &Ctx, found: &Found, facts: &Facts, needs: &mut Vec<Want>) -> Option<Option<Session>> {
    let h = found.harness;
    let cwd = facts.link(Root::Proc, &pid_rel(found.pid, "cwd"), needs)?.map(<[u8]>::to_vec);
    for via in routes(h) {
        let got = match via {
            Via::Registry => route_registry(found, facts, needs)?,
            Via::Fd => route_fd(ctx, h, found, facts, needs)?,
            Via::Dir => route_omp_dir(ctx, h, cwd.as_deref(), facts, needs)?,
            Via::Lock => route_codex_lock(found, facts, needs)?,
            Via::None => None,
        };
        let Some((id, rel)) = got else { continue };
        if !believed(h, found, &rel, cwd.as_deref(), facts, needs)? {
            continue;
        }
        return Some(Some(Session { id, via: via.as_str(), transcript: Some(rel) }));
    }
    if h == Harness::Hermes {
        return Some(Some(Session { id: Vec::new(), via: Via::None.as_str(), transcript: None }));
    }
    Some(None)
}

/// A resolved transcript is believed when its head's cwd (where it
/// records one) is the process's.
fn believed(
    h: Harness,
    found: &Found,
    rel: &[u8],
    cwd: Option<&[u8]>,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<bool> {
    let head_bytes = facts.bytes_upto(Root::Harness(found.harness), rel, HEAD_BYTES_MAX, needs)?;
    let recorded = head::read_head(h, head_bytes, None).and_then(|hd| hd.cwd);
    Some(head::check_cwd(recorded.as_deref(), cwd).believed())
}

fn route_registry(found: &Found, facts: &Facts, needs: &mut Vec<Want>) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let rel = format!("sessions/{}.json", found.pid).into_bytes();
    let record = facts.bytes(Root::Harness(found.harness), &rel, needs)?;
    let Ok(reg) = claude::parse_registry(record) else { return Some(None) };
    if claude::check_registry(&reg, found.pid, found.starttime).is_err() {
        return Some(None);
    }
    let dir = match claude::claude_project_dir(&reg.cwd) {
        claude::ProjectDir::Exact(d) => d,
        claude::ProjectDir::Long { prefix } => {
            // The session id, not the hash, decides which long dir it is.
            let names: Vec<Name> = facts.names(Root::Harness(found.harness), b"projects", needs)?.to_vec();
            let mut hit = None;
            for n in names.iter().filter(|n| claude::long_dir_matches(&n.name, &prefix)) {
                let Some(rel) = claude::transcript_rel(&n.name, &reg.session_id) else { continue };
                if facts.meta(Root::Harness(found.harness), &rel, needs)?.is_some() {
                    hit = Some(n.name.clone());
                }
            }
            match hit {
                Some(d) => d,
                None => return Some(None),
            }
        }
    };
    let Some(rel) = claude::transcript_rel(&dir, &reg.session_id) else { return Some(None) };
    Some(Some((reg.session_id, rel)))
}

/// The targets of a process's fd links (all of them: the executor reads at
/// most `LINKS_PER_ROUND_MAX` a turn of the loop, and a table past
/// `LIST_ENTRIES_MAX` lists as an error, not a shorter list).
fn fd_targets(pid: u32, facts: &Facts, needs: &mut Vec<Want>) -> Option<Vec<Vec<u8>>> {
    let fds: Vec<Name> = facts.names(Root::Proc, &pid_rel(pid, "fd"), needs)?.to_vec();
    let mut targets = Vec::new();
    let mut waiting = false;
    for fd in fds {
        let mut rel = pid_rel(pid, "fd/");
        rel.extend_from_slice(&fd.name);
        match facts.link(Root::Proc, &rel, needs) {
            None => waiting = true,
            Some(Some(t)) => targets.push(t.to_vec()),
            Some(None) => {}
        }
    }
    (!waiting).then_some(targets)
}

fn route_fd(
    ctx: &Ctx,
    h: Harness,
    found: &Found,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let Some(root) = ctx.real_bases[found.harness.index()].as_deref() else { return Some(None) };
    let targets = fd_targets(found.pid, facts, needs)?;
    let refs: Vec<&[u8]> = targets.iter().map(Vec::as_slice).collect();
    let hit = match h {
        Harness::Codex => {
            // A process may hold its subagents' rollouts too: pick its own.
            let rollouts = codex::fd_rollouts(&refs, root);
            let heads: Vec<_> = rollouts
                .iter()
                .map(|r| codex_thread(Root::Harness(found.harness), r.rel, r.id, facts, needs))
                .collect();
            codex::pick_thread(&heads.into_iter().collect::<Option<Vec<_>>>()?)
                .map(|i| (rollouts[i].id.to_vec(), rollouts[i].rel.to_vec()))
        }
        Harness::Dsh => dsh::fd_sessions(&refs, root).first().map(|s| (s.id.to_vec(), s.rel.to_vec())),
        Harness::Omp | Harness::Pi => {
            let found_omp = omp::fd_transcripts(&refs, root);
            let mut dated = Vec::new();
            for t in &found_omp {
                let m = facts.meta(Root::Harness(found.harness), t.rel, needs)?;
                dated.push((*t, m.map_or(0, |m| m.mtime.max(0) as u64)));
            }
            omp::newest(&dated).map(|t| (t.id.to_vec(), t.rel.to_vec()))
        }
        Harness::Claude | Harness::Hermes => None,
    };
    Some(hit.filter(|(_, rel)| paths::safe_rel(rel)))
}

fn route_omp_dir(
    ctx: &Ctx,
    h: Harness,
    cwd: Option<&[u8]>,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let Some(cwd) = cwd else { return Some(None) };
    let root = Root::Harness(h);
    for store in omp::store_dirs(cwd, &ctx.home, &ctx.tmp) {
        let mut dir = b"agent/sessions/".to_vec();
        dir.extend_from_slice(&store);
        if !paths::safe_rel(&dir) {
            continue;
        }
        let names: Vec<Name> = facts.names(root, &dir, needs)?.to_vec();
        let mut dated = Vec::new();
        for n in &names {
            let mut rel = dir.clone();
            rel.push(b'/');
            rel.extend_from_slice(&n.name);
            let m = facts.meta(root, &rel, needs)?;
            dated.push((n.name.as_slice(), m.map_or(0, |m| m.mtime.max(0) as u64)));
        }
        if let Some(name) = omp::dir_pick(&dated) {
            let Some(id) = omp::session_id(name) else { continue };
            let mut rel = dir.clone();
            rel.push(b'/');
            rel.extend_from_slice(name);
            return Some(Some((id.to_vec(), rel)));
        }
    }
    Some(None)
}

fn route_codex_lock(found: &Found, facts: &Facts, needs: &mut Vec<Want>) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let root = Root::Harness(found.harness);
    let locks = facts.bytes(Root::Proc, b"locks", needs)?;
    let held = codex::held_write_flocks(locks, found.pid);
    if held.is_empty() {
        return Some(None);
    }
    let lock_names: Vec<Name> = facts.names(root, b"thread-writer-locks", needs)?.to_vec();
    // locked_threads takes the lock files' names as listed (`<id>.lock`).
    let files: Vec<(&[u8], u64)> = lock_names.iter().map(|n| (n.name.as_slice(), n.ino)).collect();
    let mut threads = Vec::new();
    for id in codex::locked_threads(&held, &files) {
        let Some(ms) = codex::uuidv7_ms(id) else { continue };
        // The day directories come spelled from the codex root.
        for dir in codex::rollout_day_dirs(ms) {
            let names = facts.names(root, &dir, needs)?;
            if let Some(name) = codex::rollout_in_listing(names.iter().map(|n| n.name.as_slice()), id) {
                let mut rel = dir.clone();
                rel.push(b'/');
                rel.extend_from_slice(name);
                threads.push((id.to_vec(), rel));
                break;
            }
        }
    }
    // Every candidate asked at once (no `?` until all have been): one round.
    let heads: Vec<_> = threads.iter().map(|(id, rel)| codex_thread(root, rel, id, facts, needs)).collect();
    let pick = codex::pick_thread(&heads.into_iter().collect::<Option<Vec<_>>>()?);
    Some(pick.map(|i| threads[i].clone()))
}

/// What [`codex::pick_thread`] weighs of one rollout: its first record and
/// its mtime, both wanted at once.
fn codex_thread<'f>(
    root: Root,
    rel: &[u8],
    id: &'f [u8],
    facts: &'f Facts,
    needs: &mut Vec<Want>,
) -> Option<codex::Thread<'f>> {
    let first = facts.bytes_upto(root, rel, HEAD_BYTES_MAX, needs);
    let meta = facts.meta(root, rel, needs);
    let (first, meta) = (first?, meta?);
    let end = memchr::memchr(b'\n', first).unwrap_or(first.len());
    Some(codex::Thread { first_record: &first[..end], mtime: meta.map_or(0, |m| m.mtime), id })
}

/// The fields of one agent, derived now: a field absent from the map is
/// not served. `None` while facts are missing; `Some(None)` when the
/// process is no longer the agent (gone, or its pid reused).
pub(crate) fn fields(
    agent: &Found,
    session: Option<&Session>,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Option<BTreeMap<Field, Vec<u8>>>> {
    let stat = facts.bytes_upto(Root::Proc, &pid_rel(agent.pid, "stat"), STAT_BYTES_MAX, needs);
    let btime = facts.bytes_upto(Root::Proc, b"stat", STAT_BYTES_MAX, needs);
    let cwd = facts.link(Root::Proc, &pid_rel(agent.pid, "cwd"), needs);
    let environ = facts.bytes(Root::Proc, &pid_rel(agent.pid, "environ"), needs);
    let h = agent.harness;
    let registry = match h {
        Harness::Claude => {
            facts.bytes(Root::Harness(agent.harness), format!("sessions/{}.json", agent.pid).as_bytes(), needs)
        }
        _ => Some(&[][..]),
    };
    let transcript = session.and_then(|s| s.transcript.as_deref());
    let head_bytes = match transcript {
        Some(rel) => facts.bytes_upto(Root::Harness(agent.harness), rel, HEAD_BYTES_MAX, needs),
        None => Some(&[][..]),
    };
    // Titles are appended as a session runs: the tail has the latest.
    let tail_bytes = match transcript {
        Some(rel) => facts.tail(Root::Harness(agent.harness), rel, TAIL_BYTES_MAX, needs),
        None => Some(&[][..]),
    };
    // The index grows at its end, where the newest names are: read its tail.
    let index = match (h, session) {
        (Harness::Codex, Some(s)) if !s.id.is_empty() => {
            facts.tail(Root::Harness(agent.harness), b"session_index.jsonl", TAIL_BYTES_MAX, needs)
        }
        _ => Some(&[][..]),
    };
    let read = Read {
        stat: stat?,
        btime: btime?,
        cwd: cwd?,
        environ: environ?,
        registry: registry?,
        head_bytes: head_bytes?,
        tail_bytes: tail_bytes?,
        index: index?,
    };
    if !proc::is_same_process(agent.starttime, read.stat) {
        return Some(None);
    }
    Some(Some(fields_of(agent, session, &read)))
}

/// The files an agent's fields come from, as read.
struct Read<'f> {
    stat: &'f [u8],
    btime: &'f [u8],
    cwd: Option<&'f [u8]>,
    environ: &'f [u8],
    registry: &'f [u8],
    head_bytes: &'f [u8],
    tail_bytes: &'f [u8],
    index: &'f [u8],
}

/// An agent's fields from what was read of its files.
fn fields_of(agent: &Found, session: Option<&Session>, read: &Read) -> BTreeMap<Field, Vec<u8>> {
    let Read { stat, btime, cwd, environ, registry, head_bytes, tail_bytes, index } = *read;
    let (h, transcript) = (agent.harness, session.and_then(|s| s.transcript.as_deref()));
    let mut out = BTreeMap::new();
    let line = |v: &[u8]| {
        let mut t = v.to_vec();
        t.push(b'\n');
        t
    };
    out.insert(Field::Pid, line(agent.pid.to_string().as_bytes()));
    if let Some(st) = proc::parse_pid_stat(stat) {
        out.insert(Field::Ppid, line(st.ppid.to_string().as_bytes()));
    }
    if let Some(b) = proc::parse_btime(btime) {
        out.insert(Field::Started, line(proc::started(b, agent.starttime).to_string().as_bytes()));
    }
    // A fact that is not known is absent, never an empty file; `zmx` is
    // always there, being what a move is written to.
    if let Some(c) = cwd {
        out.insert(Field::Cwd, line(c));
    }
    out.insert(Field::Zmx, proc::env_value(environ, b"ZMX_SESSION").map_or_else(Vec::new, line));
    if let Some(s) = session.filter(|s| !s.id.is_empty()) {
        out.insert(Field::Session, line(&s.id));
    }
    out.insert(Field::Via, line(session.map_or("none", |s| s.via).as_bytes()));
    let reg =
        claude::parse_registry(registry).ok().filter(|r| claude::check_registry(r, agent.pid, agent.starttime).is_ok());
    // Only a file longer than its head has a tail the head did not read
    // (a compressed one's head may decode to less than its file holds).
    let compressed = transcript.is_some_and(crate::zst::is_compressed);
    let tail = (head_bytes.len() == HEAD_BYTES_MAX as usize || compressed).then_some(tail_bytes);
    let hd = head::read_head(h, head_bytes, tail).unwrap_or_default();
    let name = reg.as_ref().and_then(|r| r.name.clone()).or(hd.name);
    if let Some(n) = name {
        out.insert(Field::Name, line(&n));
    }
    // codex names its threads in the session index; that is its title.
    // A tail shorter than a whole read is the whole file.
    let whole = index.len() < TAIL_BYTES_MAX as usize;
    let indexed = session.and_then(|s| codex::thread_name(index, whole, &s.id));
    if let Some(t) = indexed.or(hd.title) {
        out.insert(Field::Title, line(&t));
    }
    if let Some(m) = hd.model {
        out.insert(Field::Model, line(&m));
    }
    if let Some(status) = status_word(h, reg.as_ref(), tail_bytes) {
        // What it waits for, only while it waits.
        let waits_for = reg.as_ref().and_then(|r| r.waiting_for.as_ref()).filter(|_| status == b"waiting");
        if let Some(w) = waits_for {
            out.insert(Field::WaitingFor, line(w));
        }
        out.insert(Field::Status, line(&status));
    }
    if let Some(k) = reg.as_ref().and_then(|r| r.kind.as_ref()) {
        out.insert(Field::Kind, line(k));
    }
    out
}

/// The harness's own word for what the agent is doing (docs/ACTIVE.md):
/// claude's registry `status`; codex's last turn event in its rollout's
/// tail (`busy` after `task_started`, `idle` after the turn's end); `None`
/// where the harness publishes nothing.
fn status_word(h: Harness, registry: Option<&claude::Registry>, rollout_tail: &[u8]) -> Option<Vec<u8>> {
    match h {
        Harness::Claude => registry.and_then(|r| r.status.clone()),
        Harness::Codex => {
            let whole = rollout_tail.len() < TAIL_BYTES_MAX as usize;
            codex::turn_status(rollout_tail, whole).map(<[u8]>::to_vec)
        }
        _ => None,
    }
}

/// What a `wait` reader compares between reads: whether the agent is still
/// the process it was, and its status word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Watched {
    pub alive: bool,
    pub status: Option<Vec<u8>>,
}

/// An agent's `Watched`, derived now from the few files it comes from: its
/// `/proc/<pid>/stat`, and the registry record (claude) or the rollout's
/// tail (codex). `None` while facts are missing.
pub(crate) fn watched(
    agent: &Found,
    session: Option<&Session>,
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<Watched> {
    let root = Root::Harness(agent.harness);
    let stat = facts.bytes_upto(Root::Proc, &pid_rel(agent.pid, "stat"), STAT_BYTES_MAX, needs);
    let registry = match agent.harness {
        Harness::Claude => facts.bytes(root, format!("sessions/{}.json", agent.pid).as_bytes(), needs),
        _ => Some(&[][..]),
    };
    let tail = match (agent.harness, session.and_then(|s| s.transcript.as_deref())) {
        (Harness::Codex, Some(rel)) => facts.tail(root, rel, TAIL_BYTES_MAX, needs),
        _ => Some(&[][..]),
    };
    let (stat, registry, tail) = (stat?, registry?, tail?);
    if !proc::is_same_process(agent.starttime, stat) {
        return Some(Watched { alive: false, status: None });
    }
    let reg =
        claude::parse_registry(registry).ok().filter(|r| claude::check_registry(r, agent.pid, agent.starttime).is_ok());
    Some(Watched { alive: true, status: status_word(agent.harness, reg.as_ref(), tail) })
}

#[cfg(test)]
mod tests;
