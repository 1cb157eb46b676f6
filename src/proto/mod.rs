//! `proto`: 9P2000 and 9P2000.u on the wire, and nothing else.
//!
//! Bytes in, messages out, and back; no I/O, no allocation sized by anything
//! but the message being decoded. A decoded message borrows its strings and
//! data from the buffer it came from (`Tmsg<'a>`, `Rmsg<'a>`), so decoding a
//! request costs no heap at all; encoding appends to a caller's `Vec<u8>`, so
//! a connection's reply queue is one buffer that replies are written into.
//!
//! The dialect is a value the codec is parameterised by (`Dialect`), not a
//! type: the three places 9P2000.u differs (stat's tail, Rerror's errno,
//! Tauth/Tattach's n_uname, Tcreate's extension) branch on it, and 9P2000.L
//! will be a third variant with its own message numbers beside these.
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

pub use decode::{decode_r, decode_stat, decode_t, frame_size, DecodeError, DecodeErrorKind, FrameError};
pub use encode::{encode_r, encode_stat, encode_t, rread_begin, rread_finish, stat_size};
pub use fmt::{trace_r, trace_t, TraceR, TraceT};

/// The 9P dialects this codec speaks. 9P2000.L will be the third.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Plain 9P2000: errors are text only, stat has no extension.
    P2000,
    /// 9P2000.u: numeric ids and an extension string in stat, an errno
    /// beside every error text, n_uname in Tauth/Tattach, an extension in
    /// Tcreate.
    P2000u,
}

impl Dialect {
    /// The version string Rversion answers with for this dialect.
    pub fn version(self) -> &'static str {
        match self {
            Dialect::P2000 => "9P2000",
            Dialect::P2000u => "9P2000.u",
        }
    }

    /// The dialect a client's Tversion string asks for, per version(5):
    /// `9P2000.u` is .u, anything else that starts `9P2000` is the best we
    /// speak of that family (plain 9P2000), anything else is unknown.
    pub fn negotiate(asked: &[u8]) -> Option<Dialect> {
        if asked == b"9P2000.u" {
            Some(Dialect::P2000u)
        } else if asked.starts_with(b"9P2000") {
            Some(Dialect::P2000)
        } else {
            None
        }
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

/// Message type numbers (fcall.h).
pub mod msg {
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

/// A request (T-message) body. The tag travels beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tmsg<'a> {
    Version {
        msize: u32,
        version: &'a [u8],
    },
    /// `n_uname` is 9P2000.u only (NONUNAME otherwise).
    Auth {
        afid: u32,
        uname: &'a [u8],
        aname: &'a [u8],
        n_uname: u32,
    },
    /// `n_uname` is 9P2000.u only (NONUNAME otherwise).
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
    /// `errno` is 9P2000.u only (0 otherwise).
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
}
