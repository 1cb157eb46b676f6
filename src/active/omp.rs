//! omp: the transcript a process holds open under `agent/sessions/`
//! (`via fd`), else the newest transcript in the store directory omp
//! names after the process's cwd (`via dir`).
//!
//! A transcript is `agent/sessions/<store>/<timestamp>_<id>.jsonl`; a
//! subagent's lives one level deeper, in a directory named after its
//! parent's transcript, so only files directly in a store directory are
//! sessions.
//!
//! **How omp names a store directory.** Checked against omp's source
//! (`computeDefaultSessionDir`, packages/coding-agent) and the demo home
//! (`demo/home/.omp/agent/sessions/-src-9agents` for `$HOME/src/9agents`):
//!
//! - a cwd inside `$HOME`: `-` and the path relative to `$HOME`, each `/`,
//!   `\` and `:` turned into `-` (`$HOME` itself is `-`);
//! - a cwd inside the temp dir (`$TMPDIR`, else `/tmp`): `-tmp-` and the
//!   relative path the same way (the temp dir itself is `-tmp`);
//! - anything else, and every cwd before omp moved to the relative form:
//!   `--` + the absolute path without its leading `/`, separators turned
//!   into `-`, + `--` (`--srv-x--`). omp migrates those when it next starts
//!   in that cwd, so a long-running process may still be writing one.
//!
//! The seed's description — the cwd with `/` becoming `-`, as in
//! `-home-u-src-x` — is none of these, but cheap to look for, so
//! [`store_dirs`] answers it last. omp resolves symlinks in the cwd and
//! `$HOME` before comparing; `<proc>/<pid>/cwd` is already resolved, and
//! the server must pass `$HOME` and the temp dir resolved too.

use super::paths::{file_name, is_session_id, pick_newest, rel_under, trim_trailing_slashes};

/// A transcript found for a process, relative to the omp root (`~/.omp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transcript<'a> {
    /// `agent/sessions/<store>/<timestamp>_<id>.jsonl`.
    pub rel: &'a [u8],
    pub id: &'a [u8],
}

/// The session id of a transcript's file name: `<timestamp>_<id>.jsonl`
/// → `<id>` (omp's ids are UUIDv7s; any `[A-Za-z0-9_-]+` is accepted).
pub(crate) fn session_id(name: &[u8]) -> Option<&[u8]> {
    let stem = name.strip_suffix(b".jsonl")?;
    let cut = memchr::memrchr(b'_', stem)?;
    let id = &stem[cut + 1..];
    (cut > 0 && is_session_id(id)).then_some(id)
}

/// The fd route: of a process's readlink targets, the transcripts directly
/// in a store directory under `<omp_root>/agent/sessions/`, each once, in
/// the order given. The server orders them newest first ([`newest`]).
pub(crate) fn fd_transcripts<'a>(targets: &[&'a [u8]], omp_root: &[u8]) -> Vec<Transcript<'a>> {
    let mut out: Vec<Transcript<'a>> = Vec::new();
    for target in targets {
        let Some(rel) = rel_under(target, omp_root) else { continue };
        let Some(below) = rel.strip_prefix(b"agent/sessions/") else { continue };
        if below.iter().filter(|&&b| b == b'/').count() != 1 {
            continue;
        }
        let Some(id) = session_id(file_name(rel)) else { continue };
        if !out.iter().any(|t| t.rel == rel) {
            out.push(Transcript { rel, id });
        }
    }
    out
}

/// Of transcripts with the caller's measure of newest (their mtime), the
/// newest: "newest first" of the fd route, and the pick of the dir route.
pub(crate) fn newest<'a>(found: &[(Transcript<'a>, u64)]) -> Option<Transcript<'a>> {
    let best = pick_newest(found.iter().map(|(t, key)| (t.rel, *key)))?;
    found.iter().map(|(t, _)| *t).find(|t| t.rel == best)
}

/// The store directory names omp may keep `cwd`'s transcripts in, the one
/// current omp writes first (see the module docs): relative to `home`,
/// else to `tmp`, else the legacy absolute form; then the legacy absolute
/// form when it differs; then the seed's plain `/` → `-` form. `cwd`,
/// `home` and `tmp` are absolute and resolved; a cwd that is not absolute
/// names nothing.
pub(crate) fn store_dirs(cwd: &[u8], home: &[u8], tmp: &[u8]) -> Vec<Vec<u8>> {
    let cwd = trim_trailing_slashes(cwd);
    if cwd.first() != Some(&b'/') || cwd.contains(&0) {
        return Vec::new();
    }
    let legacy = [&b"--"[..], &encode(&cwd[1..]), b"--"].concat();
    let current = match (relative(cwd, home), relative(cwd, tmp)) {
        (Some(rel), _) => [&b"-"[..], &encode(rel)].concat(),
        (None, Some(b"")) => b"-tmp".to_vec(),
        (None, Some(rel)) => [&b"-tmp-"[..], &encode(rel)].concat(),
        (None, None) => legacy.clone(),
    };
    let plain = encode(cwd);
    let mut out = vec![current];
    for name in [legacy, plain] {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// `cwd` relative to `root` when inside it (`""` for `root` itself).
fn relative<'a>(cwd: &'a [u8], root: &[u8]) -> Option<&'a [u8]> {
    let root = trim_trailing_slashes(root);
    if root.first() != Some(&b'/') {
        return None;
    }
    if cwd == root {
        return Some(b"");
    }
    if root == b"/" {
        return cwd.strip_prefix(b"/");
    }
    cwd.strip_prefix(root)?.strip_prefix(b"/")
}

/// omp's separator rule: `/`, `\` and `:` each become `-`.
fn encode(path: &[u8]) -> Vec<u8> {
    path.iter().map(|&b| if matches!(b, b'/' | b'\\' | b':') { b'-' } else { b }).collect()
}

/// The dir route: of a store directory's regular files (name, the caller's
/// measure of newest), the newest transcript's name.
pub(crate) fn dir_pick<'a>(entries: &[(&'a [u8], u64)]) -> Option<&'a [u8]> {
    pick_newest(entries.iter().copied().filter(|(name, _)| session_id(name).is_some()))
}

#[cfg(test)]
mod tests;
