//! Paths and ids as `/active` accepts them: what a readlink target or a
//! record's field must look like before any of it names a file.
//!
//! The rule is one: a path that came from outside (a readlink of a
//! process's fd, an id in a record) is reduced to a path relative to a
//! harness root whose every component is a plain name, or refused. The
//! server then opens it from the pinned root, as it opens mirrored files.

/// The longest session id accepted. Every harness's ids are UUIDs (36
/// bytes) or shorter; anything much longer is not an id.
pub(crate) const SESSION_ID_BYTES_MAX: usize = 128;

/// The longest path accepted from a readlink or a record (Linux PATH_MAX).
pub(crate) const PATH_BYTES_MAX: usize = 4096;

/// Whether `rel` is a relative path of plain names: not empty, no leading
/// `/`, no empty, `.` or `..` component, no NUL, no longer than
/// `PATH_BYTES_MAX`.
pub(crate) fn safe_rel(rel: &[u8]) -> bool {
    !rel.is_empty()
        && rel.len() <= PATH_BYTES_MAX
        && !rel.contains(&0)
        && rel.split(|&b| b == b'/').all(|c| !c.is_empty() && c != b"." && c != b"..")
}

/// `target` relative to `root` when it lies strictly below it and the rest
/// is a `safe_rel` path. `root` is absolute, as the server canonicalised
/// it (readlink answers canonical paths, so a root reached through a
/// symlink must be resolved first or nothing will match); a trailing `/`
/// on it is ignored. A target the kernel marks ` (deleted)` keeps that
/// suffix and so never names a transcript.
pub(crate) fn rel_under<'a>(target: &'a [u8], root: &[u8]) -> Option<&'a [u8]> {
    let root = trim_trailing_slashes(root);
    if root.first() != Some(&b'/') {
        return None;
    }
    let below = target.strip_prefix(root)?;
    let rest = if root == b"/" { below } else { below.strip_prefix(b"/")? };
    safe_rel(rest).then_some(rest)
}

/// `path` without trailing slashes, except that `/` stays `/`.
pub(crate) fn trim_trailing_slashes(path: &[u8]) -> &[u8] {
    let mut end = path.len();
    while end > 1 && path[end - 1] == b'/' {
        end -= 1;
    }
    &path[..end]
}

/// The last component of a path.
pub(crate) fn file_name(path: &[u8]) -> &[u8] {
    memchr::memrchr(b'/', path).map_or(path, |i| &path[i + 1..])
}

/// Whether `id` can be a session id in a file name: `[A-Za-z0-9_-]+`, up
/// to `SESSION_ID_BYTES_MAX`. This is what keeps a record's `sessionId`
/// of `../../etc/passwd` from ever becoming part of a path.
pub(crate) fn is_session_id(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= SESSION_ID_BYTES_MAX
        && id.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The length of a textual UUID, `8-4-4-4-12` hex digits.
pub(crate) const UUID_BYTES: usize = 36;

/// Whether `id` is a textual UUID (any version, either case).
pub(crate) fn is_uuid(id: &[u8]) -> bool {
    id.len() == UUID_BYTES
        && id.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// `text` cut to at most `max` bytes, at a UTF-8 character boundary when
/// it is UTF-8 there (a byte that is not is cut where it stands). For the
/// harness's own words served as files: a title, a name, a model.
pub(crate) fn cap_text(mut text: Vec<u8>, max: usize) -> Vec<u8> {
    if text.len() > max {
        let is_start = |i: usize| i == 0 || (text[i] & 0xC0) != 0x80;
        let cut = (max.saturating_sub(3)..=max).rev().find(|&i| is_start(i)).unwrap_or(max);
        text.truncate(cut);
    }
    text
}

/// `text` as one line, for a harness's words served as a file that is one
/// line: control characters (a newline among them) become spaces, and the
/// ends are trimmed.
pub(crate) fn one_line(text: &[u8]) -> Vec<u8> {
    let t: Vec<u8> = text.iter().map(|&b| if b < 0x20 || b == 0x7f { b' ' } else { b }).collect();
    t.trim_ascii().to_vec()
}

/// Of `(name, key)` candidates, the name with the greatest key — the
/// caller's measure of "newest", usually the mtime it statted. Ties go
/// to the greater name: every harness names its transcripts with a
/// timestamp first, so that is the later one, and the answer does not
/// depend on the order a directory listed them in.
pub(crate) fn pick_newest<'a>(candidates: impl IntoIterator<Item = (&'a [u8], u64)>) -> Option<&'a [u8]> {
    candidates.into_iter().max_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0))).map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_of_plain_names_is_safe_and_nothing_else_is() {
        assert!(safe_rel(b"sessions/2026/11/28/rollout-x.jsonl"));
        for bad in [&b""[..], b"/abs", b"a//b", b"a/./b", b"a/../b", b"..", b"a/", b"a\0b"] {
            assert!(!safe_rel(bad), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(!safe_rel(&vec![b'a'; PATH_BYTES_MAX + 1]));
    }

    #[test]
    fn a_readlink_target_is_reduced_to_a_path_below_the_root() {
        let root = b"/home/u/.codex/";
        assert_eq!(rel_under(b"/home/u/.codex/sessions/a.jsonl", root), Some(&b"sessions/a.jsonl"[..]));
        assert_eq!(rel_under(b"/home/u/.codexfoo/sessions/a.jsonl", root), None);
        assert_eq!(rel_under(b"/home/u/.codex", root), None);
        assert_eq!(rel_under(b"/home/u/.codex/sessions/../../.ssh/id", root), None);
        assert_eq!(rel_under(b"socket:[1234]", root), None);
        assert_eq!(rel_under(b"/home/u/.codex/a.jsonl", b"relative/root"), None);
        assert_eq!(rel_under(b"/home/u/.codex/a.jsonl", b""), None);
        assert_eq!(rel_under(b"/srv/a.jsonl", b"/"), Some(&b"srv/a.jsonl"[..]));
    }

    #[test]
    fn session_ids_are_plain_names() {
        assert!(is_session_id(b"1f9a74f7-0c1d-4e0a-9d55-2b3c4d5e6f70"));
        assert!(is_session_id(b"agent_a1-B2"));
        for bad in [&b""[..], b"..", b"../x", b"a/b", b"a.b", b"a b", b"\xc3\xa9", b"a\0"] {
            assert!(!is_session_id(bad));
        }
        assert!(!is_session_id(&[b'a'; SESSION_ID_BYTES_MAX + 1]));
    }

    #[test]
    fn uuids_are_recognised_by_shape() {
        assert!(is_uuid(b"01a22198-ee9c-7596-a53d-e97bb5581911"));
        assert!(is_uuid(b"01A22198-EE9C-7596-A53D-E97BB5581911"));
        assert!(!is_uuid(b"01a22198-ee9c-7596-a53d-e97bb558191"));
        assert!(!is_uuid(b"01a22198_ee9c-7596-a53d-e97bb5581911"));
        assert!(!is_uuid(b"01a22198-ee9c-7596-a53d-e97bb558191g"));
    }

    #[test]
    fn text_is_capped_at_a_character_boundary() {
        assert_eq!(cap_text(b"abcdef".to_vec(), 4), b"abcd");
        assert_eq!(cap_text(b"ab".to_vec(), 4), b"ab");
        assert_eq!(cap_text("a中".as_bytes().to_vec(), 3), b"a");
        assert_eq!(cap_text("a中".as_bytes().to_vec(), 4), "a中".as_bytes());
        assert_eq!(cap_text(b"\x80\x80\x80\x80\x80\x80".to_vec(), 5), b"\x80\x80\x80\x80\x80");
        assert_eq!(cap_text(b"abc".to_vec(), 0), b"");
    }

    #[test]
    fn newest_is_the_greatest_key_and_ties_go_to_the_later_name() {
        let c = [(&b"a"[..], 5), (b"c", 7), (b"b", 7)];
        assert_eq!(pick_newest(c), Some(&b"c"[..]));
        assert_eq!(pick_newest([(&b"b"[..], 7), (b"c", 7)]), Some(&b"c"[..]));
        assert_eq!(pick_newest(std::iter::empty()), None);
    }
}
