//! Claude Code: the registry record it keeps for each process, and the
//! transcript path that record leads to.
//!
//! Claude Code writes `~/.claude/sessions/<pid>.json` for every running
//! process and rewrites it as the session changes (its `status` moves
//! between `busy`, `idle`, `waiting` and `shell`; `/clear` gives it a new
//! `sessionId`). Records vary in the wild — see
//! `shared/data/transcripts/claude/sessions-pid__*.json`: `procStart`
//! missing (older versions), `status` missing, `name` only when the
//! session was named, fields this code never reads (`bridgeSessionId`,
//! `peerProtocol`, `entrypoint`, ...). So every field but `sessionId` and
//! `cwd` is optional, and anything else in the record is ignored.
//!
//! **`procStart` guards against pid reuse.** On Linux it is the decimal
//! text of `/proc/<pid>/stat` field 22, the same starttime `/active`
//! remembers, so it is compared exactly. A record written on another
//! system carries a different clock (macOS: `ps -o lstart` text, Windows:
//! a FILETIME); such a record can never be checked here, and is refused
//! rather than believed.
//!
//! **Nothing in the record becomes a path as written.** The `sessionId`
//! must be `[A-Za-z0-9_-]+` (so `..` or `/` are refused), and the `cwd`
//! only ever reaches a path through [`claude_project_dir`], which keeps
//! nothing but ASCII letters, digits and `-`.

use crate::json;

use super::paths::{cap_text, is_session_id, one_line, PATH_BYTES_MAX};

/// The longest `name` kept; a longer one is cut at a character boundary.
pub(crate) const NAME_BYTES_MAX: usize = 256;
/// The longest `status` word accepted (they are one short word).
pub(crate) const STATUS_BYTES_MAX: usize = 32;
/// The longest `waitingFor` kept (a dialog's text may be long); a longer
/// one is cut at a character boundary.
pub(crate) const WAITING_FOR_BYTES_MAX: usize = 1024;
/// Claude Code keeps a project directory name to this many UTF-16 code
/// units; past it, the name is cut here and a hash of the cwd follows.
pub(crate) const PROJECT_DIR_UNITS_MAX: usize = 200;

/// What `/active` takes from a registry record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Registry {
    /// `[A-Za-z0-9_-]+`, checked.
    pub session_id: Vec<u8>,
    /// The cwd Claude Code started in, which names the project directory.
    pub cwd: Vec<u8>,
    pub name: Option<Vec<u8>>,
    /// The harness's own word, when it gives one: `[A-Za-z0-9_-]+`.
    pub status: Option<Vec<u8>>,
    /// What a `waiting` session waits for (`waitingFor`, 2.1.33x): `input
    /// needed`, `dialog open`, `sandbox request`, `worker request`, or a
    /// dialog's own text; one line, at most `WAITING_FOR_BYTES_MAX`.
    pub waiting_for: Option<Vec<u8>>,
    /// The kind of process (`kind`, 2.1.33x): `interactive`, `bg`,
    /// `daemon`, `daemon-worker`; a word like `status`.
    pub kind: Option<Vec<u8>>,
    pub proc_start: ProcStart,
    /// The record's own `pid`, when it carries one.
    pub pid: Option<u64>,
}

/// The record's `procStart`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcStart {
    /// No `procStart` (Claude Code before 2.1.126 wrote none).
    Absent,
    /// Clock ticks after boot, as Linux's `stat` field 22.
    Ticks(u64),
    /// Present but not a tick count: written on another OS.
    Foreign,
}

/// Why a registry record is not believed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The buffer is not one JSON object (empty, cut short, garbage).
    NotJson,
    NoSessionId,
    /// A `sessionId` that is not `[A-Za-z0-9_-]+`.
    BadSessionId,
    NoCwd,
    /// A `cwd` that is empty, holds a NUL, or is longer than PATH_MAX.
    BadCwd,
    /// The record's `pid` is not the process's.
    PidMismatch,
    /// A `procStart` from another OS's clock.
    ProcStartForeign,
    /// The process at this pid started at another time: it is not the
    /// process that wrote the record.
    ProcStartMismatch,
}

impl Why {
    #[cfg(test)]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Why::NotJson => "registry record is not a JSON object",
            Why::NoSessionId => "registry record has no sessionId",
            Why::BadSessionId => "registry sessionId is not [A-Za-z0-9_-]+",
            Why::NoCwd => "registry record has no cwd",
            Why::BadCwd => "registry cwd is empty, too long or holds a NUL",
            Why::PidMismatch => "registry pid is not the process's",
            Why::ProcStartForeign => "registry procStart is not a Linux tick count",
            Why::ProcStartMismatch => "registry procStart is not the process's starttime",
        }
    }
}

/// Parse `sessions/<pid>.json`. Tolerant of missing and extra fields;
/// strict about the two that lead to a file.
pub(crate) fn parse_registry(record: &[u8]) -> Result<Registry, Why> {
    if !json::is_whole_value(record) || json::path(record, &[]).and_then(|v| v.first()) != Some(&b'{') {
        return Err(Why::NotJson);
    }
    let sid = json::field(record, b"sessionId").ok_or(Why::NoSessionId)?;
    let session_id = json::string(sid).map_err(|_| Why::BadSessionId)?;
    if !is_session_id(&session_id) {
        return Err(Why::BadSessionId);
    }
    let cwd = json::field(record, b"cwd").ok_or(Why::NoCwd)?;
    let cwd = json::string(cwd).map_err(|_| Why::BadCwd)?;
    if cwd.is_empty() || cwd.len() > PATH_BYTES_MAX || cwd.contains(&0) {
        return Err(Why::BadCwd);
    }
    Ok(Registry {
        session_id,
        cwd,
        name: json::path_str(record, &[b"name"]).map(|n| cap_text(n, NAME_BYTES_MAX)),
        status: json::path_str(record, &[b"status"]).filter(|s| is_status(s)),
        waiting_for: json::path_str(record, &[b"waitingFor"])
            .map(|w| one_line(&cap_text(w, WAITING_FOR_BYTES_MAX)))
            .filter(|w| !w.is_empty()),
        kind: json::path_str(record, &[b"kind"]).filter(|s| is_status(s)),
        proc_start: proc_start(json::field(record, b"procStart")),
        pid: json::field(record, b"pid").and_then(json::u64_of),
    })
}

/// `procStart` is written as a string of digits on Linux; a bare number is
/// read the same way, in case a version writes one.
fn proc_start(raw: Option<&[u8]>) -> ProcStart {
    let Some(raw) = raw else { return ProcStart::Absent };
    let ticks = match json::string(raw) {
        Ok(text) => json::digits_u64(&text),
        Err(_) => json::u64_of(raw),
    };
    ticks.map_or(ProcStart::Foreign, ProcStart::Ticks)
}

fn is_status(s: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= STATUS_BYTES_MAX
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether a parsed record belongs to the process at `pid` that started
/// at `starttime_ticks`: its `pid`, when recorded, is that pid, and its
/// `procStart`, when recorded, is that starttime.
pub(crate) fn check_registry(reg: &Registry, pid: u32, starttime_ticks: u64) -> Result<(), Why> {
    if reg.pid.is_some_and(|p| p != u64::from(pid)) {
        return Err(Why::PidMismatch);
    }
    match reg.proc_start {
        ProcStart::Absent => Ok(()),
        ProcStart::Ticks(t) if t == starttime_ticks => Ok(()),
        ProcStart::Ticks(_) => Err(Why::ProcStartMismatch),
        ProcStart::Foreign => Err(Why::ProcStartForeign),
    }
}

/// The directory under `~/.claude/projects` a cwd's transcripts live in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProjectDir {
    /// The whole name.
    Exact(Vec<u8>),
    /// A cwd too long to name in full: Claude Code cuts the name at
    /// `PROJECT_DIR_UNITS_MAX` and appends `-` and a hash of the cwd, whose
    /// algorithm has changed between versions (2.1.224 changed it again).
    /// The server lists `projects/` for names that [`long_dir_matches`]
    /// and takes the one holding `<sessionId>.jsonl`: the session id,
    /// not the hash, decides.
    Long { prefix: Vec<u8> },
}

/// Claude Code's name for a cwd's project directory: its
/// `name.replace(/[^a-zA-Z0-9]/g, "-")`. JavaScript replaces UTF-16 code
/// units, not bytes, so a character outside ASCII becomes one `-` (two
/// for one beyond U+FFFF, a surrogate pair) — `/home/u/文档` is
/// `-home-u--`, not `-home-u-------`. A byte that is not UTF-8 counts as
/// one unit, as the replacement character Node decodes it to.
pub(crate) fn claude_project_dir(cwd: &[u8]) -> ProjectDir {
    let mut out = Vec::with_capacity(cwd.len());
    for chunk in cwd.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' => out.push(c as u8),
                _ => out.resize(out.len() + c.len_utf16(), b'-'),
            }
        }
        out.resize(out.len() + chunk.invalid().len(), b'-');
    }
    if out.len() <= PROJECT_DIR_UNITS_MAX {
        ProjectDir::Exact(out)
    } else {
        out.truncate(PROJECT_DIR_UNITS_MAX);
        ProjectDir::Long { prefix: out }
    }
}

/// Whether a directory name under `projects/` is a long cwd's: `prefix`,
/// `-`, then a hash of letters and digits (base 36 in every version seen).
pub(crate) fn long_dir_matches(name: &[u8], prefix: &[u8]) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix(b"-"))
        .is_some_and(|hash| !hash.is_empty() && hash.iter().all(u8::is_ascii_alphanumeric))
}

/// The transcript's path relative to the Claude root:
/// `projects/<dir>/<sessionId>.jsonl`. `None` unless both names are plain
/// (`dir` as `claude_project_dir` makes it, `session_id` as the registry
/// check demands), so nothing a record says can climb out of `projects/`.
pub(crate) fn transcript_rel(dir: &[u8], session_id: &[u8]) -> Option<Vec<u8>> {
    let plain_dir = !dir.is_empty() && dir.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-');
    if !plain_dir || !is_session_id(session_id) {
        return None;
    }
    Some([&b"projects/"[..], dir, b"/", session_id, b".jsonl"].concat())
}

#[cfg(test)]
mod tests;
