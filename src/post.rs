//! `post`: where a daemon posts itself, so clients find it by name.
//!
//! A posted service is a Unix socket named for the service (`agents` by
//! default) in one per-user directory: `$XDG_RUNTIME_DIR/9p`, where systemd
//! keeps per-user runtime state, or `/tmp/9p-<uid>` on a machine without
//! one. The server binds there and the client dials there, and both ask this
//! module, so they cannot disagree about the place.
//!
//! The directory is the trust boundary: whatever socket is found in it is
//! believed to be ours. In `/tmp` anyone can create `/tmp/9p-<our uid>`
//! first, as a directory of their own or as a symlink to one, so
//! `ensure_post_dir` accepts only a real directory (lstat, never followed)
//! that we own and that nobody else can write into. The check is not racy:
//! `/tmp` is sticky, so once the directory is ours nobody else can rename or
//! replace it.
//!
//! ```no_run
//! let socket = nineagents::post::post_path("agents")?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::ffi::OsStr;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The mode a post directory is created with: the owner alone may list it
/// or add a socket to it.
const POST_DIR_MODE: u32 = 0o700;
/// Mode bits that would let another user plant a socket in the directory.
const FOREIGN_WRITE_BITS: u32 = 0o022;

/// The post directory, not created: `$XDG_RUNTIME_DIR/9p` when that variable
/// is set to an absolute path, else `/tmp/9p-<uid>`.
pub fn post_dir() -> io::Result<PathBuf> {
    let xdg = std::env::var_os("XDG_RUNTIME_DIR");
    Ok(post_dir_for(xdg.as_deref(), our_uid()))
}

/// The post directory, created if missing (mode 0700) and checked to be a
/// real directory, owned by us, writable by nobody else.
pub fn ensure_post_dir() -> io::Result<PathBuf> {
    let dir = post_dir()?;
    ensure_dir(&dir, our_uid())?;
    Ok(dir)
}

/// Where the service `name` is posted: `post_dir()/name`. A name is one
/// path element, so a client's `-a` can never point outside the directory.
pub fn post_path(name: &str) -> io::Result<PathBuf> {
    join_name(&post_dir()?, name)
}

fn our_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The pure half of `post_dir`. The XDG base-directory spec says a relative
/// `XDG_RUNTIME_DIR` is invalid and to be ignored; an empty one is unset.
fn post_dir_for(xdg_runtime_dir: Option<&OsStr>, uid: u32) -> PathBuf {
    match xdg_runtime_dir.map(Path::new) {
        Some(dir) if dir.is_absolute() => dir.join("9p"),
        _ => PathBuf::from(format!("/tmp/9p-{uid}")),
    }
}

fn join_name(dir: &Path, name: &str) -> io::Result<PathBuf> {
    let one_element = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0']);
    if !one_element {
        let why = format!("bad post name {name:?}: a posted name is one path element");
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    }
    Ok(dir.join(name))
}

/// Create `dir` if missing and check it can be trusted by `uid`. Only the
/// last element is created: a missing `$XDG_RUNTIME_DIR` is an error, not
/// something to invent.
fn ensure_dir(dir: &Path, uid: u32) -> io::Result<()> {
    match DirBuilder::new().mode(POST_DIR_MODE).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            let why = format!("cannot create post directory {}: {e}", dir.display());
            return Err(io::Error::new(e.kind(), why));
        }
    }
    let meta = fs::symlink_metadata(dir)?;
    check_dir(dir, &meta, uid)
}

fn check_dir(dir: &Path, meta: &fs::Metadata, uid: u32) -> io::Result<()> {
    let refuse = |why: String| {
        let text = format!("refusing post directory {}: {why}", dir.display());
        Err(io::Error::new(io::ErrorKind::PermissionDenied, text))
    };
    if meta.file_type().is_symlink() {
        return refuse("it is a symlink".into());
    }
    if !meta.is_dir() {
        return refuse("it is not a directory".into());
    }
    if meta.uid() != uid {
        return refuse(format!("it is owned by uid {}, not by us (uid {uid})", meta.uid()));
    }
    if meta.mode() & FOREIGN_WRITE_BITS != 0 {
        return refuse(format!("others can write into it (mode {:04o})", meta.mode() & 0o7777));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh scratch directory of this test's own, so tests never share
    /// paths (or the environment) with each other.
    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nineagents-post-{}-{label}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn post_dir_is_under_the_runtime_dir_when_one_is_set() {
        let dir = post_dir_for(Some(OsStr::new("/run/user/1000")), 1000);
        assert_eq!(dir, PathBuf::from("/run/user/1000/9p"));
    }

    #[test]
    fn post_dir_falls_back_to_tmp_when_the_runtime_dir_is_unset_or_empty() {
        assert_eq!(post_dir_for(None, 1000), PathBuf::from("/tmp/9p-1000"));
        assert_eq!(post_dir_for(Some(OsStr::new("")), 42), PathBuf::from("/tmp/9p-42"));
    }

    #[test]
    fn a_relative_runtime_dir_is_ignored_as_the_xdg_spec_says() {
        assert_eq!(post_dir_for(Some(OsStr::new("run/user")), 7), PathBuf::from("/tmp/9p-7"));
    }

    #[test]
    fn a_posted_name_is_one_path_element() {
        let dir = Path::new("/run/user/1/9p");
        assert_eq!(join_name(dir, "agents").unwrap(), dir.join("agents"));
        for bad in ["", ".", "..", "a/b", "../agents", "a\0b"] {
            assert_eq!(join_name(dir, bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn ensure_creates_the_directory_private_to_its_owner() {
        let base = scratch("create");
        let dir = base.join("9p");
        ensure_dir(&dir, our_uid()).unwrap();
        let mode = fs::symlink_metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_dir(&dir, our_uid()).unwrap();
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn ensure_refuses_a_symlink_even_to_a_good_directory() {
        let base = scratch("symlink");
        fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("9p")).unwrap();
        let err = ensure_dir(&base.join("9p"), our_uid()).unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn ensure_refuses_a_file_in_the_directorys_place() {
        let base = scratch("file");
        fs::write(base.join("9p"), b"").unwrap();
        let err = ensure_dir(&base.join("9p"), our_uid()).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn ensure_refuses_a_directory_owned_by_someone_else() {
        let base = scratch("owner");
        let err = ensure_dir(&base, our_uid().wrapping_add(1)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("owned by uid"), "{err}");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn ensure_refuses_a_directory_others_can_write_into() {
        let base = scratch("writable");
        fs::set_permissions(&base, fs::Permissions::from_mode(0o777)).unwrap();
        let err = ensure_dir(&base, our_uid()).unwrap_err();
        assert!(err.to_string().contains("others can write"), "{err}");
        fs::remove_dir_all(&base).unwrap();
    }
}
