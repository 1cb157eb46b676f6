//! A newc ("070701") cpio writer: the format the kernel unpacks an
//! initramfs from (Documentation/driver-api/early-userspace/buffer-format.rst).
//! Uncompressed, so nothing but this file is needed to make one.
//!
//! Each entry is a 110-byte header of thirteen 8-digit hex fields, the
//! NUL-terminated name, padding to 4 bytes, the data, padding to 4 bytes;
//! the archive ends with an entry named `TRAILER!!!`. Directories come
//! before what they hold (the kernel creates entries in archive order) and
//! keep their mtime (it sets directories' times after the last entry).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The kernel's character device type bits (`S_IFCHR`).
const S_IFCHR: u32 = 0o020_000;

pub(crate) struct Writer<W: Write> {
    out: W,
    /// Bytes written so far, for the padding.
    at: usize,
    /// The next inode number: distinct per entry, so no entry is taken for
    /// a hard link of another.
    ino: u32,
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(out: W) -> Writer<W> {
        Writer { out, at: 0, ino: 1 }
    }

    /// Every entry under `root` (not `root` itself), named relative to
    /// it, in sorted order, directories before their contents; files,
    /// directories and symlinks keep their mode and mtime.
    pub(crate) fn tree(&mut self, root: &Path) -> io::Result<()> {
        self.tree_below(root, root)
    }

    fn tree_below(&mut self, root: &Path, dir: &Path) -> io::Result<()> {
        let mut names: Vec<_> = fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
        names.sort();
        for path in names {
            let meta = fs::symlink_metadata(&path)?;
            let name = path.strip_prefix(root).unwrap().to_str().expect("UTF-8 names");
            let mtime = meta.mtime() as u32;
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path)?;
                self.entry(name, meta.mode(), mtime, (0, 0), target.to_str().unwrap().as_bytes())?;
            } else if meta.is_dir() {
                self.entry(name, meta.mode(), mtime, (0, 0), b"")?;
                self.tree_below(root, &path)?;
            } else {
                self.entry(name, meta.mode(), mtime, (0, 0), &fs::read(&path)?)?;
            }
        }
        Ok(())
    }

    /// A character device node (needs no privilege: it is only a header).
    pub(crate) fn char_device(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        self.entry(name, S_IFCHR | perm, 0, (major, minor), b"")
    }

    /// The trailer, then the writer back.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, 0, (0, 0), b"")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn entry(&mut self, name: &str, mode: u32, mtime: u32, rdev: (u32, u32), data: &[u8]) -> io::Result<()> {
        let nlink = if mode & 0o170_000 == 0o040_000 { 2 } else { 1 };
        let ino = self.ino;
        self.ino += 1;
        let fields = [ino, mode, 0, 0, nlink, mtime, data.len() as u32, 0, 0, rdev.0, rdev.1, name.len() as u32 + 1, 0];
        let mut header = String::from("070701");
        for f in fields {
            header.push_str(&format!("{f:08X}"));
        }
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(b"\0")?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.at += b.len();
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - self.at % 4) % 4;
        self.put(&[0u8; 3][..n])
    }
}
