//! The check step of the 9P2000.L messages: what Linux sends with its
//! default mount, and diod's tools.
//!
//! The read side reuses everything 9P2000 has: Tlopen is a Topen whose
//! intent comes from Linux open flags, Tgetattr is a Tstat answered in
//! Rgetattr's shape (`reply::stat_reply`), Treaddir reads the same
//! directory snapshot a 9P2000 read does, with each entry's index as the
//! cookie its successor starts from (a cookie stays valid for the whole
//! listing, so seekdir works). What .L adds that a read-only tree must
//! still answer: Tstatfs, Treadlink (nothing served is a link),
//! Txattrwalk (no attributes: an empty list, and ENODATA for a name), a
//! lock (a read lock granted, a write lock refused), Tfsync. Everything
//! that would change the tree is refused with the errno a read-only file
//! system gives, `Read-only file system` — except the truncate a kernel
//! sends before `echo NAME > zmx` writes, which is part of that write.

use crate::errors::Error;
use crate::proto::{self, Rmsg, Statfs, Tmsg};
use crate::tree::{Loc, Part};

use super::conn::{Conn, InPlace};
use super::fids::{Fid, FidOpen, Opened};
use super::jobs::Decided;
use super::world::World;

/// statfs(2)'s f_type of a 9p mount (Linux's V9FS_MAGIC), so `stat -f`
/// names it.
const V9FS_MAGIC: u32 = 0x0102_1997;
/// The block size a statfs reports; the tree has no blocks to count.
const STATFS_BSIZE: u32 = 4096;
/// The bytes of an Rreaddir's header (`proto::RREADDIR_HEADER_BYTES`).
const RREADDIR_HEADER_BYTES: u32 = proto::RREADDIR_HEADER_BYTES as u32;
/// What a Tsetattr may ask of `zmx`: the truncate of `echo NAME > zmx`,
/// and the times a truncate stamps.
const ZMX_TRUNCATE_VALID: u32 =
    proto::SETATTR_SIZE | proto::SETATTR_ATIME | proto::SETATTR_MTIME | proto::SETATTR_CTIME;

/// Handle a message only 9P2000.L has (the codec decodes them only in an
/// .L session), but for Tlopen and Tgetattr, which are Topen and Tstat
/// with another intent and another reply (`dispatch`).
pub(crate) fn handle(w: &mut World, conn: &mut Conn, tag: u16, msg: Tmsg<'_>) -> Decided {
    let trace = w.cfg.trace;
    match msg {
        Tmsg::Readdir { fid, offset, count } => readdir(w, conn, tag, fid, offset, count),
        Tmsg::Statfs { fid } => {
            known(conn, fid)?;
            let st = Statfs { ty: V9FS_MAGIC, bsize: STATFS_BSIZE, namelen: 255, ..Statfs::default() };
            conn.reply(tag, &Rmsg::Statfs(st), trace);
            Ok(None)
        }
        // Nothing served is a symlink: readlink(2) of a non-link is EINVAL.
        Tmsg::Readlink { fid } => known(conn, fid).and(Err(Error::NotALink)),
        Tmsg::Xattrwalk { fid, newfid, name } => xattrwalk(w, conn, tag, fid, newfid, name),
        Tmsg::Lock { fid, ty, .. } => {
            known(conn, fid)?;
            let status = if ty == proto::LOCK_TYPE_WRLCK { proto::LOCK_ERROR } else { proto::LOCK_SUCCESS };
            conn.reply(tag, &Rmsg::Lock { status }, trace);
            Ok(None)
        }
        Tmsg::Getlock { fid, ty, start, length, proc_id, client_id } => {
            known(conn, fid)?;
            // A read lock would be granted: nothing conflicts. A write lock
            // never would: say a reader holds the range.
            let ty = if ty == proto::LOCK_TYPE_WRLCK { proto::LOCK_TYPE_RDLCK } else { proto::LOCK_TYPE_UNLCK };
            conn.reply(tag, &Rmsg::Getlock { ty, start, length, proc_id, client_id }, trace);
            Ok(None)
        }
        Tmsg::Fsync { fid, .. } => {
            known(conn, fid)?;
            conn.reply(tag, &Rmsg::Fsync, trace);
            Ok(None)
        }
        Tmsg::Setattr { fid, valid, size, .. } => setattr(w, conn, tag, fid, valid, size),
        Tmsg::Lcreate { fid, .. } | Tmsg::Symlink { fid, .. } | Tmsg::Rename { fid, .. } => {
            known(conn, fid).and(Err(Error::ReadOnly))
        }
        Tmsg::Mknod { dfid, .. } | Tmsg::Link { dfid, .. } | Tmsg::Mkdir { dfid, .. } => {
            known(conn, dfid).and(Err(Error::ReadOnly))
        }
        Tmsg::Renameat { olddirfid: fid, .. } | Tmsg::Unlinkat { dirfd: fid, .. } => {
            known(conn, fid).and(Err(Error::ReadOnly))
        }
        Tmsg::Xattrcreate { fid, .. } => known(conn, fid).and(Err(Error::ReadOnly)),
        _ => Err(Error::UnknownType),
    }
}

/// What an open asks for, from 9P2000's mode or Linux's open flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    Read,
    /// Write only, perhaps truncating: what `echo NAME > zmx` opens with.
    Write,
    /// Read and write: `/search/query`, written a query and read.
    ReadWrite,
    /// Anything else: read-write, exec, create, append, remove-on-close.
    Refused,
}

impl Intent {
    pub(crate) fn of_mode(mode: u8) -> Intent {
        match mode {
            proto::OREAD => Intent::Read,
            m if m & !proto::OTRUNC == proto::OWRITE => Intent::Write,
            m if m & !proto::OTRUNC == proto::ORDWR => Intent::ReadWrite,
            _ => Intent::Refused,
        }
    }

    /// A Tlopen names a file that exists, so O_CREAT creates nothing; but
    /// on a read it is an intent the read-only tree refuses. On a write it
    /// is what Linux sends for `echo NAME > zmx`: v9fs passes the open's
    /// O_CREAT through (the VFS strips it only after `->open`) and turns
    /// O_TRUNC into a Tsetattr of size 0, so a plain write may carry it.
    pub(crate) fn of_flags(flags: u32) -> Intent {
        let append = flags & proto::DOTL_APPEND != 0;
        let create = flags & proto::DOTL_CREATE != 0;
        match flags & proto::DOTL_ACCMODE {
            proto::DOTL_RDONLY if !append && !create && flags & proto::DOTL_TRUNC == 0 => Intent::Read,
            proto::DOTL_WRONLY if !append => Intent::Write,
            proto::DOTL_RDWR if !append => Intent::ReadWrite,
            _ => Intent::Refused,
        }
    }
}

fn known(conn: &Conn, fid: u32) -> Result<&Fid, Error> {
    conn.fids.get(&fid).ok_or(Error::UnknownFid)
}

/// Treaddir: entries of the snapshot made at the open, from the one whose
/// index the offset names, each carrying the cookie of the next.
fn readdir(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, offset: u64, count: u32) -> Decided {
    let entries = match known(conn, fid)?.opened() {
        Some(Opened::Dir(entries)) => entries.clone(),
        Some(_) => return Err(Error::NotDir),
        None => return Err(Error::FidNotOpen),
    };
    let count = count.min(conn.msize - RREADDIR_HEADER_BYTES) as usize;
    let start = conn.begin_in_place(tag, InPlace::Readdir);
    let data_start = conn.outq.len();
    let first = usize::try_from(offset).unwrap_or(usize::MAX).min(entries.len());
    for (i, e) in entries.iter().enumerate().skip(first) {
        if conn.outq.len() - data_start + proto::dirent_size(&e.name) > count {
            break;
        }
        proto::encode_dirent(&mut conn.outq, e.qid, i as u64 + 1, e.d_type, &e.name);
    }
    conn.reply_in_place(tag, start, InPlace::Readdir, w.cfg.trace);
    Ok(None)
}

/// Txattrwalk: the tree has no extended attributes. Listing them (an empty
/// name) answers an empty list on a new fid that reads as nothing; asking
/// for one answers ENODATA, which getxattr(2) reports as "no such
/// attribute" — what `ls -l` and `getfattr` take as none.
fn xattrwalk(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, newfid: u32, name: &[u8]) -> Decided {
    let node = known(conn, fid)?.node;
    if !name.is_empty() {
        return Err(Error::NoAttribute);
    }
    if newfid != fid && conn.fids.contains_key(&newfid) {
        return Err(Error::FidInUse);
    }
    if newfid != fid {
        w.fid_room(conn)?;
    }
    w.tree.acquire(node);
    let mut xattrs = Fid::new(node, false);
    xattrs.open = Some(Box::new(FidOpen::new(Opened::Xattrs)));
    if let Some(old) = conn.fids.bind(&mut w.fids_total, newfid, xattrs) {
        w.tree.release(old.node);
        if let Some(open) = old.open {
            w.release_opened(open.what);
        }
    }
    conn.reply(tag, &Rmsg::Xattrwalk { size: 0 }, w.cfg.trace);
    Ok(None)
}

/// Tsetattr: refused, but for the truncate to size 0 of an agent's `zmx`
/// under `--allow-move`, which the kernel sends before the write of
/// `echo NAME > zmx` (the write is the move).
fn setattr(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, valid: u32, size: u64) -> Decided {
    let node = known(conn, fid)?.node;
    let zmx =
        matches!(w.tree.loc(node, &w.agents), Some(Loc::Agent { part: Part::Field(crate::active::Field::Zmx), .. }));
    let truncate = valid & proto::SETATTR_SIZE != 0 && valid & !ZMX_TRUNCATE_VALID == 0 && size == 0;
    if !(w.cfg.allow_move && zmx && truncate) {
        return Err(Error::ReadOnly);
    }
    conn.reply(tag, &Rmsg::Setattr, w.cfg.trace);
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_read_a_plain_write_or_both_is_an_intent_to_serve() {
        use proto::*;
        assert_eq!(Intent::of_flags(DOTL_RDONLY | DOTL_DIRECTORY | DOTL_LARGEFILE | DOTL_CLOEXEC), Intent::Read);
        assert_eq!(Intent::of_flags(DOTL_WRONLY | DOTL_TRUNC), Intent::Write);
        // What Linux's v9fs sends for `echo NAME > zmx` (0100101).
        assert_eq!(Intent::of_flags(DOTL_WRONLY | DOTL_CREATE | DOTL_LARGEFILE), Intent::Write);
        // `exec 3<>/mnt/search/query` (O_RDWR|O_CREAT): the one file it
        // opens is /search/query.
        assert_eq!(Intent::of_flags(DOTL_RDWR | DOTL_CREATE), Intent::ReadWrite);
        assert_eq!(Intent::of_flags(DOTL_RDWR | DOTL_APPEND), Intent::Refused);
        for refused in [
            DOTL_NOACCESS,
            DOTL_RDONLY | DOTL_CREATE,
            DOTL_WRONLY | DOTL_APPEND,
            DOTL_WRONLY | DOTL_CREATE | DOTL_APPEND,
            DOTL_RDONLY | DOTL_TRUNC,
        ] {
            assert_eq!(Intent::of_flags(refused), Intent::Refused, "{refused:o}");
        }
        assert_eq!(Intent::of_mode(OREAD), Intent::Read);
        assert_eq!(Intent::of_mode(OWRITE | OTRUNC), Intent::Write);
        assert_eq!(Intent::of_mode(ORDWR), Intent::ReadWrite);
        for refused in [OEXEC, OREAD | ORCLOSE, OREAD | OTRUNC] {
            assert_eq!(Intent::of_mode(refused), Intent::Refused, "{refused:#x}");
        }
    }
}
