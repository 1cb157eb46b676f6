//! codex: which rollout a process is writing, by the file it holds open
//! (`via fd`) or, when its fds cannot be read, by the thread writer lock it
//! holds (`via lock`); and the thread's name from `session_index.jsonl`.
//!
//! A rollout is `sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl`.
//! Its *name* carries the session id — the last 36 bytes of the stem, not
//! what splitting on `-` gives, since the timestamp holds dashes too — so
//! codex's sqlite is never opened.
//!
//! **The lock route.** A daemon in a user namespace cannot read another
//! namespace's `<pid>/fd`, but `/proc/locks` is world-readable and names
//! the pid holding each lock and the locked file's inode. codex holds a
//! write `flock` on `thread-writer-locks/<thread>.lock` for every thread it
//! writes, so:
//!
//! 1. [`held_write_flocks`]: the inodes the pid holds `FLOCK ... WRITE` on;
//! 2. [`locked_threads`]: which lock files have those inodes — by inode
//!    alone, since on btrfs `/proc/locks` prints the superblock's device
//!    (`00:37`) and `stat` the subvolume's (`0:56`), so the pair never
//!    agrees, and every candidate is in one directory where the inode is
//!    unique anyway;
//! 3. [`uuidv7_ms`] and [`rollout_day_dirs`]: a thread id is a UUIDv7,
//!    whose first 48 bits are the milliseconds it was minted at, so its
//!    rollout is in that UTC day's directory or one either side (the
//!    directories are named in local time);
//! 4. [`rollout_in_listing`]: the rollout in those directories;
//! 5. [`pick_thread`]: a process holds its subagents' threads too
//!    (multi-agent runs them in-process), so a thread whose first record
//!    says it is a subagent's is skipped, and of the rest — several after
//!    a `/new` — the rollout written last wins (its mtime: the seed's
//!    rule, the thread the agent is in; the newest id is only the
//!    tie-break, since a resumed older thread is written after a newer one).
//!
//! The fd route ends in the same [`pick_thread`], since a process holding
//! its subagents' rollouts open is the same question.

use crate::json;

use super::paths::{file_name, is_uuid, rel_under, UUID_BYTES};

/// A rollout found for a process: where it is below the codex root, and
/// the session id its name carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rollout<'a> {
    /// Relative to the codex root: `sessions/YYYY/MM/DD/rollout-...jsonl`.
    pub rel: &'a [u8],
    pub id: &'a [u8],
}

/// The session id of a rollout's file name: `rollout-<when>-<uuid>.jsonl`
/// → `<uuid>`. `None` for any other name.
pub(crate) fn rollout_id(name: &[u8]) -> Option<&[u8]> {
    let stem = name.strip_prefix(b"rollout-")?.strip_suffix(b".jsonl")?;
    let id = stem.get(stem.len().checked_sub(UUID_BYTES)?..)?;
    let before = &stem[..stem.len() - UUID_BYTES];
    (is_uuid(id) && (before.is_empty() || before.ends_with(b"-"))).then_some(id)
}

/// The fd route: of a process's readlink targets (`<proc>/<pid>/fd/*`),
/// the rollouts under `<codex_root>/sessions/`, each once.
pub(crate) fn fd_rollouts<'a>(targets: &[&'a [u8]], codex_root: &[u8]) -> Vec<Rollout<'a>> {
    let mut out: Vec<Rollout<'a>> = Vec::new();
    for target in targets {
        let Some(rel) = rel_under(target, codex_root) else { continue };
        if !rel.starts_with(b"sessions/") {
            continue;
        }
        let Some(id) = rollout_id(file_name(rel)) else { continue };
        if !out.iter().any(|r| r.rel == rel) {
            out.push(Rollout { rel, id });
        }
    }
    out
}

/// The inodes `pid` holds a write `flock` on, from `<proc>/locks`:
///
/// ```text
/// 1: FLOCK  ADVISORY  WRITE 657408 00:37:32607155 0 EOF
/// 2: -> FLOCK  ADVISORY  WRITE 657409 00:37:32607155 0 EOF
/// ```
///
/// The third field of `maj:min:inode` is the inode, in decimal. A line
/// whose second word is `->` is a process waiting for the lock, not
/// holding it; POSIX and OFD locks, leases and read locks are not codex's
/// writer locks.
pub(crate) fn held_write_flocks(locks: &[u8], pid: u32) -> Vec<u64> {
    let mut out = Vec::new();
    for line in locks.split(|&b| b == b'\n') {
        let mut words = line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty());
        let (Some(_), Some(kind)) = (words.next(), words.next()) else { continue };
        if kind != b"FLOCK" || words.next().is_none() || words.next() != Some(b"WRITE") {
            continue;
        }
        if words.next().and_then(json::digits_u64) != Some(u64::from(pid)) {
            continue;
        }
        let Some(dev_ino) = words.next() else { continue };
        let ino = memchr::memrchr(b':', dev_ino).and_then(|i| json::digits_u64(&dev_ino[i + 1..]));
        if let Some(ino) = ino.filter(|i| !out.contains(i)) {
            out.push(ino);
        }
    }
    out
}

/// The lock route's second step: of the lock directory's files
/// (`thread-writer-locks/<uuid>.lock`, with the inode the server statted
/// for each), the thread ids whose inode the process holds.
pub(crate) fn locked_threads<'a>(held: &[u64], lock_files: &[(&'a [u8], u64)]) -> Vec<&'a [u8]> {
    lock_files
        .iter()
        .filter(|(_, ino)| held.contains(ino))
        .filter_map(|(name, _)| name.strip_suffix(b".lock").filter(|id| is_uuid(id)))
        .collect()
}

/// The Unix milliseconds a UUIDv7 was minted at: its first 48 bits. `None`
/// for a UUID of another version, whose bits are not a time.
pub(crate) fn uuidv7_ms(id: &[u8]) -> Option<u64> {
    if !is_uuid(id) || id[14] != b'7' {
        return None;
    }
    let hex = [&id[0..8], &id[9..13]].concat();
    hex.iter().try_fold(0u64, |n, &d| Some(n << 4 | u64::from((d as char).to_digit(16)?)))
}

/// The directories a rollout minted at `ms` can be in, relative to the
/// codex root, most likely first: `sessions/YYYY/MM/DD` for the UTC day,
/// then the day before and the day after (codex names them in local time,
/// UTC-12 to UTC+14).
pub(crate) fn rollout_day_dirs(ms: u64) -> [Vec<u8>; 3] {
    let day = (ms / 86_400_000) as i64;
    [day, day - 1, day + 1].map(|d| {
        let (y, m, dd) = civil_from_days(d);
        format!("sessions/{y:04}/{m:02}/{dd:02}").into_bytes()
    })
}

/// The proleptic Gregorian date of a day count from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The rollout of thread `id` among a day directory's file names.
pub(crate) fn rollout_in_listing<'a>(names: impl IntoIterator<Item = &'a [u8]>, id: &[u8]) -> Option<&'a [u8]> {
    names.into_iter().find(|name| rollout_id(name) == Some(id))
}

/// Whether a rollout's first record says it is a subagent's thread:
/// `payload.thread_source` is `"subagent"` (codex 0.145 on), or
/// `payload.source` is an object naming `subagent` (earlier versions:
/// `{"subagent":"review"}`, `{"subagent":{"thread_spawn":...}}`). A first
/// record that says neither, or cannot be read, is not called a subagent.
pub(crate) fn is_subagent_thread(first_record: &[u8]) -> bool {
    json::path_is(first_record, &[b"payload", b"thread_source"], b"subagent")
        || json::path(first_record, &[b"payload", b"source", b"subagent"]).is_some()
}

/// A candidate thread for [`pick_thread`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thread<'a> {
    /// The rollout's first record (its `session_meta`), or as much of it
    /// as was read: the fields looked at come early in it.
    pub first_record: &'a [u8],
    /// The rollout's mtime (seconds, as the facts' `Meta` has it; 0 when
    /// it could not be statted): codex appends to the thread it is in.
    pub mtime: i64,
    /// The thread id (a UUIDv7, so it sorts by when it was minted).
    pub id: &'a [u8],
}

/// Which of a process's threads is its session: not a subagent's, and of
/// the rest the rollout written last — the one the agent is in, which after
/// a `/new` and a resume need not be the newest id. Ties (one second) go to
/// the newest id, then to the later in `threads`. An index into `threads`.
pub(crate) fn pick_thread(threads: &[Thread<'_>]) -> Option<usize> {
    threads
        .iter()
        .enumerate()
        .filter(|(_, t)| !is_subagent_thread(t.first_record))
        .max_by_key(|(_, t)| (t.mtime, t.id))
        .map(|(i, _)| i)
}

/// The thread's name from `session_index.jsonl` (one `{"id", "thread_name",
/// "updated_at"}` a line, a line appended each time a thread is named):
/// the last line for `id` wins. `at_file_start` is false when `index` is
/// the file's tail, whose first line may be cut.
pub(crate) fn thread_name(index: &[u8], at_file_start: bool, id: &[u8]) -> Option<Vec<u8>> {
    super::head::records(index, at_file_start)
        .filter(|rec| json::path_is(rec, &[b"id"], id))
        .filter_map(|rec| json::path_str(rec, &[b"thread_name"]).filter(|n| !n.is_empty()))
        .last()
        .map(|n| super::paths::cap_text(n, super::head::TITLE_BYTES_MAX))
}

/// What codex is doing, from its rollout's turn events (`event_msg`
/// records): after `task_started` a turn runs (`busy`), after
/// `task_complete` or `turn_aborted` it waits for the user (`idle`). The
/// last such record of `tail` decides; `at_file_start` is false when `tail`
/// is the file's end, whose first line may be cut. A tail cut from a
/// longer file that holds no turn event is in the middle of a turn long
/// enough to have written past it: `busy`. A whole file with none has no
/// status to say.
pub(crate) fn turn_status(tail: &[u8], at_file_start: bool) -> Option<&'static [u8]> {
    let last = super::head::records(tail, at_file_start)
        .filter(|rec| json::path_is(rec, &[b"type"], b"event_msg"))
        .filter_map(|rec| {
            let ty = json::path(rec, &[b"payload", b"type"])?;
            match () {
                _ if json::str_eq(ty, b"task_started") => Some(&b"busy"[..]),
                _ if json::str_eq(ty, b"task_complete") || json::str_eq(ty, b"turn_aborted") => Some(&b"idle"[..]),
                _ => None,
            }
        })
        .last();
    match (last, at_file_start) {
        (Some(word), _) => Some(word),
        (None, false) => Some(b"busy"),
        (None, true) => None,
    }
}

#[cfg(test)]
mod tests;
