//! `proto`: 9P2000, 9P2000.u and 9P2000.L on the wire, and nothing else.
//!
//! Bytes in, messages out, and back; no I/O, no allocation sized by anything
//! but the message being decoded. A decoded message borrows its strings and
//! data from the buffer it came from (`Tmsg<'a>`, `Rmsg<'a>`), so decoding a
//! request costs no heap at all; encoding appends to a caller's `Vec<u8>`, so
//! a connection's reply queue is one buffer that replies are written into.
//!
//! The dialect is a value the codec is parameterised by (`Dialect`), not a
//! type. 9P2000.u differs from 9P2000 in four places (stat's tail, Rerror's
//! errno, Tauth/Tattach's n_uname, Tcreate's extension), which branch on it.
//! 9P2000.L keeps 9P2000's version, flush, walk, read, write, clunk and
//! remove and .u's n_uname, drops open, create, stat, wstat and Rerror, and
//! adds its own messages under type numbers of their own (below 100): in
//! each dialect the other's messages are unknown types. Its one error reply,
//! Rlerror, carries only an errno, so `Rmsg::Error` encodes as Rlerror in
//! .L and the server keeps one error path for all three dialects.
//!
//! ```
//! use nineagents::proto::{self, Dialect, Tmsg};
//! let mut out = Vec::new();
//! proto::encode_t(&mut out, 1, &Tmsg::Clunk { fid: 7 }, Dialect::P2000);
//! let (tag, msg) = proto::decode_t(&out, Dialect::P2000).unwrap();
//! assert_eq!((tag, msg), (1, Tmsg::Clunk { fid: 7 }));
//! ```

mod decode;
mod encode;
mod fmt;
#[cfg(test)]
mod tests;

pub use decode::{
    decode_dirents, decode_r, decode_stat, decode_t, frame_size, DecodeError, DecodeErrorKind, Dirents, FrameError,
};
pub use encode::{
    dirent_size, encode_dirent, encode_r, encode_stat, encode_t, rread_begin, rread_finish, rreaddir_begin,
    rreaddir_finish, stat_size, RREADDIR_HEADER_BYTES, RREAD_HEADER_BYTES,
};
pub use fmt::{trace_r, trace_t, TraceR, TraceT};

/// The 9P dialects this codec speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Plain 9P2000: errors are text only, stat has no extension.
    P2000,
    /// 9P2000.u: numeric ids and an extension string in stat, an errno
    /// beside every error text, n_uname in Tauth/Tattach, an extension in
    /// Tcreate.
    P2000u,
    /// 9P2000.L: 9P2000's core, .u's n_uname, Linux's own messages for the
    /// rest (Tlopen, Tgetattr, Treaddir, ...), and errors as a bare errno.
    L,
}

impl Dialect {
    /// The version string Rversion answers with for this dialect.
    pub fn version(self) -> &'static str {
        match self {
            Dialect::P2000 => "9P2000",
            Dialect::P2000u => "9P2000.u",
            Dialect::L => "9P2000.L",
        }
    }

    /// The dialect a client's Tversion string asks for, per version(5):
    /// `9P2000.L` and `9P2000.u` are themselves, anything else that starts
    /// `9P2000` is the best we speak of that family (plain 9P2000), anything
    /// else is unknown.
    pub fn negotiate(asked: &[u8]) -> Option<Dialect> {
        match asked {
            b"9P2000.L" => Some(Dialect::L),
            b"9P2000.u" => Some(Dialect::P2000u),
            _ if asked.starts_with(b"9P2000") => Some(Dialect::P2000),
            _ => None,
        }
    }

    /// Whether the dialect carries 9P2000.u's numeric extensions (n_uname,
    /// stat's tail, Tcreate's extension): .u does, and so does .L, as
    /// Linux's marshalling (`?` in its formats) has it.
    fn unix(self) -> bool {
        matches!(self, Dialect::P2000u | Dialect::L)
    }
}

/// The size of a message's header: size[4] type[1] tag[2].
pub const HEADER_LEN: usize = 7;
/// Bytes of an Rread/Twrite that are not data: size[4] type[1] tag[2]
/// fid[4] offset[8] count[4] (Twrite's, the larger). A read's count is
/// clamped to msize minus this, so its reply always fits the msize.
pub const IOHDRSZ: u32 = 24;
/// The most names one Twalk may carry (walk(5)), and so the most qids one
/// Rwalk returns.
pub const MAXWELEM: usize = 16;
/// The tag of a Tversion.
pub const NOTAG: u16 = 0xFFFF;
/// "No fid": Tattach's afid when there is no authentication.
pub const NOFID: u32 = 0xFFFF_FFFF;
/// 9P2000.u's "no numeric uid".
pub const NONUNAME: u32 = 0xFFFF_FFFF;

/// Qid types (the high byte of a mode).
pub const QTDIR: u8 = 0x80;
pub const QTAPPEND: u8 = 0x40;
pub const QTEXCL: u8 = 0x20;
pub const QTAUTH: u8 = 0x08;
pub const QTFILE: u8 = 0x00;

/// Mode bits of a stat.
pub const DMDIR: u32 = 0x8000_0000;
pub const DMAPPEND: u32 = 0x4000_0000;
pub const DMEXCL: u32 = 0x2000_0000;
pub const DMAUTH: u32 = 0x0800_0000;
/// 9P2000.u's special-file bits.
pub const DMSYMLINK: u32 = 0x0200_0000;
pub const DMDEVICE: u32 = 0x0080_0000;
pub const DMNAMEDPIPE: u32 = 0x0020_0000;
pub const DMSOCKET: u32 = 0x0010_0000;

/// Topen/Tcreate modes.
pub const OREAD: u8 = 0;
pub const OWRITE: u8 = 1;
pub const ORDWR: u8 = 2;
pub const OEXEC: u8 = 3;
pub const OTRUNC: u8 = 0x10;
pub const ORCLOSE: u8 = 0x40;

/// Tlopen/Tlcreate flags: Linux's open(2) flags as 9P2000.L spells them
/// (`P9_DOTL_*`, include/net/9p/9p.h), octal as there.
pub const DOTL_RDONLY: u32 = 0o0;
pub const DOTL_WRONLY: u32 = 0o1;
pub const DOTL_RDWR: u32 = 0o2;
pub const DOTL_NOACCESS: u32 = 0o3;
/// The two bits of the access mode among the flags.
pub const DOTL_ACCMODE: u32 = 0o3;
pub const DOTL_CREATE: u32 = 0o100;
pub const DOTL_EXCL: u32 = 0o200;
pub const DOTL_NOCTTY: u32 = 0o400;
pub const DOTL_TRUNC: u32 = 0o1000;
pub const DOTL_APPEND: u32 = 0o2000;
pub const DOTL_NONBLOCK: u32 = 0o4000;
pub const DOTL_DSYNC: u32 = 0o10000;
pub const DOTL_FASYNC: u32 = 0o20000;
pub const DOTL_DIRECT: u32 = 0o40000;
pub const DOTL_LARGEFILE: u32 = 0o100000;
pub const DOTL_DIRECTORY: u32 = 0o200000;
pub const DOTL_NOFOLLOW: u32 = 0o400000;
pub const DOTL_NOATIME: u32 = 0o1000000;
pub const DOTL_CLOEXEC: u32 = 0o2000000;
pub const DOTL_SYNC: u32 = 0o4000000;
/// Tunlinkat's flag for removing a directory (Linux's AT_REMOVEDIR).
pub const DOTL_AT_REMOVEDIR: u32 = 0x200;

/// Tgetattr's request mask and Rgetattr's valid mask (`P9_STATS_*` in
/// include/net/9p/9p.h, `P9_GETATTR_*` in diod's protocol.md): one bit per
/// field or group of fields of the reply.
pub const GETATTR_MODE: u64 = 0x0001;
pub const GETATTR_NLINK: u64 = 0x0002;
pub const GETATTR_UID: u64 = 0x0004;
pub const GETATTR_GID: u64 = 0x0008;
pub const GETATTR_RDEV: u64 = 0x0010;
pub const GETATTR_ATIME: u64 = 0x0020;
pub const GETATTR_MTIME: u64 = 0x0040;
pub const GETATTR_CTIME: u64 = 0x0080;
/// The qid's path, which stands for the inode number.
pub const GETATTR_INO: u64 = 0x0100;
pub const GETATTR_SIZE: u64 = 0x0200;
pub const GETATTR_BLOCKS: u64 = 0x0400;
pub const GETATTR_BTIME: u64 = 0x0800;
pub const GETATTR_GEN: u64 = 0x1000;
pub const GETATTR_DATA_VERSION: u64 = 0x2000;
/// Every field stat(2) has: MODE through BLOCKS.
pub const GETATTR_BASIC: u64 = 0x07ff;
/// Every field there is.
pub const GETATTR_ALL: u64 = 0x3fff;

const _: () = assert!(GETATTR_BASIC == (GETATTR_BLOCKS << 1) - 1, "BASIC is every bit up to BLOCKS");
const _: () = assert!(GETATTR_ALL == (GETATTR_DATA_VERSION << 1) - 1, "ALL is every bit up to DATA_VERSION");

/// Tsetattr's valid mask (`P9_SETATTR_*` in diod, `P9_ATTR_*` in Linux's
/// fs/9p/vfs_inode_dotl.c, Linux's own ATTR_* bits): which fields to set.
/// A time bit without its `_SET` bit means "now, by the server's clock".
pub const SETATTR_MODE: u32 = 0x001;
pub const SETATTR_UID: u32 = 0x002;
pub const SETATTR_GID: u32 = 0x004;
pub const SETATTR_SIZE: u32 = 0x008;
pub const SETATTR_ATIME: u32 = 0x010;
pub const SETATTR_MTIME: u32 = 0x020;
pub const SETATTR_CTIME: u32 = 0x040;
pub const SETATTR_ATIME_SET: u32 = 0x080;
pub const SETATTR_MTIME_SET: u32 = 0x100;

/// Tlock's and Tgetlock's lock types (`P9_LOCK_TYPE_*`).
pub const LOCK_TYPE_RDLCK: u8 = 0;
pub const LOCK_TYPE_WRLCK: u8 = 1;
pub const LOCK_TYPE_UNLCK: u8 = 2;
/// Tlock's flags (`P9_LOCK_FLAGS_*`): BLOCK asks for fcntl's F_SETLKW,
/// which the client emulates by asking again while the answer is BLOCKED.
pub const LOCK_FLAGS_BLOCK: u32 = 1;
pub const LOCK_FLAGS_RECLAIM: u32 = 2;
/// Rlock's status (`P9_LOCK_*`).
pub const LOCK_SUCCESS: u8 = 0;
pub const LOCK_BLOCKED: u8 = 1;
pub const LOCK_ERROR: u8 = 2;
pub const LOCK_GRACE: u8 = 3;

/// Message type numbers: 9P2000's from fcall.h, 9P2000.L's (below 100)
/// from Linux's include/net/9p/9p.h.
pub mod msg {
    pub const TLERROR: u8 = 6; // illegal: there is no Tlerror
    pub const RLERROR: u8 = 7;
    pub const TSTATFS: u8 = 8;
    pub const RSTATFS: u8 = 9;
    pub const TLOPEN: u8 = 12;
    pub const RLOPEN: u8 = 13;
    pub const TLCREATE: u8 = 14;
    pub const RLCREATE: u8 = 15;
    pub const TSYMLINK: u8 = 16;
    pub const RSYMLINK: u8 = 17;
    pub const TMKNOD: u8 = 18;
    pub const RMKNOD: u8 = 19;
    pub const TRENAME: u8 = 20;
    pub const RRENAME: u8 = 21;
    pub const TREADLINK: u8 = 22;
    pub const RREADLINK: u8 = 23;
    pub const TGETATTR: u8 = 24;
    pub const RGETATTR: u8 = 25;
    pub const TSETATTR: u8 = 26;
    pub const RSETATTR: u8 = 27;
    pub const TXATTRWALK: u8 = 30;
    pub const RXATTRWALK: u8 = 31;
    pub const TXATTRCREATE: u8 = 32;
    pub const RXATTRCREATE: u8 = 33;
    pub const TREADDIR: u8 = 40;
    pub const RREADDIR: u8 = 41;
    pub const TFSYNC: u8 = 50;
    pub const RFSYNC: u8 = 51;
    pub const TLOCK: u8 = 52;
    pub const RLOCK: u8 = 53;
    pub const TGETLOCK: u8 = 54;
    pub const RGETLOCK: u8 = 55;
    pub const TLINK: u8 = 70;
    pub const RLINK: u8 = 71;
    pub const TMKDIR: u8 = 72;
    pub const RMKDIR: u8 = 73;
    pub const TRENAMEAT: u8 = 74;
    pub const RRENAMEAT: u8 = 75;
    pub const TUNLINKAT: u8 = 76;
    pub const RUNLINKAT: u8 = 77;

    pub const TVERSION: u8 = 100;
    pub const RVERSION: u8 = 101;
    pub const TAUTH: u8 = 102;
    pub const RAUTH: u8 = 103;
    pub const TATTACH: u8 = 104;
    pub const RATTACH: u8 = 105;
    pub const TERROR: u8 = 106; // illegal: there is no Terror
    pub const RERROR: u8 = 107;
    pub const TFLUSH: u8 = 108;
    pub const RFLUSH: u8 = 109;
    pub const TWALK: u8 = 110;
    pub const RWALK: u8 = 111;
    pub const TOPEN: u8 = 112;
    pub const ROPEN: u8 = 113;
    pub const TCREATE: u8 = 114;
    pub const RCREATE: u8 = 115;
    pub const TREAD: u8 = 116;
    pub const RREAD: u8 = 117;
    pub const TWRITE: u8 = 118;
    pub const RWRITE: u8 = 119;
    pub const TCLUNK: u8 = 120;
    pub const RCLUNK: u8 = 121;
    pub const TREMOVE: u8 = 122;
    pub const RREMOVE: u8 = 123;
    pub const TSTAT: u8 = 124;
    pub const RSTAT: u8 = 125;
    pub const TWSTAT: u8 = 126;
    pub const RWSTAT: u8 = 127;
}

/// The server's identification of a file (intro(5)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qid {
    pub ty: u8,
    pub version: u32,
    pub path: u64,
}

/// A directory entry (stat(5)), borrowing its strings. In 9P2000 the last
/// four fields are neither encoded nor decoded (they decode as empty / NONUNAME).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat<'a> {
    pub ty: u16,
    pub dev: u32,
    pub qid: Qid,
    pub mode: u32,
    pub atime: u32,
    pub mtime: u32,
    pub length: u64,
    pub name: &'a [u8],
    pub uid: &'a [u8],
    pub gid: &'a [u8],
    pub muid: &'a [u8],
    /// 9P2000.u only.
    pub extension: &'a [u8],
    /// 9P2000.u only.
    pub n_uid: u32,
    /// 9P2000.u only.
    pub n_gid: u32,
    /// 9P2000.u only.
    pub n_muid: u32,
}

/// The names of one Twalk, at most `MAXWELEM`, borrowed from the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkNames<'a> {
    len: u8,
    names: [&'a [u8]; MAXWELEM],
}

impl<'a> WalkNames<'a> {
    /// `None` when there are more than `MAXWELEM` names.
    pub fn new(names: &[&'a [u8]]) -> Option<Self> {
        if names.len() > MAXWELEM {
            return None;
        }
        let mut out = WalkNames { len: names.len() as u8, names: [&[][..]; MAXWELEM] };
        out.names[..names.len()].copy_from_slice(names);
        Some(out)
    }
    pub fn as_slice(&self) -> &[&'a [u8]] {
        &self.names[..self.len as usize]
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The qids of one Rwalk, at most `MAXWELEM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkQids {
    len: u8,
    qids: [Qid; MAXWELEM],
}

impl WalkQids {
    pub fn new(qids: &[Qid]) -> Option<Self> {
        if qids.len() > MAXWELEM {
            return None;
        }
        let mut out = WalkQids { len: qids.len() as u8, qids: [Qid::default(); MAXWELEM] };
        out.qids[..qids.len()].copy_from_slice(qids);
        Some(out)
    }
    pub fn as_slice(&self) -> &[Qid] {
        &self.qids[..self.len as usize]
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Rgetattr's body: stat(2) as 9P2000.L carries it. `valid` says which
/// fields hold something (GETATTR_* bits); the others are zero. `mode` is
/// a Linux st_mode (S_IFDIR | 0555), not a 9P mode with DMDIR; the inode
/// number is the qid's path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Getattr {
    pub valid: u64,
    pub qid: Qid,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u64,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime_sec: u64,
    pub atime_nsec: u64,
    pub mtime_sec: u64,
    pub mtime_nsec: u64,
    pub ctime_sec: u64,
    pub ctime_nsec: u64,
    pub btime_sec: u64,
    pub btime_nsec: u64,
    pub gen: u64,
    pub data_version: u64,
}

/// Rstatfs's body: statfs(2)'s fields, `ty` being f_type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statfs {
    pub ty: u32,
    pub bsize: u32,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub fsid: u64,
    pub namelen: u32,
}

/// One entry of an Rreaddir's data: qid[13] offset[8] type[1] name[s].
/// `offset` is where the next Treaddir resumes after this entry; `ty` is a
/// Linux dirent type (DT_DIR, DT_REG, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent<'a> {
    pub qid: Qid,
    pub offset: u64,
    pub ty: u8,
    pub name: &'a [u8],
}

/// A request (T-message) body. The tag travels beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tmsg<'a> {
    Version {
        msize: u32,
        version: &'a [u8],
    },
    /// `n_uname` is 9P2000.u and 9P2000.L only (NONUNAME otherwise).
    Auth {
        afid: u32,
        uname: &'a [u8],
        aname: &'a [u8],
        n_uname: u32,
    },
    /// `n_uname` is 9P2000.u and 9P2000.L only (NONUNAME otherwise).
    Attach {
        fid: u32,
        afid: u32,
        uname: &'a [u8],
        aname: &'a [u8],
        n_uname: u32,
    },
    Flush {
        oldtag: u16,
    },
    Walk {
        fid: u32,
        newfid: u32,
        names: WalkNames<'a>,
    },
    Open {
        fid: u32,
        mode: u8,
    },
    /// `extension` is 9P2000.u only (empty otherwise).
    Create {
        fid: u32,
        name: &'a [u8],
        perm: u32,
        mode: u8,
        extension: &'a [u8],
    },
    Read {
        fid: u32,
        offset: u64,
        count: u32,
    },
    Write {
        fid: u32,
        offset: u64,
        data: &'a [u8],
    },
    Clunk {
        fid: u32,
    },
    Remove {
        fid: u32,
    },
    Stat {
        fid: u32,
    },
    Wstat {
        fid: u32,
        stat: Stat<'a>,
    },
    // 9P2000.L only, from here on; field names are the protocol's.
    Statfs {
        fid: u32,
    },
    /// `flags` are Linux open(2) flags (DOTL_*).
    Lopen {
        fid: u32,
        flags: u32,
    },
    Lcreate {
        fid: u32,
        name: &'a [u8],
        flags: u32,
        mode: u32,
        gid: u32,
    },
    Symlink {
        fid: u32,
        name: &'a [u8],
        symtgt: &'a [u8],
        gid: u32,
    },
    Mknod {
        dfid: u32,
        name: &'a [u8],
        mode: u32,
        major: u32,
        minor: u32,
        gid: u32,
    },
    Rename {
        fid: u32,
        dfid: u32,
        name: &'a [u8],
    },
    Readlink {
        fid: u32,
    },
    /// `mask` is the request_mask (GETATTR_* bits).
    Getattr {
        fid: u32,
        mask: u64,
    },
    /// `valid` says which of the other fields to set (SETATTR_* bits).
    Setattr {
        fid: u32,
        valid: u32,
        mode: u32,
        uid: u32,
        gid: u32,
        size: u64,
        atime_sec: u64,
        atime_nsec: u64,
        mtime_sec: u64,
        mtime_nsec: u64,
    },
    /// An empty `name` asks for the list of the file's attribute names.
    Xattrwalk {
        fid: u32,
        newfid: u32,
        name: &'a [u8],
    },
    Xattrcreate {
        fid: u32,
        name: &'a [u8],
        attr_size: u64,
        flags: u32,
    },
    Readdir {
        fid: u32,
        offset: u64,
        count: u32,
    },
    /// `datasync` is `None` when the message ends after the fid, as
    /// Tfsync first did; Linux's client sends datasync[4] after it.
    Fsync {
        fid: u32,
        datasync: Option<u32>,
    },
    /// `ty` is LOCK_TYPE_*, `flags` LOCK_FLAGS_*.
    Lock {
        fid: u32,
        ty: u8,
        flags: u32,
        start: u64,
        length: u64,
        proc_id: u32,
        client_id: &'a [u8],
    },
    Getlock {
        fid: u32,
        ty: u8,
        start: u64,
        length: u64,
        proc_id: u32,
        client_id: &'a [u8],
    },
    Link {
        dfid: u32,
        fid: u32,
        name: &'a [u8],
    },
    Mkdir {
        dfid: u32,
        name: &'a [u8],
        mode: u32,
        gid: u32,
    },
    Renameat {
        olddirfid: u32,
        oldname: &'a [u8],
        newdirfid: u32,
        newname: &'a [u8],
    },
    /// `flags` is 0 or DOTL_AT_REMOVEDIR.
    Unlinkat {
        dirfd: u32,
        name: &'a [u8],
        flags: u32,
    },
}

/// A reply (R-message) body. The tag travels beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rmsg<'a> {
    Version {
        msize: u32,
        version: &'a [u8],
    },
    Auth {
        aqid: Qid,
    },
    Attach {
        qid: Qid,
    },
    /// `errno` is 9P2000.u only (0 otherwise). In 9P2000.L this encodes
    /// as Rlerror, the errno alone; it never decodes there (see `Lerror`).
    Error {
        ename: &'a [u8],
        errno: u32,
    },
    Flush,
    Walk {
        qids: WalkQids,
    },
    Open {
        qid: Qid,
        iounit: u32,
    },
    Create {
        qid: Qid,
        iounit: u32,
    },
    Read {
        data: &'a [u8],
    },
    Write {
        count: u32,
    },
    Clunk,
    Remove,
    Stat {
        stat: Stat<'a>,
    },
    Wstat,
    // 9P2000.L only, from here on.
    /// Rlerror: 9P2000.L's error, a Linux errno and no text.
    Lerror {
        ecode: u32,
    },
    Statfs(Statfs),
    Lopen {
        qid: Qid,
        iounit: u32,
    },
    Lcreate {
        qid: Qid,
        iounit: u32,
    },
    Symlink {
        qid: Qid,
    },
    Mknod {
        qid: Qid,
    },
    Rename,
    Readlink {
        target: &'a [u8],
    },
    Getattr(Getattr),
    Setattr,
    Xattrwalk {
        size: u64,
    },
    Xattrcreate,
    /// `data` is a run of entries; see `decode_dirents`, and
    /// `rreaddir_begin` to build one in place.
    Readdir {
        data: &'a [u8],
    },
    Fsync,
    Lock {
        status: u8,
    },
    Getlock {
        ty: u8,
        start: u64,
        length: u64,
        proc_id: u32,
        client_id: &'a [u8],
    },
    Link,
    Mkdir {
        qid: Qid,
    },
    Renameat,
    Unlinkat,
}
