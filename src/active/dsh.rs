//! dsh: the session a process holds open, `session-<id>/session.jsonl.zstd`
//! under the dsh root (`~/.dsh/sessions/` in every home seen). The
//! transcript is zstd, so it has no readable head: no title, no model, no
//! recorded cwd.

use super::paths::{is_session_id, rel_under};

/// The file a dsh session writes.
pub(crate) const TRANSCRIPT_NAME: &[u8] = b"session.jsonl.zstd";

/// A dsh session found for a process, relative to the dsh root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Session<'a> {
    /// `.../session-<id>/session.jsonl.zstd`.
    pub rel: &'a [u8],
    pub id: &'a [u8],
}

/// The fd route: of a process's readlink targets, the dsh transcripts
/// under `dsh_root` — files named `session.jsonl.zstd` in a directory
/// named `session-<id>` — each once, in the order given.
pub(crate) fn fd_sessions<'a>(targets: &[&'a [u8]], dsh_root: &[u8]) -> Vec<Session<'a>> {
    let mut out: Vec<Session<'a>> = Vec::new();
    for target in targets {
        let Some(rel) = rel_under(target, dsh_root) else { continue };
        let Some(dir) = rel.strip_suffix(TRANSCRIPT_NAME).and_then(|d| d.strip_suffix(b"/")) else { continue };
        let dir_name = super::paths::file_name(dir);
        let Some(id) = dir_name.strip_prefix(b"session-").filter(|id| is_session_id(id)) else { continue };
        if !out.iter().any(|s| s.rel == rel) {
            out.push(Session { rel, id });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fd_route_takes_the_session_file_it_holds() {
        let t: &[u8] = b"/home/u/.dsh/sessions/session-d22520b1-9324-4d3d-a9a4-26c53c6108af/session.jsonl.zstd";
        let targets: [&[u8]; 6] = [
            b"/dev/null",
            t,
            t,
            b"/home/u/.dsh/sessions/session-../session.jsonl.zstd",
            b"/home/u/.dsh/sessions/other/session.jsonl.zstd",
            b"/home/u/.dsh/session.jsonl.zstd",
        ];
        let found = fd_sessions(&targets, b"/home/u/.dsh/");
        assert_eq!(found, [Session { rel: &t[13..], id: b"d22520b1-9324-4d3d-a9a4-26c53c6108af" }]);
        assert_eq!(found[0].rel, b"sessions/session-d22520b1-9324-4d3d-a9a4-26c53c6108af/session.jsonl.zstd");
    }

    #[test]
    fn a_deleted_or_foreign_file_is_not_a_session() {
        let targets: [&[u8]; 3] = [
            b"/home/u/.dsh/sessions/session-a/session.jsonl.zstd (deleted)",
            b"/tmp/.dsh/sessions/session-a/session.jsonl.zstd",
            b"/home/u/.dsh/sessions/session-/session.jsonl.zstd",
        ];
        assert!(fd_sessions(&targets, b"/home/u/.dsh").is_empty());
    }
}
