//! `meta`: what a `statx` says about a file on disk, as the rest of the
//! daemon uses it — identity (dev, ino, birth time), kind, size, times,
//! owner and link count — and the qid a file's identity makes.
//!
//! A leaf: it knows the protocol's `Qid` and nothing of the tree, so the
//! mirror, the derivations over facts and the chat pool can all share it.
//!
//! Qid paths are identities, not bookkeeping (intro(5)). The space is split
//! by bit 63: a file on disk gets a hash of its (dev, ino) with the bit
//! clear — the device folded in because the roots need not share a
//! filesystem — and everything the daemon makes up (the skeleton, the facts,
//! the derived files) gets a path with it set, so the two never collide.

use crate::proto::{Qid, QTDIR, QTFILE};

/// Bit 63 of a qid path marks a node the daemon makes up itself; no hash of
/// a real (dev, ino), which always has it clear, can equal one.
pub(crate) const QID_PATH_SYNTHETIC: u64 = 1 << 63;

/// The statx fields every probe asks for: the basic ones and the birth time
/// (an inode reused for a new file is told apart by it).
pub(crate) const STATX_MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME;

/// How long after a file's last change what is read of it must be taken
/// for its times to say when it changes again: several ticks of the
/// coarsest clock the kernel stamps times with (HZ=100: 10 ms).
pub(crate) const SETTLED_NS: i128 = 50_000_000;

/// Now, in ns since the epoch, as file times count.
pub(crate) fn wall_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}

/// What a statx said about a file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Meta {
    pub dev: u64,
    pub ino: u64,
    pub mode: u16,
    pub nlink: u32,
    pub size: u64,
    /// 512-byte blocks the file takes on disk.
    pub blocks: u64,
    pub mtime: i64,
    pub uid: u32,
    pub gid: u32,
    /// Birth time (seconds), 0 where the filesystem keeps none.
    pub btime: i64,
    /// The other times, and every time's nanoseconds (9P2000.L's Rgetattr
    /// carries them; 9P2000's stat has seconds only).
    pub atime: i64,
    pub ctime: i64,
    pub atime_nsec: u32,
    pub mtime_nsec: u32,
    pub ctime_nsec: u32,
    pub btime_nsec: u32,
}

impl Meta {
    pub(crate) fn from_statx(sx: &libc::statx) -> Meta {
        Meta {
            dev: libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
            ino: sx.stx_ino,
            mode: sx.stx_mode,
            nlink: sx.stx_nlink,
            size: sx.stx_size,
            blocks: sx.stx_blocks,
            mtime: sx.stx_mtime.tv_sec,
            uid: sx.stx_uid,
            gid: sx.stx_gid,
            btime: if sx.stx_mask & libc::STATX_BTIME != 0 { sx.stx_btime.tv_sec } else { 0 },
            atime: sx.stx_atime.tv_sec,
            ctime: sx.stx_ctime.tv_sec,
            atime_nsec: sx.stx_atime.tv_nsec,
            mtime_nsec: sx.stx_mtime.tv_nsec,
            ctime_nsec: sx.stx_ctime.tv_nsec,
            btime_nsec: if sx.stx_mask & libc::STATX_BTIME != 0 { sx.stx_btime.tv_nsec } else { 0 },
        }
    }

    /// The file's type as a directory entry spells it (`DT_*`).
    pub(crate) fn d_type(&self) -> u8 {
        match self.kind() {
            libc::S_IFDIR => libc::DT_DIR,
            libc::S_IFREG => libc::DT_REG,
            libc::S_IFLNK => libc::DT_LNK,
            libc::S_IFIFO => libc::DT_FIFO,
            libc::S_IFSOCK => libc::DT_SOCK,
            libc::S_IFCHR => libc::DT_CHR,
            libc::S_IFBLK => libc::DT_BLK,
            _ => libc::DT_UNKNOWN,
        }
    }

    fn kind(&self) -> u32 {
        self.mode as u32 & libc::S_IFMT
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }

    /// The mtime and the ctime, in ns since the epoch.
    pub(crate) fn mtime_ns(&self) -> i128 {
        i128::from(self.mtime) * 1_000_000_000 + i128::from(self.mtime_nsec)
    }

    pub(crate) fn ctime_ns(&self) -> i128 {
        i128::from(self.ctime) * 1_000_000_000 + i128::from(self.ctime_nsec)
    }

    /// Whether what was read of the file (or directory) at `taken_ns`
    /// (wall clock) is known to be out of date the moment it changes: it
    /// had last changed `SETTLED_NS` before, so any change after stamps a
    /// later mtime and ctime, coarse clock or not. (The ctime no call can
    /// set back: a file touched to an old mtime still moves its ctime.)
    pub(crate) fn settled_by(&self, taken_ns: i128) -> bool {
        self.mtime_ns().max(self.ctime_ns()) + SETTLED_NS <= taken_ns
    }

    pub(crate) fn is_symlink(&self) -> bool {
        self.kind() == libc::S_IFLNK
    }

    pub(crate) fn is_regular(&self) -> bool {
        self.kind() == libc::S_IFREG
    }

    /// A regular file with another name somewhere: it may be any file of
    /// the user's linked in under a root (`~/.ssh/id_ed25519` as
    /// `notes.md`), so unless hard links are allowed it is not served.
    pub(crate) fn is_hard_linked(&self) -> bool {
        self.is_regular() && self.nlink > 1
    }

    /// u9fs's identity, with the device folded in: a hash of (dev, ino),
    /// bit 63 clear; its version `mtime ^ (size << 8)`, the shift making an
    /// append within one second still move it.
    pub(crate) fn qid(&self) -> Qid {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.dev.to_le_bytes());
        key[8..].copy_from_slice(&self.ino.to_le_bytes());
        let path = wyhash::wyhash(&key, 0x9a9e_9a9e) & !QID_PATH_SYNTHETIC;
        let version = (self.mtime as u64 ^ (self.size << 8)) as u32;
        Qid { ty: if self.is_dir() { QTDIR } else { QTFILE }, version, path }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ino: u64) -> Meta {
        Meta { dev: 1, ino, mode: libc::S_IFREG as u16, nlink: 1, size: 10, mtime: 100, ..Meta::default() }
    }

    #[test]
    fn file_qid_paths_never_have_the_synthetic_bit() {
        for ino in [0u64, 1, u64::MAX, 1 << 63] {
            let m = Meta { dev: u64::MAX, ..file(ino) };
            assert_eq!(m.qid().path & QID_PATH_SYNTHETIC, 0);
        }
    }

    #[test]
    fn qid_version_moves_on_an_append_within_the_same_second() {
        let a = file(2);
        let b = Meta { size: 11, ..a };
        assert_ne!(a.qid().version, b.qid().version);
        assert_eq!(a.qid().path, b.qid().path);
    }

    #[test]
    fn only_a_regular_file_with_two_names_is_hard_linked() {
        assert!(!file(1).is_hard_linked());
        assert!(Meta { nlink: 2, ..file(1) }.is_hard_linked());
        let dir = Meta { mode: libc::S_IFDIR as u16, nlink: 7, ..file(1) };
        assert!(!dir.is_hard_linked(), "a directory's link count is its subdirectories");
    }
}
