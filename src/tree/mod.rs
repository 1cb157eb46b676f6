//! `tree`: what the daemon serves, named by node ids.
//!
//! A node id (`NodeId`) is the server's handle on a file: fids hold one,
//! walks produce them, and `..` is answered from the tree's own parent
//! links, never the kernel's. The skeleton — `/`, the facts, the harness
//! directories and the mounts where each mirror begins — is a fixed table
//! (`STATIC`); a file below a mount is a slot of the path table
//! (`paths`), named by its mount and the names below it.
//!
//! Where a node lives on disk is a `Backing`: a harness's base directory
//! and a path relative to it, composed only of the mount's fixed path and
//! names that passed the name check and the exclusions. The server opens
//! it with openat2 beneath the base, with no symlinks, through the ring;
//! the tree itself never touches the disk.
//!
//! Qid paths are identities, not bookkeeping (intro(5)): a node's qid path
//! is the same on every walk, listing and stat. The space is split by the
//! top bit so the two kinds can never collide: files on disk get a hash of
//! their (dev, ino) with bit 63 clear; static and derived nodes get paths
//! with bit 63 set. A derived file's qid version is a hash of its text, so
//! a change of content moves it even when the size stays put.

pub mod agents;
pub mod chats;
pub mod exclude;
pub mod paths;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use std::borrow::Cow;

use crate::errors::Error;
use crate::proto::{Qid, Stat, DMDIR, QTDIR, QTFILE};
use agents::Agents;
use paths::{PathTable, Place};

/// Bit 63 of a qid path marks a node the daemon makes up itself (the
/// skeleton, the facts, later the /active fields), so no hash of a real
/// (dev, ino) — which always has it clear — can equal one.
pub const QID_PATH_SYNTHETIC: u64 = 1 << 63;

/// The harnesses whose homes are mirrored, in `--root` order.
pub const HARNESSES: [&str; 5] = ["claude", "codex", "omp", "hermes", "dsh"];
const CLAUDE: u8 = 0;
const CODEX: u8 = 1;
const OMP: u8 = 2;
const HERMES: u8 = 3;
const DSH: u8 = 4;

/// A node: a fid's handle on what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeId {
    /// An entry of `STATIC`, by index.
    Static(u16),
    /// A slot of the path table and its generation.
    Path { slot: u32, gen: u32 },
    /// A part of a live agent's directory (`Part::code`).
    Agent { slot: u32, gen: u32, part: u32 },
}

/// The files of `/active/<harness>/<pid>/`, each derived again when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Cwd,
    Model,
    Name,
    Pid,
    Ppid,
    Session,
    Started,
    Status,
    Title,
    Via,
    Zmx,
}

impl Field {
    /// Every field, in listing (name) order.
    pub const ALL: [Field; 11] = [
        Field::Cwd,
        Field::Model,
        Field::Name,
        Field::Pid,
        Field::Ppid,
        Field::Session,
        Field::Started,
        Field::Status,
        Field::Title,
        Field::Via,
        Field::Zmx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Cwd => "cwd",
            Field::Model => "model",
            Field::Name => "name",
            Field::Pid => "pid",
            Field::Ppid => "ppid",
            Field::Session => "session",
            Field::Started => "started",
            Field::Status => "status",
            Field::Title => "title",
            Field::Via => "via",
            Field::Zmx => "zmx",
        }
    }
}

/// What of an agent's directory a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Dir,
    Field(Field),
    Transcript,
    /// `chat/`: the transcript as one file per message (claude, codex).
    Chat,
    /// One message of `chat/`, by id.
    ChatMsg(u32),
    /// `agents/`: the session's subagents (claude).
    Agents,
    /// `agents/<name>/`, by the index of its name in the agent's table.
    Sub(u32),
    /// `agents/<name>/model`.
    SubModel(u32),
    /// `agents/<name>/transcript`.
    SubTranscript(u32),
}

/// A part code is its kind in the top four bits and its number (a field,
/// a message id, a subagent) below: message ids fit, the cap on messages
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
            Part::Agents => (5, 0),
            Part::Sub(i) => (6, i),
            Part::SubModel(i) => (7, i),
            Part::SubTranscript(i) => (8, i),
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
            5 => Part::Agents,
            6 => Part::Sub(n),
            7 => Part::SubModel(n),
            8 => Part::SubTranscript(n),
            _ => return None,
        })
    }

    /// Is this part a directory?
    pub fn is_dir(self) -> bool {
        matches!(self, Part::Dir | Part::Chat | Part::Agents | Part::Sub(_))
    }

    /// The part named `name` inside an agent's directory.
    pub fn child(name: &[u8]) -> Option<Part> {
        if name == b"transcript" {
            return Some(Part::Transcript);
        }
        if name == b"chat" {
            return Some(Part::Chat);
        }
        if name == b"agents" {
            return Some(Part::Agents);
        }
        Field::ALL.iter().find(|f| f.name().as_bytes() == name).map(|f| Part::Field(*f))
    }
}

/// Where a node is, as a value a walk can carry without pinning anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loc {
    Static(u16),
    Mirror(Place),
    Agent { slot: u32, gen: u32, part: Part },
}

/// What a stat of a node is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    /// A node of the skeleton (or an agent's directory): the tree knows.
    Skeleton,
    /// A file on disk: its statx.
    Disk(Meta),
    /// Text the daemon derives: its length, its hash, its time.
    Text { len: u64, version: u32, mtime: u32 },
}

/// A file on disk: the harness's base, and the path beneath it ("." for
/// the base itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backing {
    pub base: CString,
    pub rel: CString,
}

/// Whether a place is there, and how to find out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presence {
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
}

#[derive(Clone, Copy, Debug)]
enum What {
    /// A directory of the skeleton, always there.
    Dir,
    /// `/claude`, `/codex`: there while the harness's base exists.
    HarnessDir(u8),
    /// `/active/<harness>`: one directory per live agent of it.
    ActiveHarness(u8),
    /// Where a mirror begins: the harness and the path under its base.
    Mount(u8, &'static str),
    Fact(Fact),
}

struct StaticNode {
    name: &'static str,
    parent: u16,
    what: What,
}

const fn node(name: &'static str, parent: u16, what: What) -> StaticNode {
    StaticNode { name, parent, what }
}

/// The skeleton. Index 0 is `/`, its own parent. Children appear in the
/// order listed, which is sorted by name so a listing is stable.
const STATIC: &[StaticNode] = &[
    node("/", 0, What::Dir),
    node("README", 0, What::Fact(Fact::Readme)),
    node("claude", 0, What::HarnessDir(CLAUDE)),
    node("codex", 0, What::HarnessDir(CODEX)),
    node("dsh", 0, What::Mount(DSH, "")),
    node("hermes", 0, What::Mount(HERMES, "")),
    node("omp", 0, What::Mount(OMP, "agent")),
    node("pid", 0, What::Fact(Fact::Pid)),
    node("skills", 0, What::Dir),
    node("uptime", 0, What::Fact(Fact::Uptime)),
    // 10: /claude
    node("history", 2, What::Mount(CLAUDE, "history.jsonl")),
    node("projects", 2, What::Mount(CLAUDE, "projects")),
    node("skills", 2, What::Mount(CLAUDE, "skills")),
    // 13: /codex
    node("history", 3, What::Mount(CODEX, "history.jsonl")),
    node("session-index", 3, What::Mount(CODEX, "session_index.jsonl")),
    node("sessions", 3, What::Mount(CODEX, "sessions")),
    // 16: /skills
    node("claude", 8, What::Mount(CLAUDE, "skills")),
    node("codex", 8, What::Mount(CODEX, "skills")),
    node("omp", 8, What::Mount(OMP, "agent/skills")),
    // 19: /active, and one directory per harness below it
    node("active", 0, What::Dir),
    node("claude", 19, What::ActiveHarness(CLAUDE)),
    node("codex", 19, What::ActiveHarness(CODEX)),
    node("dsh", 19, What::ActiveHarness(DSH)),
    node("hermes", 19, What::ActiveHarness(HERMES)),
    node("omp", 19, What::ActiveHarness(OMP)),
];

const ROOT: u16 = 0;

/// `/README`: the tree explained in place.
pub const README: &str = include_str!("README.txt");

/// The owner fields every stat carries: the user the daemon runs as.
pub struct Owner {
    pub name: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
}

/// What a statx said about a file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub dev: u64,
    pub ino: u64,
    pub mode: u16,
    pub size: u64,
    pub mtime: i64,
    pub uid: u32,
    pub gid: u32,
    /// Birth time (seconds), 0 where the filesystem keeps none: an inode
    /// reused for a new file is told apart by it.
    pub btime: i64,
}

impl Meta {
    pub fn from_statx(sx: &libc::statx) -> Meta {
        Meta {
            dev: libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
            ino: sx.stx_ino,
            mode: sx.stx_mode,
            size: sx.stx_size,
            mtime: sx.stx_mtime.tv_sec,
            uid: sx.stx_uid,
            gid: sx.stx_gid,
            btime: if sx.stx_mask & libc::STATX_BTIME != 0 { sx.stx_btime.tv_sec } else { 0 },
        }
    }

    fn kind(&self) -> u32 {
        self.mode as u32 & libc::S_IFMT
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }

    pub fn is_symlink(&self) -> bool {
        self.kind() == libc::S_IFLNK
    }

    pub fn is_regular(&self) -> bool {
        self.kind() == libc::S_IFREG
    }

    /// u9fs's identity, with the device folded in because the roots need
    /// not share a filesystem: a hash of (dev, ino), bit 63 clear.
    pub fn qid(&self) -> Qid {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.dev.to_le_bytes());
        key[8..].copy_from_slice(&self.ino.to_le_bytes());
        let path = wyhash::wyhash(&key, 0x9a9e_9a9e) & !QID_PATH_SYNTHETIC;
        // u9fs's version: the shift makes an append within one second
        // still move it.
        let version = (self.mtime as u64 ^ (self.size << 8)) as u32;
        Qid { ty: if self.is_dir() { QTDIR } else { QTFILE }, version, path }
    }
}

/// The index of `/active`.
pub const ACTIVE: u16 = 19;

pub struct Tree {
    started: Instant,
    started_unix: u32,
    pid: u32,
    owner: Owner,
    /// Each harness's base directory, when one is configured.
    bases: [Option<CString>; 5],
    /// The `--proc` directory.
    proc_base: CString,
    paths: PathTable,
    /// The agents the last scan of `proc_base` found.
    pub agents: Agents,
    /// The chat indexes (`--max-chats`, `--max-chat-messages`).
    pub chats: chats::Chats,
    /// `--allow-move`: `zmx` is writable.
    pub allow_move: bool,
}

impl Tree {
    pub fn new(owner: Owner, roots: &[(String, PathBuf)], proc_dir: &std::path::Path) -> Self {
        let mut bases: [Option<CString>; 5] = Default::default();
        for (name, path) in roots {
            if let Some(h) = HARNESSES.iter().position(|n| n == name) {
                bases[h] = CString::new(path.as_os_str().as_bytes()).ok();
            }
        }
        let started_unix = unix_now();
        let proc_base = CString::new(proc_dir.as_os_str().as_bytes()).unwrap_or_else(|_| c"/proc".into());
        Tree {
            started: Instant::now(),
            started_unix,
            pid: std::process::id(),
            owner,
            bases,
            proc_base,
            paths: PathTable::default(),
            agents: Agents::default(),
            chats: chats::Chats::new(chats::MAX_CHATS_DEFAULT, crate::chat::MAX_MESSAGES_DEFAULT),
            allow_move: false,
        }
    }

    pub fn root(&self) -> NodeId {
        NodeId::Static(ROOT)
    }

    /// Where a live node is; `None` for a stale path id.
    pub fn loc(&self, node: NodeId) -> Option<Loc> {
        match node {
            NodeId::Static(i) => Some(match STATIC[i as usize].what {
                What::Mount(..) => Loc::Mirror(Place { mount: i, sub: Vec::new() }),
                _ => Loc::Static(i),
            }),
            NodeId::Path { slot, gen } => self.paths.get(slot, gen).cloned().map(Loc::Mirror),
            NodeId::Agent { slot, gen, part } => {
                self.agents.get(slot, gen)?;
                Some(Loc::Agent { slot, gen, part: Part::from_code(part)? })
            }
        }
    }

    /// The node a fid binds to for `loc`, taking a reference.
    pub fn bind(&mut self, loc: &Loc) -> NodeId {
        match loc {
            Loc::Static(i) => NodeId::Static(*i),
            Loc::Mirror(p) if p.sub.is_empty() => NodeId::Static(p.mount),
            Loc::Mirror(p) => {
                let (slot, gen) = self.paths.acquire_place(p);
                NodeId::Path { slot, gen }
            }
            Loc::Agent { slot, gen, part } => NodeId::Agent { slot: *slot, gen: *gen, part: part.code() },
        }
    }

    /// Another fid holds `node`.
    pub fn acquire(&mut self, node: NodeId) {
        if let NodeId::Path { slot, gen } = node {
            self.paths.acquire(slot, gen);
        }
    }

    /// A fid holding `node` was clunked or re-pointed.
    pub fn release(&mut self, node: NodeId) {
        if let NodeId::Path { slot, gen } = node {
            self.paths.release(slot, gen);
        }
    }

    /// `..` of a place, clamped at `/`.
    pub fn parent(&self, loc: &Loc) -> Loc {
        match loc {
            Loc::Static(i) => Loc::Static(STATIC[*i as usize].parent),
            Loc::Mirror(p) => match p.parent() {
                Some(up) => Loc::Mirror(up),
                None => Loc::Static(STATIC[p.mount as usize].parent),
            },
            Loc::Agent { slot, gen, part: Part::Dir } => match self.agents.get(*slot, *gen) {
                Some(a) => Loc::Static(self.active_dir(a.found.harness)),
                None => Loc::Static(ACTIVE),
            },
            Loc::Agent { slot, gen, part: Part::ChatMsg(_) } => Loc::Agent { slot: *slot, gen: *gen, part: Part::Chat },
            Loc::Agent { slot, gen, part: Part::Sub(_) } => Loc::Agent { slot: *slot, gen: *gen, part: Part::Agents },
            Loc::Agent { slot, gen, part: Part::SubModel(i) | Part::SubTranscript(i) } => {
                Loc::Agent { slot: *slot, gen: *gen, part: Part::Sub(*i) }
            }
            Loc::Agent { slot, gen, .. } => Loc::Agent { slot: *slot, gen: *gen, part: Part::Dir },
        }
    }

    /// The index of `/active/<harness>`.
    pub fn active_dir(&self, harness: u8) -> u16 {
        (0..STATIC.len())
            .find(|&i| matches!(STATIC[i].what, What::ActiveHarness(h) if h == harness))
            .expect("every harness has an /active directory") as u16
    }

    /// The harness `/active/<harness>` lists, if `i` is one.
    pub fn active_harness(&self, i: u16) -> Option<u8> {
        match STATIC[i as usize].what {
            What::ActiveHarness(h) => Some(h),
            _ => None,
        }
    }

    /// When the daemon started, Unix seconds: the mtime of what it derives.
    pub fn started_unix(&self) -> u32 {
        self.started_unix
    }

    /// The `--proc` directory, as the base of `facts::Root::Proc`.
    pub fn proc_base(&self) -> &CString {
        &self.proc_base
    }

    /// A harness's base, as the base of `facts::Root::Harness`.
    pub fn harness_base(&self, h: u8) -> Option<&CString> {
        self.bases.get(h as usize)?.as_ref()
    }

    /// Is this a directory of the skeleton (as opposed to a file of it, or
    /// a mirror whose kind only the disk knows)?
    pub fn static_is_dir(&self, i: u16) -> bool {
        matches!(STATIC[i as usize].what, What::Dir | What::HarnessDir(_) | What::ActiveHarness(_))
    }

    /// The skeleton child `name` of static directory `d`, as a place.
    pub fn static_child(&self, d: u16, name: &[u8]) -> Option<Loc> {
        (1..STATIC.len())
            .find(|&i| STATIC[i].parent == d && STATIC[i].name.as_bytes() == name)
            .map(|i| self.static_loc(i as u16))
    }

    /// The skeleton children of static directory `d`, in listing order.
    pub fn static_children(&self, d: u16) -> Vec<Loc> {
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

    /// Whether `loc` is there: always (the skeleton), never (a harness with
    /// no base), or when the disk says so.
    pub fn presence(&self, loc: &Loc) -> Presence {
        match loc {
            Loc::Static(i) if !matches!(STATIC[*i as usize].what, What::HarnessDir(_)) => Presence::Always,
            Loc::Agent { slot, gen, .. } if self.agents.get(*slot, *gen).is_none() => Presence::Absent,
            // An agent's directory and its fields are there while it is; a
            // field's text is derived when it is opened or stat'd.
            Loc::Agent { part: Part::Dir | Part::Field(_), .. } => Presence::Always,
            Loc::Agent { slot, gen, part: Part::Chat } => {
                if self.chat_format(*slot, *gen).is_some() {
                    Presence::Always
                } else {
                    Presence::Absent
                }
            }
            // A message is there when the index (made fresh first) has it.
            Loc::Agent { part: Part::ChatMsg(_), .. } => Presence::Always,
            // agents/ is a claude session's; a subagent is there when its
            // transcript is (probed through its backing).
            Loc::Agent { slot, gen, part: Part::Agents } => {
                if self.chat_format(*slot, *gen) == Some(crate::chat::Format::Claude) {
                    Presence::Always
                } else {
                    Presence::Absent
                }
            }
            Loc::Agent { part: Part::Sub(_) | Part::SubModel(_), .. } => Presence::Always,
            _ => self.backing(loc).map_or(Presence::Absent, Presence::Probe),
        }
    }

    /// Is `loc` a harness directory (`/claude`, `/codex`): a skeleton
    /// directory that is there only while its base is?
    pub fn is_harness_dir(&self, loc: &Loc) -> bool {
        matches!(loc, Loc::Static(i) if matches!(STATIC[*i as usize].what, What::HarnessDir(_)))
    }

    /// Where `loc` lives on disk, if it does; `None` for the skeleton's
    /// own directories and facts, and for a harness with no base.
    pub fn backing(&self, loc: &Loc) -> Option<Backing> {
        let (h, mut rel) = match loc {
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
                let a = self.agents.get(*slot, *gen)?;
                (a.found.harness, a.session.as_ref()?.transcript.clone()?)
            }
            Loc::Agent { slot, gen, part: Part::SubTranscript(i) } => {
                let a = self.agents.get(*slot, *gen)?;
                let main = a.session.as_ref()?.transcript.as_deref()?;
                (a.found.harness, crate::active::derive::subagent_rel(main, a.subagents.get(*i as usize)?)?)
            }
            Loc::Agent { .. } => return None,
        };
        if rel.is_empty() {
            rel.push(b'.');
        }
        let base = self.bases[h as usize].clone()?;
        Some(Backing { base, rel: CString::new(rel).ok()? })
    }

    /// The name a place is listed and stat'd under.
    pub fn name<'a>(&self, loc: &'a Loc) -> Cow<'a, [u8]> {
        match loc {
            Loc::Static(i) => STATIC[*i as usize].name.as_bytes().into(),
            Loc::Mirror(p) if p.sub.is_empty() => STATIC[p.mount as usize].name.as_bytes().into(),
            Loc::Mirror(p) => p.name().into(),
            Loc::Agent { slot, gen, part: Part::Dir } => {
                let pid = self.agents.get(*slot, *gen).map_or(0, |a| a.found.pid);
                pid.to_string().into_bytes().into()
            }
            Loc::Agent { part: Part::Transcript, .. } => b"transcript"[..].into(),
            Loc::Agent { part: Part::Field(f), .. } => f.name().as_bytes().into(),
            Loc::Agent { part: Part::Chat, .. } => b"chat"[..].into(),
            Loc::Agent { part: Part::Agents, .. } => b"agents"[..].into(),
            Loc::Agent { part: Part::SubModel(_), .. } => b"model"[..].into(),
            Loc::Agent { part: Part::SubTranscript(_), .. } => b"transcript"[..].into(),
            Loc::Agent { slot, gen, part: Part::Sub(i) } => self
                .agents
                .get(*slot, *gen)
                .and_then(|a| a.subagents.get(*i as usize))
                .cloned()
                .unwrap_or_default()
                .into(),
            Loc::Agent { slot, gen, part: Part::ChatMsg(id) } => {
                let mut name = Vec::new();
                if let Some(e) = self.chat_of(*slot, *gen) {
                    e.index.name(*id as usize, &mut name);
                }
                name.into()
            }
        }
    }

    /// The chat index an agent's `chat/` reads, when it has one.
    pub fn chat_of(&self, slot: u32, gen: u32) -> Option<&chats::Entry> {
        let (i, cgen) = self.agents.get(slot, gen)?.chat?;
        self.chats.get(i, cgen)
    }

    /// A message's qid: a file; messages never change once whole, so its
    /// version is a hash of what identifies its text (size and time).
    pub fn chat_msg_qid(&self, slot: u32, gen: u32, id: u32) -> Option<Qid> {
        let info = self.chat_of(slot, gen)?.index.info(id as usize)?;
        let mut key = [0u8; 12];
        key[..8].copy_from_slice(&info.size.to_le_bytes());
        key[8..].copy_from_slice(&info.time.to_le_bytes());
        let version = wyhash::wyhash(&key, 0xc4a7) as u32;
        Some(Qid { ty: QTFILE, version, path: self.agent_qid_path(slot, gen, Part::ChatMsg(id)) })
    }

    /// Does this agent have a `chat/`: a claude or codex session with a
    /// transcript?
    pub fn chat_format(&self, slot: u32, gen: u32) -> Option<crate::chat::Format> {
        let a = self.agents.get(slot, gen)?;
        a.session.as_ref()?.transcript.as_ref()?;
        match HARNESSES[a.found.harness as usize] {
            "claude" => Some(crate::chat::Format::Claude),
            "codex" => Some(crate::chat::Format::Codex),
            _ => None,
        }
    }

    /// A derived node's qid path: stable for the agent's life, synthetic,
    /// and apart from the skeleton's small indices (bit 62).
    pub fn agent_qid_path(&self, slot: u32, gen: u32, part: Part) -> u64 {
        let a = self.agents.get(slot, gen).map(|a| a.found);
        let (h, pid, st) = a.map_or((0, 0, 0), |f| (f.harness, f.pid, f.starttime));
        let mut key = [0u8; 21];
        key[0] = h;
        key[1..5].copy_from_slice(&pid.to_le_bytes());
        key[5..13].copy_from_slice(&st.to_le_bytes());
        key[13..17].copy_from_slice(&part.code().to_le_bytes());
        QID_PATH_SYNTHETIC | (1 << 62) | (wyhash::wyhash(&key, 0xac71_7e00) >> 2)
    }

    /// The qid of a node whose stat needs no disk: the skeleton, an
    /// agent's directory.
    pub fn skeleton_qid(&self, loc: &Loc) -> Qid {
        match loc {
            Loc::Static(i) => self.static_qid(*i),
            Loc::Agent { slot, gen, part } => {
                let ty = if part.is_dir() { QTDIR } else { QTFILE };
                Qid { ty, version: 0, path: self.agent_qid_path(*slot, *gen, *part) }
            }
            Loc::Mirror(_) => unreachable!("a mirror's qid comes from its meta"),
        }
    }

    /// The qid of a skeleton node (a mirror's comes from its `Meta`).
    pub fn static_qid(&self, i: u16) -> Qid {
        match STATIC[i as usize].what {
            What::Fact(f) => {
                Qid { ty: QTFILE, version: text_version(&self.fact(f)), path: QID_PATH_SYNTHETIC | i as u64 }
            }
            _ => Qid { ty: QTDIR, version: 0, path: QID_PATH_SYNTHETIC | i as u64 },
        }
    }

    /// Build the stat of `loc` from `attr` and hand it to `f` (the stat
    /// borrows names that live only for this call).
    pub fn with_stat<R>(&self, loc: &Loc, attr: &Attr, f: impl FnOnce(&Stat<'_>) -> R) -> R {
        let name = self.name(loc);
        let (qid, mode, length, mtime, n_uid, n_gid) = match (loc, attr) {
            (_, Attr::Disk(m)) => {
                let length = if m.is_dir() { 0 } else { m.size };
                let mode = if m.is_dir() { DMDIR | 0o555 } else { 0o444 };
                (m.qid(), mode, length, m.mtime.clamp(0, u32::MAX as i64) as u32, m.uid, m.gid)
            }
            (Loc::Agent { slot, gen, part }, Attr::Text { len, version, mtime }) => {
                let qid = Qid { ty: QTFILE, version: *version, path: self.agent_qid_path(*slot, *gen, *part) };
                // zmx is the tree's one writable file, and only with --allow-move.
                let mode = if *part == Part::Field(Field::Zmx) && self.allow_move { 0o644 } else { 0o444 };
                (qid, mode, *len, *mtime, self.owner.uid, self.owner.gid)
            }
            (Loc::Static(i), _) => {
                let qid = self.static_qid(*i);
                let (mode, length) = match STATIC[*i as usize].what {
                    What::Fact(fact) => (0o444, self.fact(fact).len() as u64),
                    _ => (DMDIR | 0o555, 0),
                };
                (qid, mode, length, self.started_unix, self.owner.uid, self.owner.gid)
            }
            (Loc::Agent { .. }, _) => {
                let mtime = self.started_unix;
                (self.skeleton_qid(loc), DMDIR | 0o555, 0, mtime, self.owner.uid, self.owner.gid)
            }
            (Loc::Mirror(_), _) => unreachable!("a mirror is stat'd from its meta"),
        };
        let stat = Stat {
            ty: 0,
            dev: 0,
            qid,
            mode,
            atime: mtime,
            mtime,
            length,
            name: &name,
            uid: &self.owner.name,
            gid: &self.owner.name,
            muid: &self.owner.name,
            extension: b"",
            n_uid,
            n_gid,
            n_muid: n_uid,
        };
        f(&stat)
    }

    /// Append at most `count` bytes of fact `i` from `offset` to `out`.
    pub fn read_static(&self, i: u16, offset: u64, count: u32, out: &mut Vec<u8>) -> Result<(), Error> {
        let What::Fact(fact) = STATIC[i as usize].what else {
            return Err(Error::IsDir);
        };
        let text = self.fact(fact);
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
        let end = start.saturating_add(count as usize).min(text.len());
        out.extend_from_slice(&text.as_bytes()[start..end]);
        Ok(())
    }

    fn fact(&self, fact: Fact) -> std::borrow::Cow<'static, str> {
        match fact {
            Fact::Readme => README.into(),
            Fact::Pid => format!("{}\n", self.pid).into(),
            Fact::Uptime => format!("{}\n", self.started.elapsed().as_secs()).into(),
        }
    }
}

/// A derived file's qid version: a hash of its text, so content that
/// changes at the same size still moves it.
pub fn text_version(text: &str) -> u32 {
    wyhash::wyhash(text.as_bytes(), 0x9a9e_2000) as u32
}

fn unix_now() -> u32 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        let roots =
            vec![("claude".to_string(), PathBuf::from("/h/.claude")), ("omp".to_string(), PathBuf::from("/h/.omp"))];
        Tree::new(Owner { name: b"u".to_vec(), uid: 1, gid: 1 }, &roots, std::path::Path::new("/proc"))
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
    fn file_qid_paths_never_have_the_synthetic_bit() {
        for ino in [0u64, 1, u64::MAX, 1 << 63] {
            let m =
                Meta { dev: u64::MAX, ino, mode: libc::S_IFREG as u16, size: 0, mtime: 0, uid: 0, gid: 0, btime: 0 };
            assert_eq!(m.qid().path & QID_PATH_SYNTHETIC, 0);
        }
    }

    #[test]
    fn qid_version_moves_on_an_append_within_the_same_second() {
        let a = Meta { dev: 1, ino: 2, mode: libc::S_IFREG as u16, size: 10, mtime: 100, uid: 0, gid: 0, btime: 0 };
        let b = Meta { size: 11, ..a };
        assert_ne!(a.qid().version, b.qid().version);
        assert_eq!(a.qid().path, b.qid().path);
    }

    #[test]
    fn dot_dot_of_the_root_is_the_root_and_of_a_mount_its_static_parent() {
        let t = tree();
        assert_eq!(t.parent(&Loc::Static(ROOT)), Loc::Static(ROOT));
        let Some(Loc::Mirror(projects)) = t.static_child(2, b"projects") else { panic!() };
        assert_eq!(t.parent(&Loc::Mirror(projects.child(b"p"))), Loc::Mirror(projects.clone()));
        assert_eq!(t.parent(&Loc::Mirror(projects)), Loc::Static(2));
    }

    #[test]
    fn backing_composes_the_mount_path_and_the_names_below_it() {
        let t = tree();
        let Some(Loc::Mirror(skills)) = t.static_child(8, b"omp") else { panic!() };
        let b = t.backing(&Loc::Mirror(skills.child(b"review"))).unwrap();
        assert_eq!(b.base.as_bytes(), b"/h/.omp");
        assert_eq!(b.rel.as_bytes(), b"agent/skills/review");
        let b = t.backing(&Loc::Static(2)).unwrap();
        assert_eq!(b.rel.as_bytes(), b".");
    }

    #[test]
    fn a_harness_without_a_base_has_no_backing() {
        let t = tree();
        let Some(hermes) = t.static_child(ROOT, b"hermes") else { panic!() };
        assert_eq!(t.backing(&hermes), None);
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
        let t = tree();
        for d in [0u16, 2, 3, 8, ACTIVE] {
            let names: Vec<Vec<u8>> = t.static_children(d).iter().map(|l| t.name(l).to_vec()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
        }
    }
}
