//! The facts executor: runs a sans-I/O derivation (`facts`) against the
//! disk through the ring.
//!
//! A gathering job holds its `Facts` and calls its derivation; what the
//! derivation wants and does not have becomes a batch of probes, all in
//! flight at once (`Want::Bytes` a slurp, `Want::Meta` a look, `Want::List`
//! an open and an inline getdents), except readlinks, which io_uring has no
//! operation for and which run inline — the derivations ask for them only
//! under `/proc` (an fd table, a cwd) and bound how many. When the batch is
//! back its answers join the facts and the derivation runs again.
//!
//! Every wanted path is composed by the derivation from fixed parts and
//! names it checked; the executor checks once more that no component of a
//! path under a harness is empty, `.`, `..` or excluded, and answers such a
//! want EACCES without touching the disk.

use std::ffi::CString;
use std::os::fd::OwnedFd;

use crate::facts::{Fact, Facts, Root, Want, SLURP_BYTES_MAX};
use crate::tree::{exclude, Backing};

use super::probe::{Kind, Probe, Target};
use super::Server;

/// Rounds of gathering one derivation may take. Each round is one batch of
/// reads that the previous answers made necessary; the deepest ladder (a
/// codex lock: /proc/locks, the lock dir, the day dirs, the rollout heads)
/// takes a handful. Past it the job fails loudly rather than loop.
pub const GATHER_ROUNDS_MAX: u32 = 4096;
/// Reads one round puts in flight at once, and readlinks it runs inline:
/// a scan of a machine with thousands of processes is cut into rounds of
/// this many, each a turn of the loop, so no other client waits behind
/// more than one round's submissions (a millisecond or so).
pub const GATHER_BATCH_MAX: usize = 128;
pub const LINKS_PER_ROUND_MAX: usize = 256;
/// Entries a `Want::List` reads at most (an fd table, a day of rollouts).
pub const LIST_ENTRIES_MAX: usize = 65_536;

/// A gathering in progress.
#[derive(Default)]
pub struct Gathering {
    pub facts: Facts,
    /// The wants of the batch in flight, in probe order.
    pub wants: Vec<Want>,
    pub rounds: u32,
}

impl Server {
    /// Turn a derivation's needs into probes. Readlinks are answered inline
    /// first; returns the probes to submit (empty when only readlinks were
    /// needed and the derivation should simply run again).
    pub(super) fn plan_wants(&self, g: &mut Gathering, needs: Vec<Want>) -> Vec<Probe> {
        let mut probes = Vec::new();
        let mut links = 0;
        let mut more = false;
        let mut seen = std::collections::HashSet::with_capacity(needs.len());
        g.wants.clear();
        for want in needs {
            if g.facts.contains(&want) || !seen.insert(want.clone()) {
                continue;
            }
            if let Want::Link { root, rel } = &want {
                if links == LINKS_PER_ROUND_MAX {
                    more = true;
                    continue;
                }
                links += 1;
                let fact = self.readlink(*root, rel);
                g.facts.insert(want, fact);
                continue;
            }
            if probes.len() == GATHER_BATCH_MAX {
                more = true;
                continue;
            }
            let Some(backing) = self.want_backing(&want) else {
                g.facts.insert(want, Err(libc::EACCES));
                continue;
            };
            let kind = match want {
                Want::Bytes { max, .. } => Kind::Slurp(max.min(SLURP_BYTES_MAX)),
                Want::Tail { max, .. } => Kind::SlurpTail(max.min(SLURP_BYTES_MAX)),
                Want::Meta { .. } => Kind::Look,
                Want::List { .. } => Kind::Read,
                Want::Link { .. } => unreachable!("answered above"),
            };
            probes.push(Probe::new(Target::Beneath(backing), kind));
            g.wants.push(want);
        }
        // Only readlinks this round, and more to come: yield a turn of the
        // loop before the next round rather than run them all at once.
        if probes.is_empty() && more {
            probes.push(Probe::new(Target::Yield, Kind::Look));
        }
        probes
    }

    /// The batch is back: fold each probe's answer into the facts. Returns
    /// the fds of listed directories for the ring to close.
    pub(super) fn absorb(&self, g: &mut Gathering, probes: Vec<Probe>) -> Vec<OwnedFd> {
        let mut close = Vec::new();
        for (want, mut p) in std::mem::take(&mut g.wants).into_iter().zip(probes) {
            let fact = match (&want, p.result.unwrap_or(Err(libc::ENOENT))) {
                (_, Err(e)) => Err(e),
                (Want::Bytes { .. } | Want::Tail { .. }, Ok(_)) => {
                    // The read buffer was sized for the most; keep what came.
                    let mut data = std::mem::take(&mut p.data);
                    data.shrink_to_fit();
                    Ok(Fact::Bytes(data))
                }
                (Want::Meta { .. }, Ok(m)) => Ok(Fact::Meta(m)),
                (Want::List { .. }, Ok(m)) if !m.is_dir() => Err(libc::ENOTDIR),
                (Want::List { .. }, Ok(_)) => match p.fd.take() {
                    Some(fd) => {
                        let names = super::dirents::read(&fd, LIST_ENTRIES_MAX);
                        close.push(fd);
                        names.map(Fact::Names).map_err(|_| libc::EIO)
                    }
                    None => Err(libc::EBADF),
                },
                (Want::Link { .. }, Ok(_)) => Err(libc::EINVAL),
            };
            close.extend(p.fd.take());
            g.facts.insert(want, fact);
        }
        close
    }

    /// Where a want's path lives, or `None` when the path may not be read.
    fn want_backing(&self, want: &Want) -> Option<Backing> {
        let (Want::Bytes { root, rel, .. }
        | Want::Tail { root, rel, .. }
        | Want::List { root, rel }
        | Want::Meta { root, rel }
        | Want::Link { root, rel }) = want;
        let base = match root {
            Root::Proc => self.tree.proc_base().clone(),
            Root::Harness(h) => self.tree.harness_base(*h)?.clone(),
        };
        if !rel_is_safe(rel, matches!(root, Root::Harness(_))) {
            return None;
        }
        let rel = if rel.is_empty() { b".".to_vec() } else { rel.clone() };
        Some(Backing { base, rel: CString::new(rel).ok()? })
    }

    /// readlink of a path under a root, inline (no ring operation exists).
    pub(super) fn readlink(&self, root: Root, rel: &[u8]) -> Result<Fact, i32> {
        let base = match root {
            Root::Proc => self.tree.proc_base(),
            Root::Harness(h) => self.tree.harness_base(h).ok_or(libc::ENOENT)?,
        };
        if !rel_is_safe(rel, matches!(root, Root::Harness(_))) {
            return Err(libc::EACCES);
        }
        let mut path = base.as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(rel);
        let path = CString::new(path).map_err(|_| libc::EINVAL)?;
        match rustix::fs::readlink(path.as_c_str(), Vec::new()) {
            Ok(target) => Ok(Fact::Link(target.into_bytes())),
            Err(e) => Err(e.raw_os_error()),
        }
    }
}

/// Every component is a plain name (not empty, `.`, `..`), and under a
/// harness none is excluded.
fn rel_is_safe(rel: &[u8], harness: bool) -> bool {
    rel.is_empty()
        || rel
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b".." && !c.contains(&0) && !(harness && exclude::excluded(c)))
}

#[cfg(test)]
mod tests {
    use super::rel_is_safe;

    #[test]
    fn a_wanted_path_under_a_harness_never_names_an_excluded_file() {
        assert!(rel_is_safe(b"projects/-home-x/abc.jsonl", true));
        assert!(!rel_is_safe(b"projects/-home-x/token.jsonl", true));
        assert!(!rel_is_safe(b"sessions/../.credentials.json", true));
        assert!(!rel_is_safe(b"a//b", true));
        assert!(rel_is_safe(b"1234/environ", false));
    }
}
