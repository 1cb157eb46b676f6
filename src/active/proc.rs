//! Reading `/proc`: which processes are agents, when they started, who
//! their parent is, and one variable of their environment — all from the
//! bytes of `<proc>/<pid>/{cmdline,stat,environ}` and `<proc>/stat`.
//!
//! **Which processes.** `argv[0]`'s basename names the harness (`claude`,
//! `codex`, `omp`, `hermes`, `dsh`), or it is a python running hermes. A
//! command line carrying a daemon word is a server or helper, not a
//! session. The words are matched as whole arguments, and only *after*
//! `argv[0]`: `argv[0]` is the program, whose basename has already decided
//! what it is, and a word in its directory (`/opt/serve/bin/claude`) says
//! nothing. Any later argument counts, wherever it sits, because helpers
//! put their subcommand in different places (`claude mcp serve`,
//! `codex app-server`, `python -m hermes_cli.main gateway run`). The cost
//! is that a session started with a prompt that is exactly a daemon word
//! (`claude ps`) is not listed; erring that way never offers a daemon as
//! something to move.
//!
//! **When they started, and pid reuse.** Field 22 of `<pid>/stat` is the
//! start time in clock ticks since boot, at `USER_HZ` (100 on every Linux
//! `/proc`, whatever `CONFIG_HZ` is). A slot remembers it; a pid whose
//! starttime differs is another process, and a zombie is a corpse.

/// Arguments that make a command line a server or helper, never a session.
pub(crate) const DAEMON_WORDS: [&[u8]; 13] = [
    b"gateway",
    b"dashboard",
    b"mcp",
    b"mcp-server",
    b"app-server",
    b"exec-server",
    b"serve",
    b"daemon",
    b"acp",
    b"ps",
    b"render",
    b"export",
    b"__omp_worker_daemon_broker",
];

/// Ticks a second in `/proc`'s clock fields; fixed by the kernel ABI.
pub(crate) const USER_HZ: u64 = 100;

/// Parents followed up from a process before the walk gives up. Real trees
/// are a few dozen deep; the bound only matters when `parent_of` answers a
/// loop (a pid reused between two reads), which it cuts short.
pub(crate) const ANCESTRY_DEPTH_MAX: usize = 4096;

use super::paths::file_name;
use super::Harness;

/// The harness a command line (`<proc>/<pid>/cmdline`: NUL-separated
/// argv) runs, or `None` for anything else, helpers included.
pub(crate) fn classify(cmdline: &[u8]) -> Option<Harness> {
    let mut argv = args(cmdline);
    let argv0 = argv.next()?;
    if args(cmdline).skip(1).any(|a| DAEMON_WORDS.contains(&a)) {
        return None;
    }
    // A harness's name is its argv[0] basename (`Harness::name`).
    match file_name(argv0) {
        name if is_python(name) && runs_hermes(argv) => Some(Harness::Hermes),
        name => Harness::from_name(name),
    }
}

/// The arguments of a NUL-separated command line. The final NUL ends the
/// last argument rather than starting an empty one.
fn args(cmdline: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = cmdline.strip_suffix(b"\0").unwrap_or(cmdline);
    body.split(|&b| b == 0).filter(move |_| !body.is_empty())
}

/// `python`, `python3`, `python3.11`: the name and then only digits and dots.
fn is_python(name: &[u8]) -> bool {
    name.strip_prefix(b"python").is_some_and(|v| v.iter().all(|&b| b.is_ascii_digit() || b == b'.'))
}

/// Whether a python's arguments (after `argv[0]`) run hermes: the module
/// `hermes_cli.main` (`-m hermes_cli.main`, `-mhermes_cli.main`), or a
/// script whose path holds `hermes_cli.main` or `hermes_cli/main.py`, or
/// the `hermes` console script pip installs (its shebang makes the kernel
/// run `python /path/bin/hermes ...`). Interpreter options before the
/// module or script are stepped over; `-c` code is never hermes.
fn runs_hermes<'a>(mut rest: impl Iterator<Item = &'a [u8]>) -> bool {
    while let Some(arg) = rest.next() {
        let target = match arg {
            b"-m" => return rest.next() == Some(b"hermes_cli.main"),
            b"-c" => return false,
            b"-W" | b"-X" => {
                rest.next();
                continue;
            }
            b"--" => match rest.next() {
                Some(script) => script,
                None => return false,
            },
            m if m.starts_with(b"-m") => return &m[2..] == b"hermes_cli.main",
            o if o.starts_with(b"-") => continue,
            script => script,
        };
        return is_hermes_script(target);
    }
    false
}

fn is_hermes_script(path: &[u8]) -> bool {
    let has = |needle: &[u8]| memchr::memmem::find(path, needle).is_some();
    has(b"hermes_cli.main") || path.ends_with(b"hermes_cli/main.py") || file_name(path) == b"hermes"
}

/// What `/active` needs of `<proc>/<pid>/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PidStat<'a> {
    pub pid: u32,
    /// The kernel's name for the task (up to 15 bytes; any bytes at all,
    /// spaces and `)` included).
    pub comm: &'a [u8],
    /// Field 3: `R`, `S`, `D`, `Z`, ...
    pub state: u8,
    pub ppid: u32,
    /// Field 22: clock ticks after boot that the process started.
    pub starttime_ticks: u64,
}

/// Parse `<proc>/<pid>/stat`: `pid (comm) state ppid ... starttime ...`.
/// `comm` may hold spaces and `)`, so it ends at the *last* `)`, as procps
/// reads it. `None` for anything that is not that shape.
pub(crate) fn parse_pid_stat(stat: &[u8]) -> Option<PidStat<'_>> {
    let open = memchr::memchr(b'(', stat)?;
    let close = memchr::memrchr(b')', stat)?;
    if close < open || stat.get(open.checked_sub(1)?) != Some(&b' ') {
        return None;
    }
    let pid = parse_u32(&stat[..open - 1])?;
    let comm = &stat[open + 1..close];
    let rest = stat.get(close + 1..)?.strip_prefix(b" ")?;
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    let mut fields = rest.split(|&b| b == b' ');
    let state = match fields.next()? {
        [s] => *s,
        _ => return None,
    };
    let ppid = parse_u32(fields.next()?)?;
    // Fields 5..=21 lie between ppid (4) and starttime (22).
    let starttime_ticks = crate::json::digits_u64(fields.nth(17)?)?;
    Some(PidStat { pid, comm, state, ppid, starttime_ticks })
}

fn parse_u32(digits: &[u8]) -> Option<u32> {
    u32::try_from(crate::json::digits_u64(digits)?).ok()
}

/// The boot time, Unix seconds, from `<proc>/stat`'s `btime` line.
pub(crate) fn parse_btime(proc_stat: &[u8]) -> Option<u64> {
    proc_stat
        .split(|&b| b == b'\n')
        .find_map(|line| line.strip_prefix(b"btime "))
        .and_then(|v| crate::json::digits_u64(v.trim_ascii()))
}

/// When a process started, Unix seconds: boot time plus its starttime.
pub(crate) fn started(btime: u64, starttime_ticks: u64) -> u64 {
    btime.saturating_add(starttime_ticks / USER_HZ)
}

/// Whether the process now at a pid is the one remembered: its stat
/// parses, its starttime is the one remembered, and it is not a zombie
/// (`Z`) or dead (`X`). A reused pid and a corpse both answer false.
pub(crate) fn is_same_process(remembered_ticks: u64, stat: &[u8]) -> bool {
    parse_pid_stat(stat).is_some_and(|s| s.starttime_ticks == remembered_ticks && !matches!(s.state, b'Z' | b'X'))
}

/// The value of `key` in an environment block (`<proc>/<pid>/environ`:
/// NUL-separated `KEY=VALUE`), matched by the whole key: `ZMX_SESSION`
/// never answers `ZMX_SESSION_X=...`. The first entry wins, as `getenv`'s.
pub(crate) fn env_value<'a>(environ: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    if key.is_empty() || key.contains(&b'=') {
        return None;
    }
    environ.split(|&b| b == 0).find_map(|entry| entry.strip_prefix(key)?.strip_prefix(b"="))
}

#[cfg(test)]
mod tests;
