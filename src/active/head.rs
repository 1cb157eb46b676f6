//! The fields `/active` reads out of a transcript — `title`, `model`, the
//! cwd the session recorded, and Claude Code's session name — from the
//! harness's own records, and the check that a transcript belongs to the
//! process it was resolved for.
//!
//! The server reads two windows of the transcript: its head (the first
//! `HEAD_BYTES_MAX` bytes, where every harness writes its header and the
//! first model it runs) and its tail (the last `TAIL_BYTES_MAX`, where
//! later titles and model switches land), and hands both to [`read_head`].
//! Records are fed in file order, so of the records that change over a
//! session (a title, a model), the latest one seen wins; of the ones
//! written once (the header's cwd), the first. A record the tail window
//! cut in half at its start is dropped, since its first bytes could be
//! the middle of another record's text. The last record of either window
//! may be cut at its end; it is still read up to the cut (see
//! `crate::json`), which is sound because it starts where a record starts.
//!
//! Which record gives which field, per harness (docs/ACTIVE.md has the
//! evidence from real transcripts):
//!
//! | field | claude | codex | omp |
//! |---|---|---|---|
//! | title | last `custom-title`.customTitle, else last `ai-title`.aiTitle, else last `summary`.summary | last `event_msg` `thread_name_updated` (the server prefers `session_index.jsonl`, `codex::thread_name`) | the `title` slot (line 1), else the last `title_change`.title or `session_info`.name (pi's `/name`), else the `session` header's title |
//! | model | last `assistant` record's `message.model` (not `<synthetic>`, not a sidechain's — but in a subagent's own file, where every record is one) | last `turn_context`.payload.model or `thread_settings_applied` model | last default-role `model_change` (provider cut off) or assistant `message.model` |
//! | cwd | last `relocated`.relocatedCwd (the session moved: 2.1.33x), else first top-level `cwd` of a main-chain record | first `session_meta`.payload.cwd | the `session` header's cwd |
//! | name | last `agent-name`.agentName (the registry's `name` comes first) | — | — |
//!
//! dsh's transcript is zstd: its head and tail are read decoded
//! (`server::jobs::gather`), and its header gives the cwd. hermes has none.

use crate::json;

use super::paths::cap_text;
use super::Harness;

/// The longest title served; a longer one is cut at a character.
pub(crate) const TITLE_BYTES_MAX: usize = 1024;
/// The longest model name served.
pub(crate) const MODEL_BYTES_MAX: usize = 256;
/// The longest cwd taken from a record (Linux PATH_MAX).
pub(crate) const CWD_BYTES_MAX: usize = 4096;

/// What a transcript says about its session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Head {
    pub title: Option<Vec<u8>>,
    pub model: Option<Vec<u8>>,
    /// The cwd the session recorded, for [`check_cwd`].
    pub cwd: Option<Vec<u8>>,
    /// Claude Code's session name (`agent-name`), for when the registry
    /// record has none.
    pub name: Option<Vec<u8>>,
}

/// The records of a window of a JSONL file: one a line, empty lines
/// skipped. Unless the window starts the file, its first line is dropped:
/// it is a record cut at its front.
pub(crate) fn records(window: &[u8], at_file_start: bool) -> impl Iterator<Item = &[u8]> {
    let start = if at_file_start { 0 } else { memchr::memchr(b'\n', window).map_or(window.len(), |i| i + 1) };
    window[start..].split(|&b| b == b'\n').filter(|line| !line.is_empty())
}

/// Read a transcript's head (its first bytes) and, when the file is longer
/// than the head, its tail (its last bytes). `None` for hermes.
pub(crate) fn read_head(harness: Harness, head: &[u8], tail: Option<&[u8]>) -> Option<Head> {
    read_head_of(harness, false, head, tail)
}

/// `read_head` of a main session's transcript, or (`subagent`) of a
/// subagent's own, whose records are all sidechain and say its model.
pub(crate) fn read_head_of(harness: Harness, subagent: bool, head: &[u8], tail: Option<&[u8]>) -> Option<Head> {
    let mut reader: Box<dyn Reader> = match harness {
        Harness::Claude => Box::new(ClaudeReader { subagent, ..ClaudeReader::default() }),
        Harness::Codex => Box::<CodexReader>::default(),
        Harness::Omp | Harness::Pi => Box::<OmpReader>::default(),
        Harness::Dsh => Box::<DshReader>::default(),
        Harness::Hermes => return None,
    };
    for (i, record) in records(head, true).enumerate() {
        reader.feed(record, i == 0);
    }
    for record in records(tail.unwrap_or_default(), false) {
        reader.feed(record, false);
    }
    Some(reader.finish())
}

trait Reader {
    /// One record; `first` when it is the first line of the file.
    fn feed(&mut self, record: &[u8], first: bool);
    fn finish(self: Box<Self>) -> Head;
}

/// A string field as served text: unescaped, not empty, capped.
fn text(record: &[u8], keys: &[&[u8]], max: usize) -> Option<Vec<u8>> {
    json::path_str(record, keys).filter(|s| !s.is_empty()).map(|s| cap_text(s, max))
}

/// A cwd from a record: absolute, no NUL, no longer than PATH_MAX.
fn cwd_of(record: &[u8], keys: &[&[u8]]) -> Option<Vec<u8>> {
    json::path_str(record, keys).filter(|c| c.first() == Some(&b'/') && !c.contains(&0) && c.len() <= CWD_BYTES_MAX)
}

/// Replace `slot` when `new` is something: the latest record wins.
fn latest(slot: &mut Option<Vec<u8>>, new: Option<Vec<u8>>) {
    if new.is_some() {
        *slot = new;
    }
}

#[derive(Default)]
struct ClaudeReader {
    /// A subagent's own transcript: its sidechain records are its own.
    subagent: bool,
    custom: Option<Vec<u8>>,
    ai: Option<Vec<u8>>,
    summary: Option<Vec<u8>>,
    /// The last `relocated` record's directory: the session moved there.
    relocated: Option<Vec<u8>>,
    head: Head,
}

impl Reader for ClaudeReader {
    fn feed(&mut self, rec: &[u8], _first: bool) {
        let Some(kind) = json::field(rec, b"type") else { return };
        let is = |t: &[u8]| json::str_eq(kind, t);
        if is(b"custom-title") {
            latest(&mut self.custom, text(rec, &[b"customTitle"], TITLE_BYTES_MAX));
        } else if is(b"ai-title") {
            latest(&mut self.ai, text(rec, &[b"aiTitle"], TITLE_BYTES_MAX));
        } else if is(b"summary") {
            latest(&mut self.summary, text(rec, &[b"summary"], TITLE_BYTES_MAX));
        } else if is(b"agent-name") {
            latest(&mut self.head.name, text(rec, &[b"agentName"], TITLE_BYTES_MAX));
        } else if is(b"relocated") {
            latest(&mut self.relocated, cwd_of(rec, &[b"relocatedCwd"]));
        }
        if !self.subagent && json::field(rec, b"isSidechain") == Some(&b"true"[..]) {
            return;
        }
        if self.head.cwd.is_none() {
            self.head.cwd = cwd_of(rec, &[b"cwd"]);
        }
        if is(b"assistant") {
            let model = text(rec, &[b"message", b"model"], MODEL_BYTES_MAX).filter(|m| m != b"<synthetic>");
            latest(&mut self.head.model, model);
        }
    }

    fn finish(self: Box<Self>) -> Head {
        let title = self.custom.or(self.ai).or(self.summary);
        let cwd = self.relocated.or(self.head.cwd);
        Head { title, cwd, ..self.head }
    }
}

#[derive(Default)]
struct CodexReader {
    head: Head,
}

impl Reader for CodexReader {
    fn feed(&mut self, rec: &[u8], _first: bool) {
        let Some(kind) = json::field(rec, b"type") else { return };
        if json::str_eq(kind, b"session_meta") {
            if self.head.cwd.is_none() {
                self.head.cwd = cwd_of(rec, &[b"payload", b"cwd"]);
            }
        } else if json::str_eq(kind, b"turn_context") {
            latest(&mut self.head.model, text(rec, &[b"payload", b"model"], MODEL_BYTES_MAX));
        } else if json::str_eq(kind, b"event_msg") {
            let event = json::path(rec, &[b"payload", b"type"]).unwrap_or_default();
            if json::str_eq(event, b"thread_name_updated") {
                latest(&mut self.head.title, text(rec, &[b"payload", b"thread_name"], TITLE_BYTES_MAX));
            } else if json::str_eq(event, b"thread_settings_applied") {
                let model = text(rec, &[b"payload", b"thread_settings", b"model"], MODEL_BYTES_MAX);
                latest(&mut self.head.model, model);
            }
        }
    }

    fn finish(self: Box<Self>) -> Head {
        self.head
    }
}

#[derive(Default)]
struct OmpReader {
    slot: Option<Vec<u8>>,
    changed: Option<Vec<u8>>,
    header: Option<Vec<u8>>,
    head: Head,
}

impl Reader for OmpReader {
    fn feed(&mut self, rec: &[u8], first: bool) {
        let Some(kind) = json::field(rec, b"type") else { return };
        let is = |t: &[u8]| json::str_eq(kind, t);
        if is(b"title") && first {
            self.slot = text(rec, &[b"title"], TITLE_BYTES_MAX);
        } else if is(b"session") && self.head.cwd.is_none() {
            self.head.cwd = cwd_of(rec, &[b"cwd"]);
            self.header = text(rec, &[b"title"], TITLE_BYTES_MAX);
        } else if is(b"title_change") {
            latest(&mut self.changed, text(rec, &[b"title"], TITLE_BYTES_MAX));
        } else if is(b"session_info") {
            // pi's `/name` (and omp's): the session's name.
            latest(&mut self.changed, text(rec, &[b"name"], TITLE_BYTES_MAX));
        } else if is(b"model_change") && omp_default_role(rec) {
            let model = text(rec, &[b"model"], MODEL_BYTES_MAX).map(|m| omp_model_id(&m).to_vec());
            latest(&mut self.head.model, model);
        } else if is(b"message") && json::path_is(rec, &[b"message", b"role"], b"assistant") {
            latest(&mut self.head.model, text(rec, &[b"message", b"model"], MODEL_BYTES_MAX));
        }
    }

    fn finish(self: Box<Self>) -> Head {
        let title = self.slot.or(self.changed).or(self.header);
        Head { title, ..self.head }
    }
}

/// dsh (read decoded: its transcript is zstd): its `session` header's
/// cwd; no record of the one specimen known (chat/dsh.rs) names a title or
/// a model.
#[derive(Default)]
struct DshReader {
    head: Head,
}

impl Reader for DshReader {
    fn feed(&mut self, rec: &[u8], _first: bool) {
        let Some(kind) = json::field(rec, b"type") else { return };
        if json::str_eq(kind, b"session") && self.head.cwd.is_none() {
            self.head.cwd = cwd_of(rec, &[b"cwd"]);
        }
    }

    fn finish(self: Box<Self>) -> Head {
        self.head
    }
}

/// A `model_change` for the session's own model: no `role`, or `default`
/// (omp also records the models of side roles, `smol`, `slow`, ...).
fn omp_default_role(rec: &[u8]) -> bool {
    match json::field(rec, b"role") {
        None => true,
        Some(raw) => json::str_eq(raw, b"default"),
    }
}

/// omp writes a `model_change` as `provider/modelId` and an assistant
/// message's model as the bare id; serve the bare id either way.
fn omp_model_id(model: &[u8]) -> &[u8] {
    memchr::memchr(b'/', model).map_or(model, |i| &model[i + 1..])
}

/// Whether a resolved transcript is the process's: its recorded cwd
/// against the process's `<proc>/<pid>/cwd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CwdCheck {
    /// Both known and equal.
    Match,
    /// Both known and different: the transcript is another session's.
    Mismatch,
    /// The transcript records no cwd (dsh; a Claude Code transcript before
    /// its first message): nothing to check against.
    Unrecorded,
    /// The process's cwd could not be read — a daemon in a user namespace
    /// cannot read another namespace's `<pid>/cwd`, which is when the
    /// lock route is needed at all. Nothing to check against.
    ProcessUnknown,
}

impl CwdCheck {
    /// Whether the session is believed: everything but a mismatch. Where
    /// there is nothing to compare, the route's own evidence stands (a
    /// registry record the harness wrote for this pid, a file or lock the
    /// process holds).
    pub(crate) fn believed(self) -> bool {
        self != CwdCheck::Mismatch
    }
}

/// Compare a transcript's recorded cwd with the process's. A trailing `/`
/// on either is ignored; a cwd the kernel reports as ` (deleted)` matches
/// nothing.
pub(crate) fn check_cwd(recorded: Option<&[u8]>, process: Option<&[u8]>) -> CwdCheck {
    use super::paths::trim_trailing_slashes as trim;
    match (recorded, process) {
        (_, None) => CwdCheck::ProcessUnknown,
        (None, Some(_)) => CwdCheck::Unrecorded,
        (Some(r), Some(p)) if trim(r) == trim(p) => CwdCheck::Match,
        (Some(_), Some(_)) => CwdCheck::Mismatch,
    }
}

#[cfg(test)]
mod tests;
