//! `/sessions`: every session each harness keeps on disk, running or not —
//! the pure half. Like `active::derive`, each function is a derivation over
//! the facts gathered so far (`crate::facts`): it answers, or pushes the
//! reads it still needs and returns `None`, and the server fetches them
//! through the ring. Nothing here touches a file.
//!
//! A session is named by its id and found by its transcript, a path
//! relative to the harness's base made only of listed names that passed the
//! exclusions and the id check, so a hostile file name can never become a
//! path with more than one component per name:
//!
//! ```text
//! claude  projects/<slug>/<sid>.jsonl               subagents: <slug>/<sid>/subagents/agent-<n>.jsonl,
//!                                                   and pre-2.1 siblings <slug>/agent-<n>.jsonl naming <sid>
//! codex   sessions/YYYY/MM/DD/rollout-<t>-<id>.jsonl subagents: rollouts whose session_meta names <id>
//! omp/pi  agent/sessions/<store>/<time>_<id>.jsonl  subagents: files below <store>/<time>_<id>/
//! dsh     sessions/session-<id>/session.jsonl.zstd  none (and no chat: zstd)
//! ```
//!
//! A session's fields are derived from its transcript's head and tail when
//! asked (`fields`); a listing only names the sessions (`candidates`).

use std::collections::{BTreeMap, HashMap};

use crate::active::{codex, dsh, head, omp, paths};
use crate::errors::Error;
use crate::exclude;
use crate::facts::{Facts, Name, Root, Want};
use crate::harness::Harness;
use crate::json;

/// Bytes of a transcript's head and tail read for a session's fields (the
/// same windows `/active` reads).
const HEAD_BYTES_MAX: u32 = crate::active::HEAD_BYTES_MAX as u32;
const TAIL_BYTES_MAX: u32 = crate::active::TAIL_BYTES_MAX as u32;

/// Depth below an omp/pi session's own directory its subagents' files are
/// looked for: omp writes `<dir>/<name>.jsonl`, pi's subagent extensions
/// `<dir>/<run>/run-<n>/session.jsonl`.
const SUB_DEPTH_MAX: usize = 3;

/// One session of a harness, or one of its subagents, as a node names it.
/// A subagent reached from a running agent's `agents/` remembers the agent
/// (`agent`: its slot, generation and subagent index), so `..` leads back
/// where the walk came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SessionKey {
    pub harness: Harness,
    pub id: Box<[u8]>,
    /// The session's transcript, relative to the harness's base.
    pub transcript: Box<[u8]>,
    pub sub: Option<Sub>,
    pub agent: Option<(u32, u32, u32)>,
}

/// A subagent: its name under `agents/`, and its transcript.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sub {
    pub name: Box<[u8]>,
    pub rel: Box<[u8]>,
}

impl SessionKey {
    /// The transcript this node's chat and fields are read from.
    pub(crate) fn own_rel(&self) -> &[u8] {
        self.sub.as_ref().map_or(&self.transcript, |s| &s.rel)
    }

    /// The session itself, without the subagent.
    pub(crate) fn main(&self) -> SessionKey {
        SessionKey { sub: None, agent: None, ..self.clone() }
    }
}

/// A session a listing found: its id and transcript, ordered by id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Found {
    pub id: Vec<u8>,
    pub rel: Vec<u8>,
}

/// The chat format of a session's node: a subagent's own transcript is
/// read as one (`Format::of`).
pub(crate) fn chat_format(key: &SessionKey) -> Option<crate::chat::Format> {
    crate::chat::Format::of(key.harness, key.sub.is_some())
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut rel = dir.to_vec();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    rel
}

/// A directory's names, loudly: absent is empty, but one that could not be
/// read for another reason (too many entries, out of fds) is an error, so a
/// listing never stops short.
fn names<'f>(facts: &'f Facts, h: Harness, rel: &[u8], needs: &mut Vec<Want>) -> Option<Result<&'f [Name], Error>> {
    let names = facts.names(Root::Harness(h), rel, needs)?;
    match facts.error(&Want::List { root: Root::Harness(h), rel: rel.to_vec() }) {
        None | Some(libc::ENOENT | libc::ENOTDIR) => Some(Ok(names)),
        Some(crate::facts::TOO_MANY_ENTRIES) => Some(Err(Error::DirTooLarge)),
        Some(e) => Some(Err(Error::from_errno(e))),
    }
}

/// A listed name that may be a path component: not excluded, not a link.
fn usable(n: &Name) -> bool {
    n.d_type != libc::DT_LNK && !exclude::excluded(&n.name)
}

fn is_dir(n: &Name) -> bool {
    usable(n) && matches!(n.d_type, libc::DT_DIR | libc::DT_UNKNOWN)
}

fn is_file(n: &Name) -> bool {
    usable(n) && matches!(n.d_type, libc::DT_REG | libc::DT_UNKNOWN)
}

/// Each of `dirs`' names, in order, loudly: `None` while any is missing
/// (all of the missing are asked for at once), the first error otherwise.
fn names_of_each<'f>(
    facts: &'f Facts,
    h: Harness,
    dirs: &[Vec<u8>],
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<&'f [Name]>, Error>> {
    let mut all = Vec::with_capacity(dirs.len());
    let mut waiting = false;
    for dir in dirs {
        match names(facts, h, dir, needs) {
            None => waiting = true,
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(l)) => all.push(l),
        }
    }
    (!waiting).then_some(Ok(all))
}

/// The names of the directories under `dir`, loudly.
fn subdirs(facts: &Facts, h: Harness, dir: &[u8], needs: &mut Vec<Want>) -> Option<Result<Vec<Vec<u8>>, Error>> {
    Some(names(facts, h, dir, needs)?.map(|ns| ns.iter().filter(|n| is_dir(n)).map(|n| join(dir, &n.name)).collect()))
}

/// Every session of harness `h`, unordered; `None` while facts are missing.
pub(crate) fn candidates(
    h: Harness,
    facts: &Facts,
    parents: &Parents,
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<Found>, Error>> {
    match h {
        Harness::Claude => two_levels(h, b"projects", facts, needs, claude_id),
        Harness::Omp | Harness::Pi => two_levels(h, b"agent/sessions", facts, needs, omp::session_id),
        Harness::Dsh => dsh_sessions(facts, needs),
        Harness::Codex => codex_sessions(facts, parents, needs).map(|r| r.map(parents_only)),
        Harness::Hermes => Some(Ok(Vec::new())),
    }
}

/// Project (store) directories one slice of a listing derives its
/// candidates from (`candidates_from`), a turn each: at a hundred sessions
/// a directory, 800 names a turn, where all of a 10,000-session home at
/// once was one turn of 8–15 ms.
pub(crate) const DIRS_PER_SLICE: usize = 4;

/// One slice of a listing's candidates (`candidates_from`).
pub(crate) struct Slice {
    pub(crate) found: Vec<Found>,
    /// The directory the next slice starts at; `None` at the end.
    pub(crate) next: Option<usize>,
}

/// A session's id from its transcript's file name, per harness.
type IdOf = fn(&[u8]) -> Option<&[u8]>;

/// `candidates`, a slice at a time: the sessions in the directories from
/// the `from`th, at most `DIRS_PER_SLICE` of them, and where the next
/// slice starts. Harnesses whose sessions are not one directory deep
/// (codex's days, dsh) come whole in one slice.
pub(crate) fn candidates_from(
    h: Harness,
    from: usize,
    facts: &Facts,
    parents: &Parents,
    needs: &mut Vec<Want>,
) -> Option<Result<Slice, Error>> {
    let (top, id_of): (&[u8], IdOf) = match h {
        Harness::Claude => (b"projects", claude_id),
        Harness::Omp | Harness::Pi => (b"agent/sessions", omp::session_id),
        _ => return Some(candidates(h, facts, parents, needs)?.map(|found| Slice { found, next: None })),
    };
    let dirs = match subdirs(facts, h, top, needs)? {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    let end = (from + DIRS_PER_SLICE).min(dirs.len());
    let slice = dirs.get(from..end).unwrap_or_default();
    let found = match in_dirs(h, slice, facts, needs, id_of)? {
        Ok(f) => f,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(Slice { found, next: (end < dirs.len()).then_some(end) }))
}

/// A claude session's id from its transcript's name: `<sid>.jsonl`, not a
/// pre-2.1 subagent's `agent-<n>.jsonl`.
fn claude_id(name: &[u8]) -> Option<&[u8]> {
    let id = name.strip_suffix(b".jsonl")?;
    (paths::is_session_id(id) && !id.starts_with(b"agent-")).then_some(id)
}

/// `<top>/<dir>/<file>` sessions: claude's projects, omp's and pi's stores.
fn two_levels(
    h: Harness,
    top: &[u8],
    facts: &Facts,
    needs: &mut Vec<Want>,
    id_of: impl Fn(&[u8]) -> Option<&[u8]>,
) -> Option<Result<Vec<Found>, Error>> {
    let dirs = match subdirs(facts, h, top, needs)? {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    in_dirs(h, &dirs, facts, needs, id_of)
}

/// The sessions in `dirs`, each a file `id_of` names.
fn in_dirs(
    h: Harness,
    dirs: &[Vec<u8>],
    facts: &Facts,
    needs: &mut Vec<Want>,
    id_of: impl Fn(&[u8]) -> Option<&[u8]>,
) -> Option<Result<Vec<Found>, Error>> {
    let all = match names_of_each(facts, h, dirs, needs)? {
        Ok(all) => all,
        Err(e) => return Some(Err(e)),
    };
    let mut out = Vec::new();
    for (dir, listed) in dirs.iter().zip(all) {
        for n in listed.iter().filter(|n| is_file(n)) {
            if let Some(id) = id_of(&n.name) {
                out.push(Found { id: id.to_vec(), rel: join(dir, &n.name) });
            }
        }
    }
    Some(Ok(out))
}

fn dsh_sessions(facts: &Facts, needs: &mut Vec<Want>) -> Option<Result<Vec<Found>, Error>> {
    let dirs = match names(facts, Harness::Dsh, b"sessions", needs)? {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    let found = dirs
        .iter()
        .filter(|n| is_dir(n))
        .filter_map(|n| {
            let id = n.name.strip_prefix(b"session-").filter(|id| paths::is_session_id(id))?;
            Some(Found { id: id.to_vec(), rel: join(&join(b"sessions", &n.name), dsh::TRANSCRIPT_NAME) })
        })
        .collect();
    Some(Ok(found))
}

/// A codex rollout found, and the thread it is a subagent of.
#[derive(Clone, Debug)]
pub(crate) struct Rollout {
    pub found: Found,
    pub parent: Option<Vec<u8>>,
}

/// Rollouts whose parent `Parents` remembers; past it, it starts afresh.
pub(crate) const PARENTS_KEPT: usize = 1 << 16;

/// What each codex rollout's first record says its parent is, learned once
/// per file (its path and inode), so `codex_sessions` reads the head of a
/// rollout it has not seen, not of every rollout each time: a home's
/// `usage` of 200 sessions read 200 heads of 128 KiB for each (5 GB).
/// A memo, not a fact: the first record of a rollout is written with the
/// file and never changes; only a record that was read is remembered.
#[derive(Default)]
pub(crate) struct Parents {
    known: std::cell::RefCell<std::collections::HashMap<Box<[u8]>, Learned>>,
}

/// A rollout's inode, and the parent its first record names.
type Learned = (u64, Option<Vec<u8>>);

impl Parents {
    fn get(&self, rel: &[u8], ino: u64) -> Option<Option<Vec<u8>>> {
        self.known.borrow().get(rel).filter(|(i, _)| *i == ino).map(|(_, p)| p.clone())
    }

    fn learn(&self, rel: &[u8], ino: u64, parent: Option<Vec<u8>>) {
        let mut known = self.known.borrow_mut();
        if known.len() >= PARENTS_KEPT {
            known.clear();
        }
        known.insert(rel.into(), (ino, parent));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.borrow().len()
    }
}

/// A codex rollout's id from its file's name: `rollout-<time>-<id>.jsonl`,
/// or compressed, `.jsonl.zst` (codex compresses cold rollouts, 0.17x).
fn stored_rollout_id(name: &[u8]) -> Option<&[u8]> {
    codex::rollout_id(name.strip_suffix(b".zst").unwrap_or(name))
}

/// Every codex rollout, with the parent its `session_meta` names: the days
/// under `sessions/YYYY/MM/DD/`, and `archived_sessions/` (the same names,
/// one level: the sessions a user archived). A rollout is plain or
/// compressed; of both, the plain one is the session (codex reads it first).
pub(crate) fn codex_sessions(
    facts: &Facts,
    parents: &Parents,
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<Rollout>, Error>> {
    let h = Harness::Codex;
    let mut days = vec![b"sessions".to_vec()];
    for _ in 0..3 {
        let all = match names_of_each(facts, h, &days, needs)? {
            Ok(all) => all,
            Err(e) => return Some(Err(e)),
        };
        let next = days
            .iter()
            .zip(all)
            .flat_map(|(d, listed)| listed.iter().filter(|n| is_dir(n)).map(move |n| join(d, &n.name)))
            .collect();
        days = next;
    }
    days.push(b"archived_sessions".to_vec());
    let mut out = Vec::new();
    let mut waiting = false;
    for day in &days {
        let listed = match names(facts, h, day, needs) {
            None => {
                waiting = true;
                continue;
            }
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(l)) => l,
        };
        let plain =
            |n: &Name| n.name.strip_suffix(b".zst").is_some_and(|p| listed.iter().any(|o| o.name == p && is_file(o)));
        for n in listed.iter().filter(|n| is_file(n) && !plain(n)) {
            let Some(id) = stored_rollout_id(&n.name) else { continue };
            let rel = join(day, &n.name);
            if let Some(parent) = parents.get(&rel, n.ino) {
                out.push(Rollout { found: Found { id: id.to_vec(), rel }, parent });
                continue;
            }
            let Some(first) = facts.bytes_upto(Root::Harness(h), &rel, HEAD_BYTES_MAX, needs) else {
                waiting = true;
                continue;
            };
            let Some(end) = memchr::memchr(b'\n', first) else {
                // Unreadable, or its first record not whole yet: as it is
                // now, and looked at again next time.
                out.push(Rollout { found: Found { id: id.to_vec(), rel }, parent: codex_parent(first) });
                continue;
            };
            let parent = codex_parent(&first[..end]);
            parents.learn(&rel, n.ino, parent.clone());
            out.push(Rollout { found: Found { id: id.to_vec(), rel }, parent });
        }
    }
    (!waiting).then_some(Ok(out))
}

/// The thread a subagent's rollout names as its parent
/// (`payload.source.subagent.thread_spawn.parent_thread_id`).
pub(crate) fn codex_parent(first_record: &[u8]) -> Option<Vec<u8>> {
    if !codex::is_subagent_thread(first_record) {
        return None;
    }
    let keys: [&[u8]; 5] = [b"payload", b"source", b"subagent", b"thread_spawn", b"parent_thread_id"];
    json::path_str(first_record, &keys).filter(|id| paths::is_session_id(id))
}

/// The rollouts that are sessions of their own: all but the subagents
/// whose parent is listed (a subagent whose parent is not here, or who
/// names none, is a session of its own rather than lost).
fn parents_only(all: Vec<Rollout>) -> Vec<Found> {
    let ids: std::collections::HashSet<Vec<u8>> = all.iter().map(|r| r.found.id.clone()).collect();
    all.into_iter().filter(|r| r.parent.as_ref().is_none_or(|p| !ids.contains(p))).map(|r| r.found).collect()
}

/// The subagents of a session, sorted by name; `None` while facts are
/// missing.
pub(crate) fn subagents(
    key: &SessionKey,
    facts: &Facts,
    parents: &Parents,
    needs: &mut Vec<Want>,
) -> Option<Result<Vec<Sub>, Error>> {
    let main = &key.transcript;
    let mut out = match key.harness {
        Harness::Claude => claude_subagents(main, &key.id, facts, needs)?,
        Harness::Codex => match codex_sessions(facts, parents, needs)? {
            Err(e) => Err(e),
            Ok(all) => Ok(codex_children(all).remove(&key.id[..]).unwrap_or_default()),
        },
        Harness::Omp | Harness::Pi => match main.strip_suffix(b".jsonl") {
            Some(dir) => tree_subagents(key.harness, dir, facts, needs)?,
            None => Ok(Vec::new()),
        },
        Harness::Dsh | Harness::Hermes => Ok(Vec::new()),
    };
    if let Ok(subs) = &mut out {
        subs.sort_by(|a, b| a.name.cmp(&b.name));
        subs.dedup_by(|a, b| a.name == b.name);
    }
    Some(out)
}

/// Codex's subagents of every session at once, by the parent they name:
/// what `subagents` finds for each codex session, for a reader of every
/// session (`/usage`), which would otherwise list every rollout again for
/// each one.
pub(crate) fn codex_children(all: Vec<Rollout>) -> HashMap<Box<[u8]>, Vec<Sub>> {
    let mut out: HashMap<Box<[u8]>, Vec<Sub>> = HashMap::new();
    for r in all {
        if let Some(parent) = r.parent {
            out.entry(parent.into()).or_default().push(Sub { name: r.found.id.into(), rel: r.found.rel.into() });
        }
    }
    out
}

/// Claude Code's subagents: `<sid>/subagents/agent-<n>.jsonl` (2.1 on);
/// a workflow's, one level deeper, `<sid>/subagents/workflows/<run>/
/// agent-<n>.jsonl` (2.1.170 on: named `<run>-<n>`, beside the run's
/// `journal.jsonl`, which is no transcript); and the pre-2.1
/// `agent-<n>.jsonl` beside the session whose first record names it
/// (`sessionId`).
fn claude_subagents(main: &[u8], sid: &[u8], facts: &Facts, needs: &mut Vec<Want>) -> Option<Result<Vec<Sub>, Error>> {
    let h = Harness::Claude;
    let Some(stem) = main.strip_suffix(b".jsonl") else { return Some(Ok(Vec::new())) };
    let dir = join(stem, b"subagents");
    let project = &main[..memchr::memrchr(b'/', main).unwrap_or(0)];
    // The project's listing says whether the session has a directory of
    // its own at all: only then is its `subagents/` listed.
    let old = match names(facts, h, project, needs)? {
        Ok(o) => o,
        Err(e) => return Some(Err(e)),
    };
    let own = &stem[project.len() + usize::from(!project.is_empty())..];
    let new = match old.iter().any(|n| is_dir(n) && n.name == own) {
        true => match names(facts, h, &dir, needs)? {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        },
        false => &[],
    };
    let agent = |n: &Name| -> Option<Vec<u8>> {
        let name = n.name.strip_prefix(b"agent-")?.strip_suffix(b".jsonl")?;
        (is_file(n) && paths::is_session_id(name)).then(|| name.to_vec())
    };
    let mut out: Vec<Sub> =
        new.iter().filter_map(|n| Some(Sub { rel: join(&dir, &n.name).into(), name: agent(n)?.into() })).collect();
    let mut waiting = false;
    if new.iter().any(|n| is_dir(n) && n.name == b"workflows") {
        let flows = join(&dir, b"workflows");
        let runs: Vec<Vec<u8>> = match names(facts, h, &flows, needs) {
            None => return None,
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(l)) => {
                l.iter().filter(|n| is_dir(n) && paths::is_session_id(&n.name)).map(|n| n.name.clone()).collect()
            }
        };
        for run in runs {
            let run_dir = join(&flows, &run);
            match names(facts, h, &run_dir, needs) {
                None => waiting = true,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(l)) => out.extend(l.iter().filter_map(|n| {
                    let name = [&run[..], b"-", &agent(n)?].concat();
                    paths::is_session_id(&name).then(|| Sub { rel: join(&run_dir, &n.name).into(), name: name.into() })
                })),
            }
        }
    }
    for n in old {
        let Some(name) = agent(n) else { continue };
        let rel = join(project, &n.name);
        let Some(head) = facts.bytes_upto(Root::Harness(h), &rel, HEAD_BYTES_MAX, needs) else {
            waiting = true;
            continue;
        };
        let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
        if json::path_str(first, &[b"sessionId"]).as_deref() == Some(sid) {
            out.push(Sub { name: name.into(), rel: rel.into() });
        }
    }
    (!waiting).then_some(Ok(out))
}

/// omp's and pi's subagents: the `.jsonl` files below the session's own
/// directory, to `SUB_DEPTH_MAX` levels, each named by its path there
/// with `/` as `-` and without `.jsonl`.
fn tree_subagents(h: Harness, dir: &[u8], facts: &Facts, needs: &mut Vec<Want>) -> Option<Result<Vec<Sub>, Error>> {
    let mut level = vec![dir.to_vec()];
    let mut out = Vec::new();
    for _ in 0..SUB_DEPTH_MAX {
        let all = match names_of_each(facts, h, &level, needs)? {
            Ok(all) => all,
            Err(e) => return Some(Err(e)),
        };
        let mut next = Vec::new();
        for (d, listed) in level.iter().zip(all) {
            for n in listed {
                let rel = join(d, &n.name);
                if is_dir(n) {
                    next.push(rel);
                } else if let (true, Some(_)) = (is_file(n), n.name.strip_suffix(b".jsonl")) {
                    let below = &rel[dir.len() + 1..rel.len() - b".jsonl".len()];
                    let name: Vec<u8> = below.iter().map(|&b| if b == b'/' { b'-' } else { b }).collect();
                    if paths::is_session_id(&name) {
                        out.push(Sub { name: name.into(), rel: rel.into() });
                    }
                }
            }
        }
        level = next;
    }
    Some(Ok(out))
}

/// The files of a session's directory (or a subagent's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum SField {
    Cwd,
    Description,
    Model,
    Resume,
    Session,
    Started,
    Title,
    Type,
}

impl SField {
    pub(crate) const ALL: [SField; 8] = [
        SField::Cwd,
        SField::Description,
        SField::Model,
        SField::Resume,
        SField::Session,
        SField::Started,
        SField::Title,
        SField::Type,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            SField::Cwd => "cwd",
            SField::Description => "description",
            SField::Model => "model",
            SField::Resume => "resume",
            SField::Session => "session",
            SField::Started => "started",
            SField::Title => "title",
            SField::Type => "type",
        }
    }

    pub(crate) fn from_name(name: &[u8]) -> Option<SField> {
        SField::ALL.into_iter().find(|f| f.name().as_bytes() == name)
    }

    /// A field a subagent's directory has: its model, and what Claude
    /// Code's `agent-<id>.meta.json` says of it.
    pub(crate) fn of_subagent(self) -> bool {
        matches!(self, SField::Model | SField::Type | SField::Description)
    }
}

fn line(v: &[u8]) -> Vec<u8> {
    let mut t = v.to_vec();
    t.push(b'\n');
    t
}

/// The fields of a session (or, with `key.sub`, of a subagent: its model
/// only), derived now from its transcript's head and tail: a field absent
/// from the map is not served. `base` is the harness's root as configured,
/// for the commands that name the transcript by its path.
pub(crate) fn fields(
    key: &SessionKey,
    base: &[u8],
    facts: &Facts,
    needs: &mut Vec<Want>,
) -> Option<BTreeMap<SField, Vec<u8>>> {
    let (h, rel) = (key.harness, key.own_rel());
    let root = Root::Harness(h);
    let head_bytes = facts.bytes_upto(root, rel, HEAD_BYTES_MAX, needs);
    let tail_bytes = facts.tail(root, rel, TAIL_BYTES_MAX, needs);
    let index = match (h, &key.sub) {
        (Harness::Codex, None) => facts.tail(root, b"session_index.jsonl", TAIL_BYTES_MAX, needs),
        _ => Some(&[][..]),
    };
    let (head_bytes, tail_bytes, index) = (head_bytes?, tail_bytes?, index?);
    // A compressed head may decode to less than the file holds: its tail
    // is read too (records in both are read twice, which no field minds).
    let tail = (head_bytes.len() == HEAD_BYTES_MAX as usize || crate::zst::is_compressed(rel)).then_some(tail_bytes);
    let hd = head::read_head_of(h, key.sub.is_some(), head_bytes, tail).unwrap_or_default();
    let mut out = BTreeMap::new();
    if let Some(m) = hd.model {
        out.insert(SField::Model, line(&m));
    }
    if key.sub.is_some() {
        if h == Harness::Claude {
            // Claude Code writes what it spawned the subagent as beside
            // its transcript: `agent-<id>.meta.json` (2.1.8x on).
            let meta = rel.strip_suffix(b".jsonl").map(|stem| [stem, b".meta.json"].concat());
            let meta = match meta {
                Some(m) => facts.bytes(root, &m, needs)?,
                None => &[],
            };
            for (field, key) in [(SField::Type, &b"agentType"[..]), (SField::Description, b"description")] {
                if let Some(t) = json::path_str(meta, &[key]).filter(|t| !t.is_empty()) {
                    out.insert(field, line(&paths::cap_text(paths::one_line(&t), head::TITLE_BYTES_MAX)));
                }
            }
        }
        return Some(out);
    }
    out.insert(SField::Session, line(&key.id));
    if let Some(cwd) = &hd.cwd {
        out.insert(SField::Cwd, line(cwd));
    }
    let whole = index.len() < TAIL_BYTES_MAX as usize;
    if let Some(t) = codex::thread_name(index, whole, &key.id).or(hd.title) {
        out.insert(SField::Title, line(&t));
    }
    if let Some(t) = started(head_bytes) {
        out.insert(SField::Started, line(t.to_string().as_bytes()));
    }
    if let Some(r) = resume_line(h, &key.id, &join(base, &key.transcript)) {
        out.insert(SField::Resume, line(&r));
    }
    Some(out)
}

/// When a session started: the first record's timestamp that reads as one
/// (`timestamp`, or codex's `payload.timestamp`), Unix seconds; or dsh's
/// header's `createdAt`, milliseconds.
pub(crate) fn started(head_bytes: &[u8]) -> Option<u32> {
    head::records(head_bytes, true).take(16).find_map(|r| {
        if let Some(ms) = json::field(r, b"createdAt").and_then(json::u64_of) {
            return u32::try_from(ms / 1000).ok();
        }
        let t = json::path_str(r, &[b"timestamp"]).or_else(|| json::path_str(r, &[b"payload", b"timestamp"]))?;
        crate::chat::parse_time(&t)
    })
}

/// The command line that resumes a session, to be run in its cwd: the
/// move's fixed argv (`moves::resume_argv`), each word quoted for a shell
/// where it holds anything but plain bytes. `None` where the harness has
/// no resume form (dsh).
pub(crate) fn resume_line(h: Harness, id: &[u8], transcript: &[u8]) -> Option<Vec<u8>> {
    let argv = crate::moves::resume_argv(h, id, Some(transcript)).ok()?;
    let mut out = Vec::new();
    for (i, word) in argv.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        let plain = !word.is_empty()
            && word.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b':' | b'+'));
        if plain {
            out.extend_from_slice(word);
        } else {
            out.push(b'\'');
            for &b in word {
                if b == b'\'' {
                    out.extend_from_slice(b"'\\''");
                } else if b == b'\n' {
                    return None;
                } else {
                    out.push(b);
                }
            }
            out.push(b'\'');
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Fact;

    #[test]
    fn resume_lines_are_the_moves_argv_quoted_for_a_shell() {
        assert_eq!(resume_line(Harness::Claude, b"abc", b"/h/p/abc.jsonl").unwrap(), b"claude --resume abc");
        assert_eq!(resume_line(Harness::Codex, b"019a", b"/x").unwrap(), b"codex resume 019a");
        assert_eq!(resume_line(Harness::Omp, b"i", b"/h/.omp/a b.jsonl").unwrap(), b"omp --resume '/h/.omp/a b.jsonl'");
        assert_eq!(resume_line(Harness::Pi, b"i", b"/h/it's.jsonl").unwrap(), b"pi --session '/h/it'\\''s.jsonl'");
        assert_eq!(resume_line(Harness::Dsh, b"i", b"/x"), None);
        assert_eq!(resume_line(Harness::Omp, b"i", b"/a\nb"), None, "one line or none");
    }

    #[test]
    fn pre_2_1_subagent_files_are_not_claude_sessions() {
        assert_eq!(claude_id(b"0b8c-ab.jsonl"), Some(&b"0b8c-ab"[..]));
        assert_eq!(claude_id(b"agent-2c0c8cc1.jsonl"), None);
        assert_eq!(claude_id(b"a b.jsonl"), None);
        assert_eq!(claude_id(b"notes.md"), None);
    }

    /// A codex home of one day holding `rollouts` (name, inode), every
    /// directory listed; the heads are left for the test to give.
    fn codex_day(rollouts: &[(&str, u64)]) -> Facts {
        let mut f = Facts::default();
        let h = Root::Harness(Harness::Codex);
        let dir = |name: &str, ino| Name { name: name.as_bytes().to_vec(), ino, d_type: libc::DT_DIR };
        let list = |rel: &str| Want::List { root: h, rel: rel.as_bytes().to_vec() };
        f.insert(list("sessions"), Ok(Fact::Names(vec![dir("2026", 1)].into())));
        f.insert(list("sessions/2026"), Ok(Fact::Names(vec![dir("03", 2)].into())));
        f.insert(list("sessions/2026/03"), Ok(Fact::Names(vec![dir("02", 3)].into())));
        let files = rollouts
            .iter()
            .map(|(n, ino)| Name { name: n.as_bytes().to_vec(), ino: *ino, d_type: libc::DT_REG })
            .collect();
        f.insert(list("sessions/2026/03/02"), Ok(Fact::Names(std::rc::Rc::new(files))));
        f.insert(list("archived_sessions"), Err(libc::ENOENT));
        f
    }

    #[test]
    fn a_rollouts_parent_is_read_once_per_file_and_again_for_a_new_inode() {
        const CHILD: &str = "rollout-2026-03-02T08-00-00-019cad1a-0000-7000-8000-000000000002.jsonl";
        let child_head = br#"{"type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"019cad1a-0000-7000-8000-000000000001"}}}}}
"#;
        let head = Want::Bytes {
            root: Root::Harness(Harness::Codex),
            rel: format!("sessions/2026/03/02/{CHILD}").into_bytes(),
            max: HEAD_BYTES_MAX.min(crate::facts::SLURP_BYTES_MAX),
        };
        let parents = Parents::default();
        let mut facts = codex_day(&[(CHILD, 7)]);
        let mut needs = Vec::new();
        assert!(codex_sessions(&facts, &parents, &mut needs).is_none(), "the head is not known yet");
        assert_eq!(needs, std::slice::from_ref(&head));
        facts.insert(head.clone(), Ok(Fact::Bytes(child_head.to_vec())));
        let got = codex_sessions(&facts, &parents, &mut Vec::new()).unwrap().unwrap();
        assert_eq!(got[0].parent.as_deref(), Some(&b"019cad1a-0000-7000-8000-000000000001"[..]));
        assert_eq!(parents.len(), 1);

        // Another derivation's facts, without the head: the memo answers.
        let mut needs = Vec::new();
        let got = codex_sessions(&codex_day(&[(CHILD, 7)]), &parents, &mut needs).unwrap().unwrap();
        assert!(needs.is_empty(), "a rollout seen before is not read again: {needs:?}");
        assert_eq!(got[0].parent.as_deref(), Some(&b"019cad1a-0000-7000-8000-000000000001"[..]));

        // The same name on another inode is another file: read again.
        let mut needs = Vec::new();
        assert!(codex_sessions(&codex_day(&[(CHILD, 8)]), &parents, &mut needs).is_none());
        assert_eq!(needs, [head]);
    }

    #[test]
    fn a_codex_subagent_names_its_parent_and_a_review_names_none() {
        let spawned = br#"{"type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p-1"}}}}}"#;
        assert_eq!(codex_parent(spawned), Some(b"p-1".to_vec()));
        let review = br#"{"type":"session_meta","payload":{"id":"c","source":{"subagent":"review"}}}"#;
        assert_eq!(codex_parent(review), None);
        let user = br#"{"type":"session_meta","payload":{"id":"c","source":"cli"}}"#;
        assert_eq!(codex_parent(user), None);
    }

    /// Issue 21, defect 4: a directory the disk fails to list is that
    /// failure, not "too large"; only one past the listing's bound is.
    #[test]
    fn a_directory_that_fails_to_read_says_why_and_only_one_too_large_says_so() {
        let parents = Parents::default();
        for (errno, want) in [
            (libc::EIO, Error::Io),
            (libc::EACCES, Error::PermissionDenied),
            (libc::EMFILE, Error::TooManyFids),
            (crate::facts::TOO_MANY_ENTRIES, Error::DirTooLarge),
        ] {
            let mut facts = codex_day(&[]);
            facts.insert(
                Want::List { root: Root::Harness(Harness::Codex), rel: b"sessions/2026/03/02".to_vec() },
                Err(errno),
            );
            let got = codex_sessions(&facts, &parents, &mut Vec::new()).expect("every fact is known");
            assert_eq!(got.err(), Some(want), "a listing that failed with errno {errno}");
        }
    }

    #[test]
    fn a_session_starts_at_its_first_timestamp() {
        let head = b"{\"type\":\"summary\"}\n{\"timestamp\":\"1970-01-01T00:01:00Z\"}\n";
        assert_eq!(started(head), Some(60));
    }
}
