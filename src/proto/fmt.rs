//! One-line renderings of messages for `-D`, in the style of lib9p's
//! chatty9p (`Twalk tag 1 fid 0 newfid 1 nwname 2 0:claude 1:projects`).
//!
//! The field names and their order follow plan9port's `fcallfmt`, so a
//! trace reads like any other 9P server's. Two things differ on purpose:
//! strings are client bytes, so they are shown lossily as UTF-8 with
//! control characters, quotes and backslashes escaped (a hostile name
//! cannot forge a second trace line or smear the terminal); and data is
//! never dumped, only counted, because file bytes in a log are a leak.
//! The 9P2000.u fields are shown only when they hold something other than
//! their 9P2000 default, since a trace does not know the dialect. The
//! 9P2000.L messages follow Linux's and diod's traces (`Tgetattr tag 1 fid
//! 0 request_mask 0x7ff`, `Rlerror tag 1 ecode 2`): masks in hex, modes and
//! open flags in octal; an Rreaddir, like an Rread, is counted, not shown.

use std::fmt::{self, Display, Formatter};

use super::{Getattr, Qid, Rmsg, Stat, Statfs, Tmsg, NOFID, NONUNAME, QTAPPEND, QTAUTH, QTDIR, QTEXCL};

/// A request rendered as one trace line; see `trace_t`.
pub struct TraceT<'m> {
    tag: u16,
    msg: &'m Tmsg<'m>,
}

/// A reply rendered as one trace line; see `trace_r`.
pub struct TraceR<'m> {
    tag: u16,
    msg: &'m Rmsg<'m>,
}

/// `Tversion tag 65535 msize 8192 version '9P2000'`, without a newline.
pub fn trace_t<'m>(tag: u16, msg: &'m Tmsg<'_>) -> TraceT<'m> {
    TraceT { tag, msg }
}

/// `Rerror tag 3 ename 'file does not exist'`, without a newline.
pub fn trace_r<'m>(tag: u16, msg: &'m Rmsg<'_>) -> TraceR<'m> {
    TraceR { tag, msg }
}

impl Display for TraceT<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let tag = self.tag;
        match *self.msg {
            Tmsg::Version { msize, version } => {
                write!(f, "Tversion tag {tag} msize {msize} version {}", Quoted(version))
            }
            Tmsg::Auth { afid, uname, aname, n_uname } => {
                write!(f, "Tauth tag {tag} afid {} uname {} aname {}", Fid(afid), Quoted(uname), Quoted(aname))?;
                write_n_uname(f, n_uname)
            }
            Tmsg::Attach { fid, afid, uname, aname, n_uname } => {
                write!(f, "Tattach tag {tag} fid {} afid {}", Fid(fid), Fid(afid))?;
                write!(f, " uname {} aname {}", Quoted(uname), Quoted(aname))?;
                write_n_uname(f, n_uname)
            }
            Tmsg::Flush { oldtag } => write!(f, "Tflush tag {tag} oldtag {oldtag}"),
            Tmsg::Walk { fid, newfid, names } => {
                write!(f, "Twalk tag {tag} fid {} newfid {} nwname {}", Fid(fid), Fid(newfid), names.len())?;
                for (i, name) in names.as_slice().iter().enumerate() {
                    write!(f, " {i}:")?;
                    write_escaped(f, name, true)?;
                }
                Ok(())
            }
            Tmsg::Open { fid, mode } => write!(f, "Topen tag {tag} fid {} mode {mode}", Fid(fid)),
            Tmsg::Create { fid, name, perm, mode, extension } => {
                write!(f, "Tcreate tag {tag} fid {} name {} perm {}", Fid(fid), Quoted(name), Octal(perm))?;
                write!(f, " mode {mode}")?;
                if !extension.is_empty() {
                    write!(f, " extension {}", Quoted(extension))?;
                }
                Ok(())
            }
            Tmsg::Read { fid, offset, count } => {
                write!(f, "Tread tag {tag} fid {} offset {offset} count {count}", Fid(fid))
            }
            Tmsg::Write { fid, offset, data } => {
                write!(f, "Twrite tag {tag} fid {} offset {offset} count {}", Fid(fid), data.len())
            }
            Tmsg::Clunk { fid } => write!(f, "Tclunk tag {tag} fid {}", Fid(fid)),
            Tmsg::Remove { fid } => write!(f, "Tremove tag {tag} fid {}", Fid(fid)),
            Tmsg::Stat { fid } => write!(f, "Tstat tag {tag} fid {}", Fid(fid)),
            Tmsg::Wstat { fid, ref stat } => write!(f, "Twstat tag {tag} fid {} {}", Fid(fid), StatLine(stat)),
            ref l @ (Tmsg::Statfs { .. }
            | Tmsg::Lopen { .. }
            | Tmsg::Lcreate { .. }
            | Tmsg::Symlink { .. }
            | Tmsg::Mknod { .. }
            | Tmsg::Rename { .. }
            | Tmsg::Readlink { .. }
            | Tmsg::Getattr { .. }
            | Tmsg::Setattr { .. }
            | Tmsg::Xattrwalk { .. }
            | Tmsg::Xattrcreate { .. }
            | Tmsg::Readdir { .. }
            | Tmsg::Fsync { .. }
            | Tmsg::Lock { .. }
            | Tmsg::Getlock { .. }
            | Tmsg::Link { .. }
            | Tmsg::Mkdir { .. }
            | Tmsg::Renameat { .. }
            | Tmsg::Unlinkat { .. }) => write!(f, "{}", TraceTl { tag, msg: l }),
        }
    }
}

/// A 9P2000.L request's trace line, apart so that each match stays short;
/// `TraceT` hands it exactly the .L requests.
struct TraceTl<'m> {
    tag: u16,
    msg: &'m Tmsg<'m>,
}

impl Display for TraceTl<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let tag = self.tag;
        match *self.msg {
            Tmsg::Statfs { fid } => write!(f, "Tstatfs tag {tag} fid {}", Fid(fid)),
            Tmsg::Lopen { fid, flags } => write!(f, "Tlopen tag {tag} fid {} flags {}", Fid(fid), Octal(flags)),
            Tmsg::Lcreate { fid, name, flags, mode, gid } => {
                write!(f, "Tlcreate tag {tag} fid {} name {} flags {}", Fid(fid), Quoted(name), Octal(flags))?;
                write!(f, " mode {} gid {gid}", Octal(mode))
            }
            Tmsg::Symlink { fid, name, symtgt, gid } => {
                write!(f, "Tsymlink tag {tag} fid {} name {}", Fid(fid), Quoted(name))?;
                write!(f, " symtgt {} gid {gid}", Quoted(symtgt))
            }
            Tmsg::Mknod { dfid, name, mode, major, minor, gid } => {
                write!(f, "Tmknod tag {tag} dfid {} name {} mode {}", Fid(dfid), Quoted(name), Octal(mode))?;
                write!(f, " major {major} minor {minor} gid {gid}")
            }
            Tmsg::Rename { fid, dfid, name } => {
                write!(f, "Trename tag {tag} fid {} dfid {} name {}", Fid(fid), Fid(dfid), Quoted(name))
            }
            Tmsg::Readlink { fid } => write!(f, "Treadlink tag {tag} fid {}", Fid(fid)),
            Tmsg::Getattr { fid, mask } => write!(f, "Tgetattr tag {tag} fid {} request_mask {mask:#x}", Fid(fid)),
            Tmsg::Setattr { fid, valid, mode, uid, gid, size, atime_sec, atime_nsec, mtime_sec, mtime_nsec } => {
                write!(f, "Tsetattr tag {tag} fid {} valid {valid:#x} mode {}", Fid(fid), Octal(mode))?;
                write!(f, " uid {uid} gid {gid} size {size} atime {atime_sec}.{atime_nsec:09}")?;
                write!(f, " mtime {mtime_sec}.{mtime_nsec:09}")
            }
            Tmsg::Xattrwalk { fid, newfid, name } => {
                write!(f, "Txattrwalk tag {tag} fid {} newfid {} name {}", Fid(fid), Fid(newfid), Quoted(name))
            }
            Tmsg::Xattrcreate { fid, name, attr_size, flags } => {
                write!(f, "Txattrcreate tag {tag} fid {} name {}", Fid(fid), Quoted(name))?;
                write!(f, " attr_size {attr_size} flags {flags:#x}")
            }
            Tmsg::Readdir { fid, offset, count } => {
                write!(f, "Treaddir tag {tag} fid {} offset {offset} count {count}", Fid(fid))
            }
            Tmsg::Fsync { fid, datasync } => {
                write!(f, "Tfsync tag {tag} fid {}", Fid(fid))?;
                datasync.map_or(Ok(()), |datasync| write!(f, " datasync {datasync}"))
            }
            Tmsg::Lock { fid, ty, flags, start, length, proc_id, client_id } => {
                write!(f, "Tlock tag {tag} fid {} type {ty} flags {flags:#x}", Fid(fid))?;
                write!(f, " start {start} length {length} proc_id {proc_id} client_id {}", Quoted(client_id))
            }
            Tmsg::Getlock { fid, ty, start, length, proc_id, client_id } => {
                write!(f, "Tgetlock tag {tag} fid {} type {ty}", Fid(fid))?;
                write!(f, " start {start} length {length} proc_id {proc_id} client_id {}", Quoted(client_id))
            }
            Tmsg::Link { dfid, fid, name } => {
                write!(f, "Tlink tag {tag} dfid {} fid {} name {}", Fid(dfid), Fid(fid), Quoted(name))
            }
            Tmsg::Mkdir { dfid, name, mode, gid } => {
                write!(f, "Tmkdir tag {tag} dfid {} name {} mode {} gid {gid}", Fid(dfid), Quoted(name), Octal(mode))
            }
            Tmsg::Renameat { olddirfid, oldname, newdirfid, newname } => {
                write!(f, "Trenameat tag {tag} olddirfid {} oldname {}", Fid(olddirfid), Quoted(oldname))?;
                write!(f, " newdirfid {} newname {}", Fid(newdirfid), Quoted(newname))
            }
            Tmsg::Unlinkat { dirfd, name, flags } => {
                write!(f, "Tunlinkat tag {tag} dirfd {} name {} flags {flags:#x}", Fid(dirfd), Quoted(name))
            }
            ref other => unreachable!("TraceT renders {other:?} itself, not TraceTl"),
        }
    }
}

impl Display for TraceR<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let tag = self.tag;
        match *self.msg {
            Rmsg::Version { msize, version } => {
                write!(f, "Rversion tag {tag} msize {msize} version {}", Quoted(version))
            }
            Rmsg::Auth { aqid } => write!(f, "Rauth tag {tag} qid {}", QidLine(&aqid)),
            Rmsg::Attach { qid } => write!(f, "Rattach tag {tag} qid {}", QidLine(&qid)),
            Rmsg::Error { ename, errno } => {
                write!(f, "Rerror tag {tag} ename {}", Quoted(ename))?;
                if errno != 0 {
                    write!(f, " errno {errno}")?;
                }
                Ok(())
            }
            Rmsg::Flush => write!(f, "Rflush tag {tag}"),
            Rmsg::Walk { qids } => {
                write!(f, "Rwalk tag {tag} nwqid {}", qids.len())?;
                for (i, qid) in qids.as_slice().iter().enumerate() {
                    write!(f, " {i}:{}", QidLine(qid))?;
                }
                Ok(())
            }
            Rmsg::Open { qid, iounit } => write!(f, "Ropen tag {tag} qid {} iounit {iounit}", QidLine(&qid)),
            Rmsg::Create { qid, iounit } => write!(f, "Rcreate tag {tag} qid {} iounit {iounit}", QidLine(&qid)),
            Rmsg::Read { data } => write!(f, "Rread tag {tag} count {}", data.len()),
            Rmsg::Write { count } => write!(f, "Rwrite tag {tag} count {count}"),
            Rmsg::Clunk => write!(f, "Rclunk tag {tag}"),
            Rmsg::Remove => write!(f, "Rremove tag {tag}"),
            Rmsg::Stat { ref stat } => write!(f, "Rstat tag {tag} {}", StatLine(stat)),
            Rmsg::Wstat => write!(f, "Rwstat tag {tag}"),
            ref l @ (Rmsg::Lerror { .. }
            | Rmsg::Statfs(_)
            | Rmsg::Lopen { .. }
            | Rmsg::Lcreate { .. }
            | Rmsg::Symlink { .. }
            | Rmsg::Mknod { .. }
            | Rmsg::Rename
            | Rmsg::Readlink { .. }
            | Rmsg::Getattr(_)
            | Rmsg::Setattr
            | Rmsg::Xattrwalk { .. }
            | Rmsg::Xattrcreate
            | Rmsg::Readdir { .. }
            | Rmsg::Fsync
            | Rmsg::Lock { .. }
            | Rmsg::Getlock { .. }
            | Rmsg::Link
            | Rmsg::Mkdir { .. }
            | Rmsg::Renameat
            | Rmsg::Unlinkat) => write!(f, "{}", TraceRl { tag, msg: l }),
        }
    }
}

/// A 9P2000.L reply's trace line, apart so that each match stays short;
/// `TraceR` hands it exactly the .L replies.
struct TraceRl<'m> {
    tag: u16,
    msg: &'m Rmsg<'m>,
}

impl Display for TraceRl<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let tag = self.tag;
        match *self.msg {
            Rmsg::Lerror { ecode } => write!(f, "Rlerror tag {tag} ecode {ecode}"),
            Rmsg::Statfs(ref s) => write!(f, "Rstatfs tag {tag} {}", StatfsLine(s)),
            Rmsg::Lopen { qid, iounit } => write!(f, "Rlopen tag {tag} qid {} iounit {iounit}", QidLine(&qid)),
            Rmsg::Lcreate { qid, iounit } => write!(f, "Rlcreate tag {tag} qid {} iounit {iounit}", QidLine(&qid)),
            Rmsg::Symlink { qid } => write!(f, "Rsymlink tag {tag} qid {}", QidLine(&qid)),
            Rmsg::Mknod { qid } => write!(f, "Rmknod tag {tag} qid {}", QidLine(&qid)),
            Rmsg::Rename => write!(f, "Rrename tag {tag}"),
            Rmsg::Readlink { target } => write!(f, "Rreadlink tag {tag} target {}", Quoted(target)),
            Rmsg::Getattr(ref a) => write!(f, "Rgetattr tag {tag} {}", GetattrLine(a)),
            Rmsg::Setattr => write!(f, "Rsetattr tag {tag}"),
            Rmsg::Xattrwalk { size } => write!(f, "Rxattrwalk tag {tag} size {size}"),
            Rmsg::Xattrcreate => write!(f, "Rxattrcreate tag {tag}"),
            Rmsg::Readdir { data } => write!(f, "Rreaddir tag {tag} count {}", data.len()),
            Rmsg::Fsync => write!(f, "Rfsync tag {tag}"),
            Rmsg::Lock { status } => write!(f, "Rlock tag {tag} status {status}"),
            Rmsg::Getlock { ty, start, length, proc_id, client_id } => {
                write!(f, "Rgetlock tag {tag} type {ty} start {start} length {length}")?;
                write!(f, " proc_id {proc_id} client_id {}", Quoted(client_id))
            }
            Rmsg::Link => write!(f, "Rlink tag {tag}"),
            Rmsg::Mkdir { qid } => write!(f, "Rmkdir tag {tag} qid {}", QidLine(&qid)),
            Rmsg::Renameat => write!(f, "Rrenameat tag {tag}"),
            Rmsg::Unlinkat => write!(f, "Runlinkat tag {tag}"),
            ref other => unreachable!("TraceR renders {other:?} itself, not TraceRl"),
        }
    }
}

fn write_n_uname(f: &mut Formatter<'_>, n_uname: u32) -> fmt::Result {
    if n_uname != NONUNAME {
        write!(f, " n_uname {n_uname}")?;
    }
    Ok(())
}

/// A fid as lib9p prints it: NOFID is `-1`.
struct Fid(u32);

impl Display for Fid {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0 == NOFID {
            f.write_str("-1")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Octal with C's `%#o` leading zero (`0555`, `020000000555`, `0`).
struct Octal(u32);

impl Display for Octal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0"),
            mode => write!(f, "0{mode:o}"),
        }
    }
}

/// A qid as `(path vers type)`: path in 16 hex digits, type as lib9p's
/// letters (`d` directory, `a` append-only, `l` exclusive, `A` auth).
struct QidLine<'q>(&'q Qid);

impl Display for QidLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let Qid { ty, version, path } = *self.0;
        write!(f, "({path:016x} {version} ")?;
        for (bit, letter) in [(QTDIR, 'd'), (QTAPPEND, 'a'), (QTEXCL, 'l'), (QTAUTH, 'A')] {
            if ty & bit != 0 {
                write!(f, "{letter}")?;
            }
        }
        f.write_str(")")
    }
}

/// A stat as lib9p's `fdirconv`: the four names, then qid, mode, times,
/// length, type and dev; the 9P2000.u tail when it is not the default.
struct StatLine<'s>(&'s Stat<'s>);

impl Display for StatLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let s = self.0;
        write!(f, "{} {} {} {}", Quoted(s.name), Quoted(s.uid), Quoted(s.gid), Quoted(s.muid))?;
        write!(f, " q {} m {}", QidLine(&s.qid), Octal(s.mode))?;
        write!(f, " at {} mt {} l {} t {} d {}", s.atime, s.mtime, s.length, s.ty, s.dev)?;
        let ids = [s.n_uid, s.n_gid, s.n_muid];
        if !s.extension.is_empty() || ids.iter().any(|&id| id != NONUNAME) {
            write!(f, " ext {} n_uid {} n_gid {} n_muid {}", Quoted(s.extension), ids[0], ids[1], ids[2])?;
        }
        Ok(())
    }
}

/// Rgetattr's fields in their wire order, as diod traces them; times as
/// seconds.nanoseconds.
struct GetattrLine<'a>(&'a Getattr);

impl Display for GetattrLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let a = self.0;
        write!(f, "valid {:#x} qid {} mode {} uid {} gid {}", a.valid, QidLine(&a.qid), Octal(a.mode), a.uid, a.gid)?;
        write!(f, " nlink {} rdev {} size {} blksize {} blocks {}", a.nlink, a.rdev, a.size, a.blksize, a.blocks)?;
        write!(f, " atime {}.{:09} mtime {}.{:09}", a.atime_sec, a.atime_nsec, a.mtime_sec, a.mtime_nsec)?;
        write!(f, " ctime {}.{:09} btime {}.{:09}", a.ctime_sec, a.ctime_nsec, a.btime_sec, a.btime_nsec)?;
        write!(f, " gen {} data_version {}", a.gen, a.data_version)
    }
}

/// Rstatfs's fields in their wire order, as Linux traces them.
struct StatfsLine<'a>(&'a Statfs);

impl Display for StatfsLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let s = self.0;
        write!(f, "type {:#x} bsize {} blocks {} bfree {} bavail {}", s.ty, s.bsize, s.blocks, s.bfree, s.bavail)?;
        write!(f, " files {} ffree {} fsid {} namelen {}", s.files, s.ffree, s.fsid, s.namelen)
    }
}

/// Client bytes in single quotes; see `write_escaped`.
struct Quoted<'b>(&'b [u8]);

impl Display for Quoted<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("'")?;
        write_escaped(f, self.0, false)?;
        f.write_str("'")
    }
}

/// Bytes as UTF-8, invalid sequences as U+FFFD; control and other
/// unprintable characters, `'` and `\` escaped as Rust's `escape_debug`
/// does; spaces too when the text stands unquoted.
fn write_escaped(f: &mut Formatter<'_>, bytes: &[u8], escape_space: bool) -> fmt::Result {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => f.write_str("\"")?,
                ' ' if escape_space => f.write_str("\\u{20}")?,
                c => write!(f, "{}", c.escape_debug())?,
            }
        }
        if !chunk.invalid().is_empty() {
            f.write_str("\u{FFFD}")?;
        }
    }
    Ok(())
}
