//! `/active`: which agents are running, and which session each is in —
//! the pure half. Every function here takes bytes the server has already
//! read and answers a value; none of them touches a file, so the whole
//! ladder is tested against byte fixtures and the server stays the only
//! place that does I/O (through the ring, never blocking the loop).
//!
//! The server's part, per scan and per read:
//!
//! ```text
//! <proc>/<pid>/cmdline ──► proc::classify ──► Harness, or not an agent
//! <proc>/<pid>/stat    ──► proc::parse_pid_stat ──► ppid, starttime (liveness, pid reuse)
//! <proc>/stat          ──► proc::parse_btime ──► started = btime + starttime/100
//! <proc>/<pid>/environ ──► proc::env_value(ZMX_SESSION)
//! then, per harness, the session (`Via` names the route that answered):
//!   claude  sessions/<pid>.json    ──► claude::parse_registry, check_registry, claude_project_dir
//!   codex   readlink fd/*          ──► codex::fd_rollouts                       (fd)
//!           <proc>/locks + lock dir ──► codex::held_write_flocks, locked_threads,
//!                                       rollout_day_dirs, rollout_in_listing   (lock)
//!           first records          ──► codex::pick_thread (no subagents, newest)
//!   omp     readlink fd/*          ──► omp::fd_transcripts                      (fd)
//!           store dir listing      ──► omp::store_dirs, omp::dir_pick          (dir)
//!   dsh     readlink fd/*          ──► dsh::fd_sessions                         (fd)
//!   hermes  nothing                                                            (none)
//! and for the fields read from the transcript:
//!   head and tail windows ──► head::read_head ──► title, model, cwd, name
//!   codex session_index   ──► codex::thread_name
//!   head cwd vs <proc>/<pid>/cwd ──► head::check_cwd: believe it or not
//! ```
//!
//! docs/ACTIVE.md says which record each field comes from, with the real
//! files it was read off, and what the server must read for each route.
//!
//! Nothing here trusts a path it was handed. A path taken from a record or
//! a readlink is only ever reduced to a path *relative to a harness root*,
//! made of names that passed [`paths::safe_rel`] (no `.`, `..` or empty
//! component); the server opens it from its pinned root like any mirrored
//! file, one component at a time, so a symlink or a hostile id cannot
//! reach outside the root.

pub(crate) mod agents;
pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod derive;
pub(crate) mod dsh;
pub(crate) mod head;
pub(crate) mod judged;
pub(crate) mod omp;
pub(crate) mod paths;
pub(crate) mod proc;

pub(crate) use crate::harness::Harness;

/// The routes tried for a harness, in order; the first that answers names
/// itself in `via`, and `Via::None` when none does.
pub(crate) fn routes(h: Harness) -> &'static [Via] {
    match h {
        Harness::Claude => &[Via::Registry],
        Harness::Codex => &[Via::Fd, Via::Lock],
        Harness::Omp | Harness::Pi => &[Via::Fd, Via::Dir],
        Harness::Dsh => &[Via::Fd],
        Harness::Hermes => &[],
    }
}

/// The files of `/active/<harness>/<pid>/`, each derived again when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Field {
    Cwd,
    Kind,
    Model,
    Name,
    Pid,
    Ppid,
    Session,
    Started,
    Status,
    Title,
    Via,
    WaitingFor,
    Zmx,
}

impl Field {
    /// Every field, in listing (name) order.
    pub(crate) const ALL: [Field; 13] = [
        Field::Cwd,
        Field::Kind,
        Field::Model,
        Field::Name,
        Field::Pid,
        Field::Ppid,
        Field::Session,
        Field::Started,
        Field::Status,
        Field::Title,
        Field::Via,
        Field::WaitingFor,
        Field::Zmx,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::Cwd => "cwd",
            Field::Kind => "kind",
            Field::Model => "model",
            Field::Name => "name",
            Field::Pid => "pid",
            Field::Ppid => "ppid",
            Field::Session => "session",
            Field::Started => "started",
            Field::Status => "status",
            Field::Title => "title",
            Field::Via => "via",
            Field::WaitingFor => "waiting_for",
            Field::Zmx => "zmx",
        }
    }
}

/// How a session was resolved: the text of the `via` file. A wrong guess
/// is then visible as the route that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Via {
    /// Claude Code's own `sessions/<pid>.json`.
    Registry,
    /// A transcript the process holds open (`<proc>/<pid>/fd/*`).
    Fd,
    /// The newest transcript in omp's store directory for the cwd.
    Dir,
    /// The codex thread whose writer lock the process holds.
    Lock,
    /// Nothing resolved it.
    None,
}

impl Via {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Via::Registry => "registry",
            Via::Fd => "fd",
            Via::Dir => "dir",
            Via::Lock => "lock",
            Via::None => "none",
        }
    }
}

/// Bytes of a transcript's head the title, model and cwd are read from.
/// The largest first record seen (a codex `session_meta` carrying its
/// instructions) is 44 KB, and codex's first `turn_context`, which names
/// the model, sits up to 85 KB in; 128 KiB holds both with room.
pub(crate) const HEAD_BYTES_MAX: usize = 128 * 1024;

/// Bytes of a transcript's tail read for what changes as a session runs:
/// Claude Code appends `ai-title` and `custom-title` records as it goes
/// (the last one wins), and a `/model` switch shows in the latest records.
pub(crate) const TAIL_BYTES_MAX: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_spells_the_routes_the_seed_names() {
        let all = [Via::Registry, Via::Fd, Via::Dir, Via::Lock, Via::None];
        let names: Vec<_> = all.iter().map(|v| v.as_str()).collect();
        assert_eq!(names, ["registry", "fd", "dir", "lock", "none"]);
    }

    #[test]
    fn each_harness_has_its_ladder() {
        assert_eq!(routes(Harness::Codex), &[Via::Fd, Via::Lock]);
        assert_eq!(routes(Harness::Omp), &[Via::Fd, Via::Dir]);
        assert!(routes(Harness::Hermes).is_empty());
    }
}
