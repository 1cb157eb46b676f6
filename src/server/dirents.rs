//! getdents64, which io_uring has no operation for, through rustix's
//! `RawDir`: run inline, so every caller bounds it. A listing is read one
//! getdents64 buffer (`DIRENTS_BUF_BYTES`) per `Dirents::next_batch`, so a
//! large directory can be listed a slice per turn of the loop instead of all
//! at once; `read` takes every batch in one go. A directory with more
//! entries than the bound is an error (`DirTooLarge`), never a shorter list.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{FileType, RawDir};

use crate::errors::Error;
use crate::facts::Name;

/// The bytes of one getdents64 call's buffer: about a thousand entries of
/// typical names per call, and a bound on one slice of inline work.
const DIRENTS_BUF_BYTES: usize = 32 * 1024;

/// A directory being listed: its fd, whose file position is where the next
/// batch begins, and the buffer each batch is read into.
pub(crate) struct Dirents<F: AsFd> {
    fd: F,
    buf: Box<[MaybeUninit<u8>]>,
    /// Entries handed out so far, counted against the bound.
    taken: usize,
    /// The end was reached, or an error ended the listing.
    done: bool,
}

impl<F: AsFd> Dirents<F> {
    pub(crate) fn new(fd: F) -> Self {
        Dirents { fd, buf: Box::new_uninit_slice(DIRENTS_BUF_BYTES), taken: 0, done: false }
    }

    /// The directory being listed.
    pub(crate) fn fd(&self) -> &F {
        &self.fd
    }

    /// Give back the directory's fd.
    pub(crate) fn into_fd(self) -> F {
        self.fd
    }

    /// The entries of the next getdents64 buffer but `.` and `..` (perhaps
    /// none), or `None` at the end. `max_entries` bounds the whole listing:
    /// an entry past it, counting every batch before this one, is
    /// `DirTooLarge`. After an error or the end, always `None`.
    pub(crate) fn next_batch(&mut self, max_entries: usize) -> Result<Option<Vec<Name>>, Error> {
        if self.done {
            return Ok(None);
        }
        let batch = self.read_buffer(max_entries);
        self.done = !matches!(batch, Ok(Some(_)));
        batch
    }

    /// One getdents64 call's entries. The buffer is consumed whole, so the
    /// fd's position is exactly past them when the next batch begins.
    fn read_buffer(&mut self, max_entries: usize) -> Result<Option<Vec<Name>>, Error> {
        let mut dir = RawDir::new(self.fd.as_fd(), &mut self.buf);
        let mut names = Vec::new();
        loop {
            // The first `next` reads the buffer; the loop ends before one
            // would read another.
            let entry = match dir.next() {
                None => return Ok(None),
                Some(Err(e)) => return Err(Error::from_errno(e.raw_os_error())),
                Some(Ok(entry)) => entry,
            };
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                if self.taken == max_entries {
                    return Err(Error::DirTooLarge);
                }
                self.taken += 1;
                names.push(Name { name: name.to_vec(), ino: entry.ino(), d_type: d_type(entry.file_type()) });
            }
            if dir.is_buffer_empty() {
                return Ok(Some(names));
            }
        }
    }
}

/// Every entry of the open directory `fd` but `.` and `..`, at most `max`.
pub(crate) fn read(fd: &OwnedFd, max: usize) -> Result<Vec<Name>, Error> {
    let mut dir = Dirents::new(fd);
    let mut out = Vec::new();
    while let Some(batch) = dir.next_batch(max)? {
        out.extend(batch);
    }
    Ok(out)
}

/// The `DT_*` byte the rest of the daemon (and `Name`) speaks.
fn d_type(t: FileType) -> u8 {
    match t {
        FileType::RegularFile => libc::DT_REG,
        FileType::Directory => libc::DT_DIR,
        FileType::Symlink => libc::DT_LNK,
        FileType::Fifo => libc::DT_FIFO,
        FileType::Socket => libc::DT_SOCK,
        FileType::CharacterDevice => libc::DT_CHR,
        FileType::BlockDevice => libc::DT_BLK,
        FileType::Unknown => libc::DT_UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A scratch directory, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            static SEQ: AtomicUsize = AtomicUsize::new(0);
            let name = format!("9a-dirents-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
            let dir = std::env::temp_dir().join(name);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }

        /// A directory of `n` empty files named `file-<i>`.
        fn with_files(n: usize) -> Scratch {
            let s = Scratch::new();
            for i in 0..n {
                std::fs::write(s.0.join(format!("file-{i}")), b"").unwrap();
            }
            s
        }

        fn open(&self) -> OwnedFd {
            open(&self.0)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn open(dir: &Path) -> OwnedFd {
        std::fs::File::open(dir).unwrap().into()
    }

    #[test]
    fn dot_and_dot_dot_are_skipped_and_the_rest_kept_with_inode_and_type() {
        let s = Scratch::new();
        std::fs::write(s.0.join("file"), b"x").unwrap();
        std::fs::create_dir(s.0.join("dir")).unwrap();
        std::os::unix::fs::symlink("file", s.0.join("link")).unwrap();
        let mut got = read(&s.open(), 10).unwrap();
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let want: Vec<Name> = [("dir", libc::DT_DIR), ("file", libc::DT_REG), ("link", libc::DT_LNK)]
            .into_iter()
            .map(|(n, d_type)| {
                let ino = std::fs::symlink_metadata(s.0.join(n)).unwrap().ino();
                Name { name: n.as_bytes().to_vec(), ino, d_type }
            })
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn one_entry_past_the_bound_is_an_error_not_a_shorter_list() {
        let s = Scratch::with_files(3);
        assert_eq!(read(&s.open(), 2), Err(Error::DirTooLarge));
        assert_eq!(read(&s.open(), 3).map(|n| n.len()), Ok(3));
    }

    #[test]
    fn five_thousand_names_come_in_several_batches_each_exactly_once() {
        let n = 5_000;
        let s = Scratch::with_files(n);
        let mut dir = Dirents::new(s.open());
        let (mut batches, mut names) = (0, Vec::new());
        while let Some(batch) = dir.next_batch(n).unwrap() {
            batches += 1;
            names.extend(batch.into_iter().map(|d| String::from_utf8(d.name).unwrap()));
        }
        assert!(batches > 1, "one getdents buffer cannot hold {n} names, yet {batches} batch(es) did");
        assert_eq!(dir.next_batch(n), Ok(None), "the end stays the end");
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!((names.len(), distinct.len()), (n, n));
        assert!((0..n).all(|i| distinct.contains(&format!("file-{i}"))));
    }

    #[test]
    fn the_bound_counts_every_batch_so_a_later_batch_past_it_is_the_error() {
        let n = 5_000;
        let s = Scratch::with_files(n);
        let mut dir = Dirents::new(s.open());
        let first = dir.next_batch(n - 1).unwrap().expect("a first batch").len();
        assert!(first < n - 1);
        let rest = std::iter::from_fn(|| dir.next_batch(n - 1).transpose()).collect::<Result<Vec<_>, _>>();
        assert_eq!(rest.map(|_| ()), Err(Error::DirTooLarge));
        assert_eq!(dir.next_batch(n), Ok(None), "an error ends the listing");
    }
}
