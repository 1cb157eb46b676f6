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

pub mod claude;
pub mod codex;
pub mod derive;
pub mod dsh;
pub mod head;
pub mod omp;
pub mod paths;
pub mod proc;

/// The harnesses `/active` lists, one directory each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Harness {
    Claude,
    Codex,
    Omp,
    Hermes,
    Dsh,
}

impl Harness {
    /// Every harness, in the order `/active` lists them (by name).
    pub const ALL: [Harness; 5] = [Harness::Claude, Harness::Codex, Harness::Dsh, Harness::Hermes, Harness::Omp];

    /// The directory name under `/active`, and the `argv[0]` basename that
    /// identifies the harness.
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Omp => "omp",
            Harness::Hermes => "hermes",
            Harness::Dsh => "dsh",
        }
    }

    /// The routes tried for this harness, in order; the first that answers
    /// names itself in `via`, and `Via::None` when none does.
    pub fn routes(self) -> &'static [Via] {
        match self {
            Harness::Claude => &[Via::Registry],
            Harness::Codex => &[Via::Fd, Via::Lock],
            Harness::Omp => &[Via::Fd, Via::Dir],
            Harness::Dsh => &[Via::Fd],
            Harness::Hermes => &[],
        }
    }
}

/// How a session was resolved: the text of the `via` file. A wrong guess
/// is then visible as the route that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Via {
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
    pub fn as_str(self) -> &'static str {
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
pub const HEAD_BYTES_MAX: usize = 128 * 1024;

/// Bytes of a transcript's tail read for what changes as a session runs:
/// Claude Code appends `ai-title` and `custom-title` records as it goes
/// (the last one wins), and a `/model` switch shows in the latest records.
pub const TAIL_BYTES_MAX: usize = 64 * 1024;

/// Bytes of a small record the server reads whole: a registry record,
/// `<proc>/<pid>/stat`, `cmdline`, `environ`. A buffer that comes back
/// full may have been cut, and the functions here treat it so (a cut
/// registry record is not JSON and is refused).
pub const SMALL_BYTES_MAX: usize = 64 * 1024;

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
    fn harnesses_list_by_name_and_each_has_its_ladder() {
        let names: Vec<_> = Harness::ALL.iter().map(|h| h.as_str()).collect();
        assert_eq!(names, ["claude", "codex", "dsh", "hermes", "omp"]);
        assert_eq!(Harness::Codex.routes(), &[Via::Fd, Via::Lock]);
        assert_eq!(Harness::Omp.routes(), &[Via::Fd, Via::Dir]);
        assert!(Harness::Hermes.routes().is_empty());
    }
}
