//! `tree`: the namespace — what the daemon serves, named by node ids.
//!
//! A node id (`NodeId`) is the server's handle on a file: fids hold one,
//! walks produce them, and `..` is answered from the tree's own parent
//! links, never the kernel's. The skeleton — `/`, the facts, the harness
//! directories and the mounts where each mirror begins — is a fixed table
//! (`STATIC`); a file below a mount is a slot of the path table (`paths`),
//! named by its mount and the names below it; a part of a live agent's
//! directory is named by the agent's slot in `active::agents` and the part.
//!
//! The tree owns no live state. The agents table belongs to `active` and
//! the chat indexes to `chat`; where a name, a parent or a presence depends
//! on an agent, the caller hands the table in. Nor does it touch the disk:
//! where a node lives is a `Backing` — a harness's base directory and a
//! path beneath it composed only of the mount's fixed path and names that
//! passed the name check and the exclusions — which the server opens with
//! openat2 beneath the base, through the ring.
//!
//! A stat is an `Entry`: the owned fields of one file's stat, built once
//! from what the disk or a derivation said (`Attr`) and encoded with the
//! daemon's owner names. A listing snapshots entries, so reading it later
//! asks nothing of a table that may have moved on.

pub(crate) mod interned;
pub(crate) mod paths;
pub(crate) mod sessions;

use std::borrow::Cow;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::active::agents::{Agents, Found};
use crate::active::Field;
use crate::errors::Error;
use crate::harness::Harness;
use crate::meta::{Meta, QID_PATH_SYNTHETIC};
use crate::proto::{Dialect, Getattr, Qid, Stat, DMDIR, GETATTR_BASIC, GETATTR_BTIME, QTDIR, QTFILE};

/// The block size an Rgetattr reports, the page a read is best made in.
const GETATTR_BLKSIZE: u64 = 4096;
use crate::sessions::SessionKey;
use paths::{PathTable, Place};
pub(crate) use sessions::SPart;
use sessions::SessionTable;

/// A node: a fid's handle on what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum NodeId {
    /// An entry of `STATIC`, by index.
    Static(u16),
    /// A slot of the path table and its generation.
    Path { slot: u32, gen: u32 },
    /// A part of a live agent's directory (`Part::code`).
    Agent { slot: u32, gen: u32, part: u32 },
    /// A part of a session's directory under `/sessions` (`SPart::code`):
    /// a slot of the session table and its generation.
    Session { slot: u32, gen: u32, part: u32 },
    /// `/search/<query>`: a slot of the query table and its generation.
    Search { slot: u32, gen: u32 },
}

/// What of an agent's directory a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    Dir,
    Field(Field),
    Transcript,
    /// `chat/`: the transcript as one file per message (claude, codex).
    Chat,
    /// One message of `chat/`, by id.
    ChatMsg(u32),
    /// `wait`: a read answers when the agent changes.
    Wait,
}

/// A part code is its kind in the top four bits and its number (a field,
/// a message id) below: message ids fit, the cap on messages
/// being far below 2^28.
const PART_PAYLOAD_BITS: u32 = 28;
const _: () = assert!(crate::chat::MAX_MESSAGES_LIMIT < 1 << PART_PAYLOAD_BITS);

impl Part {
    fn code(self) -> u32 {
        let (kind, n) = match self {
            Part::Dir => (0, 0),
            Part::Transcript => (1, 0),
            Part::Field(f) => (2, f as u32),
            Part::Chat => (3, 0),
            Part::ChatMsg(id) => (4, id),
            // (5 to 8 named the claude subagents' parts: now the session's.)
            Part::Wait => (9, 0),
        };
        kind << PART_PAYLOAD_BITS | (n & ((1 << PART_PAYLOAD_BITS) - 1))
    }

    fn from_code(code: u32) -> Option<Part> {
        let n = code & ((1 << PART_PAYLOAD_BITS) - 1);
        Some(match code >> PART_PAYLOAD_BITS {
            0 => Part::Dir,
            1 => Part::Transcript,
            2 => Part::Field(*Field::ALL.get(n as usize)?),
            3 => Part::Chat,
            4 => Part::ChatMsg(n),
            9 => Part::Wait,
            _ => return None,
        })
    }

    /// Is this part a directory?
    pub(crate) fn is_dir(self) -> bool {
        matches!(self, Part::Dir | Part::Chat)
    }

    /// The part named `name` inside an agent's directory.
    pub(crate) fn child(name: &[u8]) -> Option<Part> {
        match name {
            b"transcript" => Some(Part::Transcript),
            b"chat" => Some(Part::Chat),
            b"wait" => Some(Part::Wait),
            _ => Field::ALL.iter().find(|f| f.name().as_bytes() == name).map(|f| Part::Field(*f)),
        }
    }
}

/// Where a node is, as a value a walk can carry without pinning anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Loc {
    Static(u16),
    Mirror(Place),
    Agent {
        slot: u32,
        gen: u32,
        part: Part,
    },
    /// A part of a session's (or a subagent's) directory.
    Session {
        key: Rc<SessionKey>,
        part: SPart,
    },
    /// `/search/<query>`: the query is the name.
    Search(Rc<[u8]>),
}

/// What a stat of a node is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attr {
    /// A node of the skeleton (or an agent's directory): the tree knows.
    Skeleton,
    /// A file on disk: its statx.
    Disk(Meta),
    /// Text the daemon derives: its length, its hash, its time.
    Text { len: u64, version: u32, mtime: u32 },
    /// A directory the daemon makes up, dated (a session's: its
    /// transcript's mtime).
    Dated(u32),
}

/// One file's stat, owned: what a listing snapshots and a stat answers.
/// The owner's names are the daemon's and are added when encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub name: Box<[u8]>,
    pub qid: Qid,
    /// Its type as a directory entry spells it (`DT_*`): a FIFO on disk is
    /// listed as one, though its 9P mode says only 0444.
    pub d_type: u8,
    pub mode: u32,
    pub length: u64,
    pub mtime: u32,
    pub uid: u32,
    pub gid: u32,
}

/// A file on disk: the harness's base, and the path beneath it ("." for
/// the base itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Backing {
    pub base: CString,
    pub rel: CString,
}

/// Whether a place is there, and how to find out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Presence {
    Always,
    Absent,
    Probe(Backing),
}

/// A fact computed when it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fact {
    Readme,
    Pid,
    Uptime,
    /// Whether the harnesses still write what the rules read
    /// (`crate::health`).
    Health,
}

#[derive(Clone, Copy, Debug)]
enum What {
    /// A directory of the skeleton, always there.
    Dir,
    /// `/claude`, `/codex`: there while the harness's base exists.
    HarnessDir(Harness),
    /// `/active/<harness>`: one directory per live agent of it.
    ActiveHarness(Harness),
    /// Where a mirror begins: the harness and the path under its base.
    Mount(Harness, &'static str),
    Fact(Fact),
    /// `/active/wait`: a read answers when the machine's agents change.
    Wait,
    /// `/sessions/<harness>`: one directory per session on disk.
    Sessions(Harness),
    /// `/usage/<report>`: what every session spent, summed when opened.
    Report(Report),
    /// `/usage/wait`: a read answers when the block open now changes.
    UsageWait,
    /// `/search/query`: written a query, read its results.
    SearchQuery,
}

struct StaticNode {
    name: &'static str,
    parent: u16,
    what: What,
}

const fn node(name: &'static str, parent: u16, what: What) -> StaticNode {
    StaticNode { name, parent, what }
}

use crate::reports::Report;
use Harness::{Claude, Codex, Dsh, Hermes, Omp, Pi};

/// The skeleton. Index 0 is `/`, its own parent. Children appear in the
/// order listed, which is sorted by name so a listing is stable.
const STATIC: &[StaticNode] = &[
    node("/", 0, What::Dir),
    node("README", 0, What::Fact(Fact::Readme)),
    node("claude", 0, What::HarnessDir(Claude)),
    node("codex", 0, What::HarnessDir(Codex)),
    node("dsh", 0, What::Mount(Dsh, "")),
    node("hermes", 0, What::Mount(Hermes, "")),
    node("omp", 0, What::Mount(Omp, "agent")),
    node("pid", 0, What::Fact(Fact::Pid)),
    node("skills", 0, What::Dir),
    node("uptime", 0, What::Fact(Fact::Uptime)),
    // 10: /claude
    node("history", 2, What::Mount(Claude, "history.jsonl")),
    node("projects", 2, What::Mount(Claude, "projects")),
    node("skills", 2, What::Mount(Claude, "skills")),
    // 13: /codex
    node("history", 3, What::Mount(Codex, "history.jsonl")),
    node("session-index", 3, What::Mount(Codex, "session_index.jsonl")),
    node("sessions", 3, What::Mount(Codex, "sessions")),
    // 16: /skills
    node("claude", 8, What::Mount(Claude, "skills")),
    node("codex", 8, What::Mount(Codex, "skills")),
    node("omp", 8, What::Mount(Omp, "agent/skills")),
    // 19: /active, and one directory per harness below it
    node("active", 0, What::Dir),
    node("claude", 19, What::ActiveHarness(Claude)),
    node("codex", 19, What::ActiveHarness(Codex)),
    node("dsh", 19, What::ActiveHarness(Dsh)),
    node("hermes", 19, What::ActiveHarness(Hermes)),
    node("omp", 19, What::ActiveHarness(Omp)),
    node("wait", 19, What::Wait),
    // 26: pi, as omp is served
    node("pi", 0, What::Mount(Pi, "agent")),
    node("pi", 8, What::Mount(Pi, "agent/skills")),
    node("pi", 19, What::ActiveHarness(Pi)),
    // 29: /sessions, and one directory per harness that keeps sessions
    node("sessions", 0, What::Dir),
    node("claude", 29, What::Sessions(Claude)),
    node("codex", 29, What::Sessions(Codex)),
    node("dsh", 29, What::Sessions(Dsh)),
    node("omp", 29, What::Sessions(Omp)),
    node("pi", 29, What::Sessions(Pi)),
    // 35: /health
    node("health", 0, What::Fact(Fact::Health)),
    // 36: /usage, and its reports
    node("usage", 0, What::Dir),
    node("block", 36, What::Report(Report::Block)),
    node("daily", 36, What::Report(Report::Daily)),
    node("monthly", 36, What::Report(Report::Monthly)),
    node("prices", 36, What::Report(Report::Prices)),
    node("projects", 36, What::Report(Report::Projects)),
    node("sessions", 36, What::Report(Report::Sessions)),
    node("wait", 36, What::UsageWait),
    node("weekly", 36, What::Report(Report::Weekly)),
    // 45: /search, and its file written a query
    node("search", 0, What::Dir),
    node("query", 45, What::SearchQuery),
];

/// The index of `/search`.
pub(crate) const SEARCH: u16 = 45;

/// The index of `/health`.
pub(crate) const HEALTH: u16 = 35;

/// The index of `/usage`, and of its first report.
pub(crate) const USAGE: u16 = 36;
const USAGE_FIRST: u16 = 37;

const ROOT: u16 = 0;

/// The index of `/active`.
pub(crate) const ACTIVE: u16 = 19;

/// `/README`: the tree explained in place.
pub const README: &str = include_str!("README.txt");

/// The owner fields every stat carries: the user the daemon runs as.
pub struct Owner {
    pub name: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
}

pub struct Tree {
    started: Instant,
    started_unix: u32,
    pid: u32,
    owner: Owner,
    /// Each harness's base directory, when one is configured.
    bases: [Option<CString>; crate::harness::Harness::COUNT],
    /// The `--proc` directory.
    proc_base: CString,
    paths: PathTable,
    sessions: SessionTable,
    queries: interned::Interned<Rc<[u8]>>,
    /// `--allow-move`: `zmx` is writable.
    allow_move: bool,
    /// What the chat indexes met that no rule knows (`/health`).
    health: crate::health::Health,
}

impl Tree {
    pub fn new(owner: Owner, roots: &[(Harness, PathBuf)], proc_dir: &std::path::Path, allow_move: bool) -> Self {
        let mut bases: [Option<CString>; crate::harness::Harness::COUNT] = Default::default();
        for (h, path) in roots {
            bases[h.index()] = CString::new(path.as_os_str().as_bytes()).ok();
        }
        let proc_base = CString::new(proc_dir.as_os_str().as_bytes()).unwrap_or_else(|_| c"/proc".into());
        Tree {
            started: Instant::now(),
            started_unix: unix_now(),
            pid: std::process::id(),
            owner,
            bases,
            proc_base,
            paths: PathTable::default(),
            sessions: SessionTable::default(),
            queries: interned::Interned::default(),
            health: crate::health::Health::default(),
            allow_move,
        }
    }

    pub(crate) fn root(&self) -> NodeId {
        NodeId::Static(ROOT)
    }

    /// Where a live node is; `None` for a stale path id or a gone agent.
    pub(crate) fn loc(&self, node: NodeId, agents: &Agents) -> Option<Loc> {
        match node {
            NodeId::Static(i) => Some(self.static_loc(i)),
            NodeId::Path { slot, gen } => self.paths.get(slot, gen).cloned().map(Loc::Mirror),
            NodeId::Agent { slot, gen, part } => {
                agents.get(slot, gen)?;
                Some(Loc::Agent { slot, gen, part: Part::from_code(part)? })
            }
            NodeId::Session { slot, gen, part } => {
                Some(Loc::Session { key: self.sessions.get(slot, gen)?.clone(), part: SPart::from_code(part)? })
            }
            NodeId::Search { slot, gen } => Some(Loc::Search(self.queries.get(slot, gen)?.clone())),
        }
    }

    /// The node a fid binds to for `loc`, taking a reference.
    pub(crate) fn bind(&mut self, loc: &Loc) -> NodeId {
        match loc {
            Loc::Static(i) => NodeId::Static(*i),
            Loc::Mirror(p) if p.sub.is_empty() => NodeId::Static(p.mount),
            Loc::Mirror(p) => {
                let (slot, gen) = self.paths.acquire_place(p);
                NodeId::Path { slot, gen }
            }
            Loc::Agent { slot, gen, part } => NodeId::Agent { slot: *slot, gen: *gen, part: part.code() },
            Loc::Session { key, part } => {
                let (slot, gen) = self.sessions.acquire_key(key);
                NodeId::Session { slot, gen, part: part.code() }
            }
            Loc::Search(name) => {
                let (slot, gen) = self.queries.acquire_key(name);
                NodeId::Search { slot, gen }
            }
        }
    }

    /// Another fid holds `node`.
    pub(crate) fn acquire(&mut self, node: NodeId) {
        match node {
            NodeId::Path { slot, gen } => self.paths.acquire(slot, gen),
            NodeId::Session { slot, gen, .. } => self.sessions.acquire(slot, gen),
            NodeId::Search { slot, gen } => self.queries.acquire(slot, gen),
            _ => {}
        }
    }

    /// A fid let go of `node`.
    pub(crate) fn release(&mut self, node: NodeId) {
        match node {
            NodeId::Path { slot, gen } => self.paths.release(slot, gen),
            NodeId::Session { slot, gen, .. } => self.sessions.release(slot, gen),
            NodeId::Search { slot, gen } => self.queries.release(slot, gen),
            _ => {}
        }
    }

    /// The places fids hold now (`paths`).
    pub(crate) fn paths_held(&self) -> usize {
        self.paths.len() + self.sessions.len() + self.queries.len()
    }

    /// The tallies `/health` says (`crate::health`).
    pub(crate) fn health_mut(&mut self) -> &mut crate::health::Health {
        &mut self.health
    }

    /// The session table's hints (`sessions::SessionTable::hint`).
    pub(crate) fn session_table(&mut self) -> &mut SessionTable {
        &mut self.sessions
    }

    /// `..` of `loc`: the place with its last name removed, or the mount's
    /// skeleton parent, clamped at `/`.
    pub(crate) fn parent(&self, loc: &Loc, agents: &Agents) -> Loc {
        let agent = |slot: u32, gen: u32, part| Loc::Agent { slot, gen, part };
        match loc {
            Loc::Static(i) => Loc::Static(STATIC[*i as usize].parent),
            Loc::Mirror(p) => match p.parent() {
                Some(up) => Loc::Mirror(up),
                None => Loc::Static(STATIC[p.mount as usize].parent),
            },
            Loc::Agent { slot, gen, part: Part::Dir } => match agents.get(*slot, *gen) {
                Some(a) => Loc::Static(active_dir(a.found.harness)),
                None => Loc::Static(ACTIVE),
            },
            Loc::Agent { slot, gen, part: Part::ChatMsg(_) } => agent(*slot, *gen, Part::Chat),
            Loc::Agent { slot, gen, .. } => agent(*slot, *gen, Part::Dir),
            Loc::Session { key, part } => session_parent(key, *part),
            Loc::Search(_) => Loc::Static(SEARCH),
        }
    }

    /// When the daemon started, Unix seconds: the mtime of what it derives.
    pub(crate) fn started_unix(&self) -> u32 {
        self.started_unix
    }

    /// The `--proc` directory, as the base of `facts::Root::Proc`.
    pub(crate) fn proc_base(&self) -> &CString {
        &self.proc_base
    }

    /// Whether `--proc` is the kernel's own. A fixture's pids name no
    /// process of this machine, or the wrong one: there, the daemon's own
    /// pid and its exits' pidfds mean nothing.
    pub(crate) fn proc_is_real(&self) -> bool {
        self.proc_base.as_bytes() == b"/proc"
    }

    /// A harness's base, as the base of `facts::Root::Harness`.
    pub(crate) fn harness_base(&self, h: Harness) -> Option<&CString> {
        self.bases[h.index()].as_ref()
    }

    /// Is this a directory of the skeleton (as opposed to a file of it, or
    /// a mirror whose kind only the disk knows)?
    pub(crate) fn static_is_dir(&self, i: u16) -> bool {
        matches!(STATIC[i as usize].what, What::Dir | What::HarnessDir(_) | What::ActiveHarness(_) | What::Sessions(_))
    }

    /// The skeleton child `name` of static directory `d`, as a place.
    pub(crate) fn static_child(&self, d: u16, name: &[u8]) -> Option<Loc> {
        (1..STATIC.len())
            .find(|&i| STATIC[i].parent == d && STATIC[i].name.as_bytes() == name)
            .map(|i| self.static_loc(i as u16))
    }

    /// The skeleton children of static directory `d`, in listing order.
    pub(crate) fn static_children(&self, d: u16) -> Vec<Loc> {
        let mut idx: Vec<usize> = (1..STATIC.len()).filter(|&i| STATIC[i].parent == d).collect();
        idx.sort_by_key(|&i| STATIC[i].name);
        idx.into_iter().map(|i| self.static_loc(i as u16)).collect()
    }

    fn static_loc(&self, i: u16) -> Loc {
        match STATIC[i as usize].what {
            What::Mount(..) => Loc::Mirror(Place { mount: i, sub: Vec::new() }),
            _ => Loc::Static(i),
        }
    }

    /// Is `i` `/active/wait`?
    pub(crate) fn is_machine_wait(&self, i: u16) -> bool {
        matches!(STATIC[i as usize].what, What::Wait)
    }

    /// The harness `/active/<harness>` lists, if `i` is one.
    pub(crate) fn active_harness(&self, i: u16) -> Option<Harness> {
        match STATIC[i as usize].what {
            What::ActiveHarness(h) => Some(h),
            _ => None,
        }
    }

    /// `/usage/<report>` for each report, in listing order.
    pub(crate) fn reports(&self) -> impl Iterator<Item = (u16, Report)> {
        (USAGE_FIRST..).zip(&STATIC[USAGE_FIRST as usize..]).take_while(|(_, n)| n.parent == USAGE).filter_map(
            |(i, n)| match n.what {
                What::Report(r) => Some((i, r)),
                _ => None,
            },
        )
    }

    /// `/usage/wait`'s index.
    pub(crate) fn usage_wait(&self) -> Option<u16> {
        (USAGE_FIRST..)
            .zip(&STATIC[USAGE_FIRST as usize..])
            .find(|(_, n)| matches!(n.what, What::UsageWait))
            .map(|(i, _)| i)
    }

    /// Is `i` `/search/query`?
    pub(crate) fn is_search_query(&self, i: u16) -> bool {
        matches!(STATIC[i as usize].what, What::SearchQuery)
    }

    /// Is `i` `/usage/wait`?
    pub(crate) fn is_usage_wait(&self, i: u16) -> bool {
        matches!(STATIC[i as usize].what, What::UsageWait)
    }

    /// The report `/usage/<report>` is, if `i` is one.
    pub(crate) fn report(&self, i: u16) -> Option<Report> {
        match STATIC[i as usize].what {
            What::Report(r) => Some(r),
            _ => None,
        }
    }

    /// The harness `/sessions/<harness>` lists, if `i` is one.
    pub(crate) fn sessions_harness(&self, i: u16) -> Option<Harness> {
        match STATIC[i as usize].what {
            What::Sessions(h) => Some(h),
            _ => None,
        }
    }

    /// Whether `loc` is there: always (the skeleton, an agent's own
    /// parts), never (a harness with no base, a gone agent), or when the
    /// disk says so. A chat message and a subagent are there when their
    /// index or derivation says so, which their jobs ask.
    pub(crate) fn presence(&self, loc: &Loc, agents: &Agents) -> Presence {
        match loc {
            Loc::Static(i) if !matches!(STATIC[*i as usize].what, What::HarnessDir(_)) => Presence::Always,
            Loc::Agent { slot, gen, .. } if agents.get(*slot, *gen).is_none() => Presence::Absent,
            Loc::Agent { part: Part::Dir | Part::Field(_) | Part::ChatMsg(_) | Part::Wait, .. } => Presence::Always,
            Loc::Session { part: SPart::Transcript, .. } => {
                self.backing(loc, agents).map_or(Presence::Absent, Presence::Probe)
            }
            Loc::Session { key, part: SPart::Chat | SPart::Usage } if crate::sessions::chat_format(key).is_none() => {
                Presence::Absent
            }
            Loc::Session { key, part: SPart::Agents } if key.harness == Harness::Dsh => Presence::Absent,
            Loc::Session { .. } | Loc::Search(_) => Presence::Always,
            Loc::Agent { slot, gen, part: Part::Chat } => match chat_format(agents, *slot, *gen) {
                Some(_) => Presence::Always,
                None => Presence::Absent,
            },
            _ => self.backing(loc, agents).map_or(Presence::Absent, Presence::Probe),
        }
    }

    /// Is `loc` a harness directory (`/claude`, `/codex`): a skeleton
    /// directory that is there only while its base is?
    pub(crate) fn is_harness_dir(&self, loc: &Loc) -> bool {
        matches!(loc, Loc::Static(i) if matches!(STATIC[*i as usize].what, What::HarnessDir(_)))
    }

    /// Where `loc` lives on disk, if it does; `None` for the skeleton's
    /// own directories and facts, and for a harness with no base.
    pub(crate) fn backing(&self, loc: &Loc, agents: &Agents) -> Option<Backing> {
        let (h, rel) = match loc {
            Loc::Static(i) => match STATIC[*i as usize].what {
                What::HarnessDir(h) => (h, Vec::new()),
                _ => return None,
            },
            Loc::Mirror(p) => {
                let What::Mount(h, mount_rel) = STATIC[p.mount as usize].what else { return None };
                let mut rel = mount_rel.as_bytes().to_vec();
                if !rel.is_empty() && !p.sub.is_empty() {
                    rel.push(b'/');
                }
                rel.extend_from_slice(&p.sub);
                (h, rel)
            }
            Loc::Agent { slot, gen, part: Part::Transcript } => {
                let a = agents.get(*slot, *gen)?;
                (a.found.harness, a.session.as_ref()?.transcript.clone()?)
            }
            Loc::Session { key, part: SPart::Transcript } => (key.harness, key.own_rel().to_vec()),
            Loc::Agent { .. } | Loc::Session { .. } | Loc::Search(_) => return None,
        };
        self.beneath(h, rel)
    }

    /// The backing of `rel` beneath harness `h`'s base ("." for the base).
    pub(crate) fn beneath(&self, h: Harness, mut rel: Vec<u8>) -> Option<Backing> {
        if rel.is_empty() {
            rel.push(b'.');
        }
        let base = self.bases[h.index()].clone()?;
        Some(Backing { base, rel: CString::new(rel).ok()? })
    }

    /// The name a place is listed and stat'd under. A chat message's name
    /// is its index's, which its job asks; here it is empty.
    pub(crate) fn name<'a>(&self, loc: &'a Loc, agents: &Agents) -> Cow<'a, [u8]> {
        match loc {
            Loc::Static(i) => STATIC[*i as usize].name.as_bytes().into(),
            Loc::Mirror(p) if p.sub.is_empty() => STATIC[p.mount as usize].name.as_bytes().into(),
            Loc::Mirror(p) => p.name().into(),
            Loc::Agent { slot, gen, part: Part::Dir } => {
                let pid = agents.get(*slot, *gen).map_or(0, |a| a.found.pid);
                pid.to_string().into_bytes().into()
            }
            Loc::Agent { part: Part::Transcript, .. } => b"transcript"[..].into(),
            Loc::Agent { part: Part::Field(f), .. } => f.name().as_bytes().into(),
            Loc::Agent { part: Part::Chat, .. } => b"chat"[..].into(),
            Loc::Agent { part: Part::Wait, .. } => b"wait"[..].into(),
            Loc::Agent { part: Part::ChatMsg(_), .. } => Cow::Borrowed(&[]),
            Loc::Session { key, part: SPart::Dir } => match &key.sub {
                Some(s) => s.name.to_vec().into(),
                None => key.id.to_vec().into(),
            },
            Loc::Session { part, .. } => part.name().into(),
            Loc::Search(name) => name.to_vec().into(),
        }
    }

    /// The qid of a node whose stat needs no disk: the skeleton, an
    /// agent's directories and parts (a derived file's version is its
    /// text's, which `text_qid` makes).
    pub(crate) fn skeleton_qid(&self, loc: &Loc, agents: &Agents) -> Qid {
        match loc {
            Loc::Static(i) => self.static_qid(*i),
            Loc::Agent { slot, gen, part } => {
                let ty = if part.is_dir() { QTDIR } else { QTFILE };
                let found = agents.get(*slot, *gen).map(|a| a.found);
                Qid { ty, version: 0, path: agent_qid_path(found.as_ref(), *part) }
            }
            Loc::Session { key, part } => {
                let ty = if part.is_dir() { QTDIR } else { QTFILE };
                Qid { ty, version: 0, path: sessions::qid_path(key, *part) }
            }
            Loc::Search(name) => Qid { ty: QTFILE, version: 0, path: search_qid_path(name) },
            Loc::Mirror(_) => unreachable!("a mirror's qid comes from its meta"),
        }
    }

    /// The qid of derived text: a file, its version its text's hash.
    pub(crate) fn text_qid(&self, found: Option<&Found>, part: Part, text: &[u8]) -> Qid {
        Qid { ty: QTFILE, version: text_version(text), path: agent_qid_path(found, part) }
    }

    /// The qid of a skeleton node (a mirror's comes from its `Meta`).
    pub(crate) fn static_qid(&self, i: u16) -> Qid {
        match STATIC[i as usize].what {
            What::Fact(f) => {
                Qid { ty: QTFILE, version: text_version(self.fact(f).as_bytes()), path: QID_PATH_SYNTHETIC | i as u64 }
            }
            What::Wait | What::UsageWait | What::SearchQuery | What::Report(_) => {
                Qid { ty: QTFILE, version: 0, path: QID_PATH_SYNTHETIC | i as u64 }
            }
            _ => Qid { ty: QTDIR, version: 0, path: QID_PATH_SYNTHETIC | i as u64 },
        }
    }

    /// The stat entry of `loc`, built from `attr`.
    pub(crate) fn entry(&self, loc: &Loc, attr: &Attr, agents: &Agents) -> Entry {
        let name: Box<[u8]> = self.name(loc, agents).into_owned().into_boxed_slice();
        self.entry_named(name, loc, attr, agents)
    }

    /// The stat entry of `loc` under `name` (a chat message's comes from
    /// its index).
    pub(crate) fn entry_named(&self, name: Box<[u8]>, loc: &Loc, attr: &Attr, agents: &Agents) -> Entry {
        let (uid, gid, owned) = (self.owner.uid, self.owner.gid, self.started_unix);
        let (qid, mode, length, mtime, uid, gid) = match (loc, attr) {
            (_, Attr::Disk(m)) => return disk_entry(name, m),
            (Loc::Agent { slot, gen, part }, Attr::Text { len, version, mtime }) => {
                let found = agents.get(*slot, *gen).map(|a| a.found);
                let qid = Qid { ty: QTFILE, version: *version, path: agent_qid_path(found.as_ref(), *part) };
                // zmx is the tree's one writable file, and only with --allow-move.
                let mode = if *part == Part::Field(Field::Zmx) && self.allow_move { 0o644 } else { 0o444 };
                (qid, mode, *len, *mtime, uid, gid)
            }
            // A report's length is its text's, once summed (`jobs::report`).
            (Loc::Static(i), Attr::Text { len, .. }) if matches!(STATIC[*i as usize].what, What::Report(_)) => {
                (self.static_qid(*i), 0o444, *len, owned, uid, gid)
            }
            (Loc::Static(i), _) => {
                let (mode, length) = match STATIC[*i as usize].what {
                    What::Fact(fact) => (0o444, self.fact(fact).len() as u64),
                    What::Wait | What::UsageWait | What::Report(_) => (0o444, 0),
                    What::SearchQuery => (0o644, 0),
                    _ => (DMDIR | 0o555, 0),
                };
                (self.static_qid(*i), mode, length, owned, uid, gid)
            }
            (Loc::Session { key, part }, Attr::Text { len, version, mtime }) => {
                let qid = Qid { ty: QTFILE, version: *version, path: sessions::qid_path(key, *part) };
                (qid, 0o444, *len, *mtime, uid, gid)
            }
            // A session's directory carries its transcript's mtime, so
            // `ls -lt` lists the most recent first.
            (Loc::Session { .. }, Attr::Dated(mtime)) => {
                (self.skeleton_qid(loc, agents), DMDIR | 0o555, 0, *mtime, uid, gid)
            }
            (Loc::Agent { .. } | Loc::Session { .. }, _) => {
                (self.skeleton_qid(loc, agents), DMDIR | 0o555, 0, owned, uid, gid)
            }
            // A query: a stream, written nothing, 0 bytes long.
            (Loc::Search(_), _) => (self.skeleton_qid(loc, agents), 0o444, 0, owned, uid, gid),
            (Loc::Mirror(_), _) => unreachable!("a mirror is stat'd from its meta"),
        };
        let d_type = if mode & DMDIR != 0 { libc::DT_DIR } else { libc::DT_REG };
        Entry { name, qid, d_type, mode, length, mtime, uid, gid }
    }

    /// Hand the wire stat of `e` to `f` (it borrows the owner's names).
    pub(crate) fn with_stat<R>(&self, e: &Entry, f: impl FnOnce(&Stat<'_>) -> R) -> R {
        let owner = &self.owner.name;
        let stat = Stat {
            ty: 0,
            dev: 0,
            qid: e.qid,
            mode: e.mode,
            atime: e.mtime,
            mtime: e.mtime,
            length: e.length,
            name: &e.name,
            uid: owner,
            gid: owner,
            muid: owner,
            extension: b"",
            n_uid: e.uid,
            n_gid: e.gid,
            n_muid: e.uid,
        };
        f(&stat)
    }

    /// 9P2000.L's Rgetattr of `e`: the same qid, modes (as a Linux st_mode,
    /// with the file's real type), owner, size and times as its stat, and
    /// from `meta`, where the file is on disk, its link count, blocks, and
    /// every time to the nanosecond; a file the daemon makes up has one
    /// link (two for a directory) and its stat's time for every time.
    /// `valid` names the basic fields, and the birth time where the
    /// filesystem keeps one.
    pub(crate) fn getattr(&self, e: &Entry, meta: Option<&Meta>) -> Getattr {
        let is_dir = e.qid.ty & QTDIR != 0;
        let kind = meta.map_or(if is_dir { libc::S_IFDIR } else { libc::S_IFREG }, |m| m.mode as u32 & libc::S_IFMT);
        let t = e.mtime as u64;
        let mut a = Getattr {
            valid: GETATTR_BASIC,
            qid: e.qid,
            mode: kind | (e.mode & 0o777),
            uid: e.uid,
            gid: e.gid,
            nlink: if is_dir { 2 } else { 1 },
            size: e.length,
            blksize: GETATTR_BLKSIZE,
            blocks: e.length.div_ceil(512),
            atime_sec: t,
            mtime_sec: t,
            ctime_sec: t,
            ..Getattr::default()
        };
        if let Some(m) = meta {
            let secs = |s: i64| s.max(0) as u64;
            a.nlink = u64::from(m.nlink);
            a.blocks = m.blocks;
            (a.atime_sec, a.atime_nsec) = (secs(m.atime), u64::from(m.atime_nsec));
            (a.mtime_sec, a.mtime_nsec) = (secs(m.mtime), u64::from(m.mtime_nsec));
            (a.ctime_sec, a.ctime_nsec) = (secs(m.ctime), u64::from(m.ctime_nsec));
            if m.btime != 0 {
                a.valid |= GETATTR_BTIME;
                (a.btime_sec, a.btime_nsec) = (secs(m.btime), u64::from(m.btime_nsec));
            }
        }
        a
    }

    /// The bytes of `e`'s stat in `dialect`.
    pub(crate) fn stat_size(&self, e: &Entry, dialect: Dialect) -> usize {
        self.with_stat(e, |st| crate::proto::stat_size(st, dialect))
    }

    /// Append at most `count` bytes of fact `i` from `offset` to `out`.
    pub(crate) fn read_static(&self, i: u16, offset: u64, count: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        let What::Fact(fact) = STATIC[i as usize].what else {
            return Err(Error::IsDir);
        };
        let text = self.fact(fact);
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
        let end = start.saturating_add(count as usize).min(text.len());
        out.extend_from_slice(&text.as_bytes()[start..end]);
        Ok(())
    }

    /// The text of fact `i` as it is now.
    pub(crate) fn fact_text(&self, i: u16) -> String {
        match STATIC[i as usize].what {
            What::Fact(f) => self.fact(f).into_owned(),
            _ => String::new(),
        }
    }

    fn fact(&self, fact: Fact) -> Cow<'static, str> {
        match fact {
            Fact::Readme => README.into(),
            Fact::Pid => format!("{}\n", self.pid).into(),
            Fact::Uptime => format!("{}\n", self.started.elapsed().as_secs()).into(),
            Fact::Health => self.health.render().into(),
        }
    }
}

/// The stat entry of a file on disk named `name`: its real size and mtime,
/// 0555 for a directory and 0444 for anything else.
pub(crate) fn disk_entry(name: Box<[u8]>, m: &Meta) -> Entry {
    let length = if m.is_dir() { 0 } else { m.size };
    let mode = if m.is_dir() { DMDIR | 0o555 } else { 0o444 };
    let mtime = m.mtime.clamp(0, u32::MAX as i64) as u32;
    Entry { name, qid: m.qid(), d_type: m.d_type(), mode, length, mtime, uid: m.uid, gid: m.gid }
}

/// The index of `/active/<harness>`.
pub(crate) fn active_dir(harness: Harness) -> u16 {
    (0..STATIC.len())
        .find(|&i| matches!(STATIC[i].what, What::ActiveHarness(h) if h == harness))
        .expect("every harness has an /active directory") as u16
}

/// The index of `/sessions/<harness>`, if the harness keeps sessions.
pub(crate) fn sessions_dir(harness: Harness) -> Option<u16> {
    (0..STATIC.len()).find(|&i| matches!(STATIC[i].what, What::Sessions(h) if h == harness)).map(|i| i as u16)
}

/// The index of `/sessions`.
pub(crate) const SESSIONS: u16 = 29;

/// `..` of a session's node: its directory, a subagent's `agents/` (the
/// running agent's, where the walk came from one), or `/sessions/<h>`.
fn session_parent(key: &Rc<SessionKey>, part: SPart) -> Loc {
    let at = |key: Rc<SessionKey>, part| Loc::Session { key, part };
    match (part, &key.sub, key.agent) {
        (SPart::ChatMsg(_), ..) => at(key.clone(), SPart::Chat),
        // A subagent reached from a running agent's `agents/` leads back
        // there (its key remembers the agent: `jobs::session::sub_key`).
        (SPart::Dir, Some(_), agent) => at(Rc::new(SessionKey { agent, ..key.main() }), SPart::Agents),
        (SPart::Dir, None, _) => Loc::Static(sessions_dir(key.harness).unwrap_or(SESSIONS)),
        // A running agent's `usage` (`jobs::session::agent_key`).
        (SPart::Usage | SPart::Agents, None, Some((slot, gen, _))) => Loc::Agent { slot, gen, part: Part::Dir },
        _ => at(key.clone(), SPart::Dir),
    }
}

/// Does this agent have a `chat/`: a claude or codex session with a
/// transcript? Its format, if so.
pub(crate) fn chat_format(agents: &Agents, slot: u32, gen: u32) -> Option<crate::chat::Format> {
    let a = agents.get(slot, gen)?;
    a.session.as_ref()?.transcript.as_ref()?;
    crate::chat::Format::of(a.found.harness, false)
}

/// A derived node's qid path: stable for the agent's life, synthetic, and
/// apart from the skeleton's small indices (bit 62).
pub(crate) fn agent_qid_path(found: Option<&Found>, part: Part) -> u64 {
    let (h, pid, st) = found.map_or((0, 0, 0), |f| (f.harness.index() as u8, f.pid, f.starttime));
    let mut key = [0u8; 21];
    key[0] = h;
    key[1..5].copy_from_slice(&pid.to_le_bytes());
    key[5..13].copy_from_slice(&st.to_le_bytes());
    key[13..17].copy_from_slice(&part.code().to_le_bytes());
    QID_PATH_SYNTHETIC | (1 << 62) | (wyhash::wyhash(&key, 0xac71_7e00) >> 2)
}

/// `/search/<query>`'s qid path: its name's hash, in the range agents'
/// and sessions' share.
fn search_qid_path(name: &[u8]) -> u64 {
    QID_PATH_SYNTHETIC | (1 << 62) | (wyhash::wyhash(name, 0x5ea2_c400) >> 2)
}

/// A derived file's qid version: a hash of its text, so content that
/// changes at the same size still moves it.
pub(crate) fn text_version(text: &[u8]) -> u32 {
    wyhash::wyhash(text, 0x9a9e_2000) as u32
}

fn unix_now() -> u32 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        let roots = vec![(Claude, PathBuf::from("/h/.claude")), (Omp, PathBuf::from("/h/.omp"))];
        Tree::new(Owner { name: b"u".to_vec(), uid: 1, gid: 1 }, &roots, std::path::Path::new("/proc"), false)
    }

    #[test]
    fn static_qid_paths_have_the_synthetic_bit_and_differ() {
        let t = tree();
        let mut paths: Vec<u64> = (0..STATIC.len()).map(|i| t.static_qid(i as u16).path).collect();
        assert!(paths.iter().all(|p| p & QID_PATH_SYNTHETIC != 0));
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), STATIC.len());
    }

    #[test]
    fn dot_dot_of_the_root_is_the_root_and_of_a_mount_its_static_parent() {
        let (t, agents) = (tree(), Agents::default());
        assert_eq!(t.parent(&Loc::Static(ROOT), &agents), Loc::Static(ROOT));
        let Some(Loc::Mirror(projects)) = t.static_child(2, b"projects") else { panic!() };
        assert_eq!(t.parent(&Loc::Mirror(projects.child(b"p")), &agents), Loc::Mirror(projects.clone()));
        assert_eq!(t.parent(&Loc::Mirror(projects), &agents), Loc::Static(2));
    }

    #[test]
    fn backing_composes_the_mount_path_and_the_names_below_it() {
        let (t, agents) = (tree(), Agents::default());
        let Some(Loc::Mirror(skills)) = t.static_child(8, b"omp") else { panic!() };
        let b = t.backing(&Loc::Mirror(skills.child(b"review")), &agents).unwrap();
        assert_eq!(b.base.as_bytes(), b"/h/.omp");
        assert_eq!(b.rel.as_bytes(), b"agent/skills/review");
        let b = t.backing(&Loc::Static(2), &agents).unwrap();
        assert_eq!(b.rel.as_bytes(), b".");
    }

    #[test]
    fn a_harness_without_a_base_has_no_backing() {
        let t = tree();
        let Some(hermes) = t.static_child(ROOT, b"hermes") else { panic!() };
        assert_eq!(t.backing(&hermes, &Agents::default()), None);
    }

    #[test]
    fn reads_past_the_end_are_empty() {
        let t = tree();
        let Some(Loc::Static(pid)) = t.static_child(ROOT, b"pid") else { panic!() };
        let mut out = Vec::new();
        t.read_static(pid, 1 << 40, 100, &mut out).unwrap();
        assert!(out.is_empty());
        t.read_static(pid, 0, 100, &mut out).unwrap();
        assert_eq!(out, format!("{}\n", std::process::id()).as_bytes());
    }

    #[test]
    fn static_children_are_sorted_by_name() {
        let (t, agents) = (tree(), Agents::default());
        for d in [0u16, 2, 3, 8, ACTIVE] {
            let names: Vec<Vec<u8>> = t.static_children(d).iter().map(|l| t.name(l, &agents).to_vec()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
        }
    }

    #[test]
    fn every_harness_has_its_active_directory_named_after_it() {
        let (t, agents) = (tree(), Agents::default());
        for h in Harness::ALL {
            let i = active_dir(h);
            assert_eq!(t.active_harness(i), Some(h));
            assert_eq!(t.name(&Loc::Static(i), &agents).as_ref(), h.name().as_bytes());
        }
    }
}
