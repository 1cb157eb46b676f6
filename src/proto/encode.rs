//! Encoding: a message appended to a caller's buffer.
//!
//! A message is written in one pass: the header goes down with a zero
//! size, the body is appended field by field with the `put_*` family, and
//! the size is patched from how far the buffer grew. So no message is sized
//! twice, and a reply queue is one `Vec<u8>` that replies are appended to.
//!
//! Encoding cannot fail by signature, and the messages we build always fit,
//! so a value the wire cannot carry (a string over 65535 bytes, data over
//! 4 GiB, a stat over 65535 bytes) is a bug in the caller and panics loudly
//! rather than being cut short into a message that means something else.

use super::{msg, Dialect, Qid, Rmsg, Stat, Tmsg, HEADER_LEN};

/// Bytes of a stat that do not depend on its strings: size[2] type[2]
/// dev[4] qid[13] mode[4] atime[4] mtime[4] length[8], and the len[2] of
/// each of name, uid, gid, muid.
const STAT_FIXED_LEN: usize = 2 + 2 + 4 + 13 + 4 + 4 + 4 + 8 + 4 * 2;
/// What 9P2000.u adds to a stat beyond the extension's own bytes:
/// extension's len[2], n_uid[4] n_gid[4] n_muid[4].
const STAT_U_FIXED_LEN: usize = 2 + 3 * 4;
/// Rread's header: size[4] type[1] tag[2] count[4].
const RREAD_HEADER_LEN: usize = HEADER_LEN + 4;

const _: () = assert!(STAT_FIXED_LEN == 49, "stat(5): 49 bytes besides the four strings");
const _: () = assert!(RREAD_HEADER_LEN <= super::IOHDRSZ as usize, "a clamped read's reply fits the msize");

/// Append one request, size field included.
pub fn encode_t(out: &mut Vec<u8>, tag: u16, msg: &Tmsg<'_>, dialect: Dialect) {
    let start = begin(out, t_type(msg), tag);
    t_body(out, msg, dialect);
    end(out, start);
}

/// Append one reply, size field included.
pub fn encode_r(out: &mut Vec<u8>, tag: u16, msg: &Rmsg<'_>, dialect: Dialect) {
    let start = begin(out, r_type(msg), tag);
    r_body(out, msg, dialect);
    end(out, start);
}

/// Append one stat entry as a directory read carries it (size[2] first).
pub fn encode_stat(out: &mut Vec<u8>, stat: &Stat<'_>, dialect: Dialect) {
    let size = stat_size(stat, dialect) - 2;
    put_u16(out, u16::try_from(size).expect("a 9P stat is at most 65535 bytes"));
    put_u16(out, stat.ty);
    put_u32(out, stat.dev);
    put_qid(out, &stat.qid);
    put_u32(out, stat.mode);
    put_u32(out, stat.atime);
    put_u32(out, stat.mtime);
    put_u64(out, stat.length);
    for s in [stat.name, stat.uid, stat.gid, stat.muid] {
        put_str(out, s);
    }
    if dialect == Dialect::P2000u {
        put_str(out, stat.extension);
        put_u32(out, stat.n_uid);
        put_u32(out, stat.n_gid);
        put_u32(out, stat.n_muid);
    }
}

/// The bytes `encode_stat` appends for `stat`.
pub fn stat_size(stat: &Stat<'_>, dialect: Dialect) -> usize {
    let strings = stat.name.len() + stat.uid.len() + stat.gid.len() + stat.muid.len();
    let tail = match dialect {
        Dialect::P2000 => 0,
        Dialect::P2000u => STAT_U_FIXED_LEN + stat.extension.len(),
    };
    STAT_FIXED_LEN + strings + tail
}

/// Begin an Rread whose data the caller appends directly (so file bytes
/// are read straight into the reply): writes size[4] type[1] tag[2]
/// count[4] with placeholders and returns the message's start offset.
pub fn rread_begin(out: &mut Vec<u8>, tag: u16) -> usize {
    let start = begin(out, msg::RREAD, tag);
    put_u32(out, 0);
    start
}

/// Finish the Rread begun at `start`: patches size and count from what
/// was appended since.
pub fn rread_finish(out: &mut [u8], start: usize) {
    let message = &mut out[start..];
    assert!(message.len() >= RREAD_HEADER_LEN, "rread_finish without rread_begin");
    assert_eq!(message[4], msg::RREAD, "rread_finish of a message that is not an Rread");
    let size = u32::try_from(message.len()).expect("a 9P message is under 4 GiB");
    let count = size - RREAD_HEADER_LEN as u32;
    message[0..4].copy_from_slice(&size.to_le_bytes());
    message[HEADER_LEN..RREAD_HEADER_LEN].copy_from_slice(&count.to_le_bytes());
}

fn t_type(msg: &Tmsg<'_>) -> u8 {
    match msg {
        Tmsg::Version { .. } => msg::TVERSION,
        Tmsg::Auth { .. } => msg::TAUTH,
        Tmsg::Attach { .. } => msg::TATTACH,
        Tmsg::Flush { .. } => msg::TFLUSH,
        Tmsg::Walk { .. } => msg::TWALK,
        Tmsg::Open { .. } => msg::TOPEN,
        Tmsg::Create { .. } => msg::TCREATE,
        Tmsg::Read { .. } => msg::TREAD,
        Tmsg::Write { .. } => msg::TWRITE,
        Tmsg::Clunk { .. } => msg::TCLUNK,
        Tmsg::Remove { .. } => msg::TREMOVE,
        Tmsg::Stat { .. } => msg::TSTAT,
        Tmsg::Wstat { .. } => msg::TWSTAT,
    }
}

fn r_type(msg: &Rmsg<'_>) -> u8 {
    match msg {
        Rmsg::Version { .. } => msg::RVERSION,
        Rmsg::Auth { .. } => msg::RAUTH,
        Rmsg::Attach { .. } => msg::RATTACH,
        Rmsg::Error { .. } => msg::RERROR,
        Rmsg::Flush => msg::RFLUSH,
        Rmsg::Walk { .. } => msg::RWALK,
        Rmsg::Open { .. } => msg::ROPEN,
        Rmsg::Create { .. } => msg::RCREATE,
        Rmsg::Read { .. } => msg::RREAD,
        Rmsg::Write { .. } => msg::RWRITE,
        Rmsg::Clunk => msg::RCLUNK,
        Rmsg::Remove => msg::RREMOVE,
        Rmsg::Stat { .. } => msg::RSTAT,
        Rmsg::Wstat => msg::RWSTAT,
    }
}

fn t_body(out: &mut Vec<u8>, msg: &Tmsg<'_>, dialect: Dialect) {
    let u = dialect == Dialect::P2000u;
    match *msg {
        Tmsg::Version { msize, version } => {
            put_u32(out, msize);
            put_str(out, version);
        }
        Tmsg::Auth { afid, uname, aname, n_uname } => {
            put_u32(out, afid);
            put_str(out, uname);
            put_str(out, aname);
            if u {
                put_u32(out, n_uname);
            }
        }
        Tmsg::Attach { fid, afid, uname, aname, n_uname } => {
            put_u32(out, fid);
            put_u32(out, afid);
            put_str(out, uname);
            put_str(out, aname);
            if u {
                put_u32(out, n_uname);
            }
        }
        Tmsg::Flush { oldtag } => put_u16(out, oldtag),
        Tmsg::Walk { fid, newfid, names } => {
            put_u32(out, fid);
            put_u32(out, newfid);
            put_u16(out, names.len() as u16);
            names.as_slice().iter().for_each(|name| put_str(out, name));
        }
        Tmsg::Open { fid, mode } => {
            put_u32(out, fid);
            out.push(mode);
        }
        Tmsg::Create { fid, name, perm, mode, extension } => {
            put_u32(out, fid);
            put_str(out, name);
            put_u32(out, perm);
            out.push(mode);
            if u {
                put_str(out, extension);
            }
        }
        Tmsg::Read { fid, offset, count } => {
            put_u32(out, fid);
            put_u64(out, offset);
            put_u32(out, count);
        }
        Tmsg::Write { fid, offset, data } => {
            put_u32(out, fid);
            put_u64(out, offset);
            put_data(out, data);
        }
        Tmsg::Clunk { fid } | Tmsg::Remove { fid } | Tmsg::Stat { fid } => put_u32(out, fid),
        Tmsg::Wstat { fid, stat } => {
            put_u32(out, fid);
            put_counted_stat(out, &stat, dialect);
        }
    }
}

fn r_body(out: &mut Vec<u8>, msg: &Rmsg<'_>, dialect: Dialect) {
    match *msg {
        Rmsg::Version { msize, version } => {
            put_u32(out, msize);
            put_str(out, version);
        }
        Rmsg::Auth { aqid: qid } | Rmsg::Attach { qid } => put_qid(out, &qid),
        Rmsg::Error { ename, errno } => {
            put_str(out, ename);
            if dialect == Dialect::P2000u {
                put_u32(out, errno);
            }
        }
        Rmsg::Walk { qids } => {
            put_u16(out, qids.len() as u16);
            qids.as_slice().iter().for_each(|qid| put_qid(out, qid));
        }
        Rmsg::Open { qid, iounit } | Rmsg::Create { qid, iounit } => {
            put_qid(out, &qid);
            put_u32(out, iounit);
        }
        Rmsg::Read { data } => put_data(out, data),
        Rmsg::Write { count } => put_u32(out, count),
        Rmsg::Stat { stat } => put_counted_stat(out, &stat, dialect),
        Rmsg::Flush | Rmsg::Clunk | Rmsg::Remove | Rmsg::Wstat => {}
    }
}

/// The header with a zero size for `end` to patch; returns where it starts.
fn begin(out: &mut Vec<u8>, ty: u8, tag: u16) -> usize {
    let start = out.len();
    put_u32(out, 0);
    out.push(ty);
    put_u16(out, tag);
    start
}

/// Patch the size of the message begun at `start` to what was appended.
fn end(out: &mut [u8], start: usize) {
    let size = u32::try_from(out.len() - start).expect("a 9P message is under 4 GiB");
    out[start..start + 4].copy_from_slice(&size.to_le_bytes());
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A string: len[2] then its bytes.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_u16(out, u16::try_from(s.len()).expect("a 9P string is at most 65535 bytes"));
    out.extend_from_slice(s);
}

/// Data: count[4] then its bytes.
fn put_data(out: &mut Vec<u8>, data: &[u8]) {
    put_u32(out, u32::try_from(data.len()).expect("9P data is under 4 GiB"));
    out.extend_from_slice(data);
}

fn put_qid(out: &mut Vec<u8>, qid: &Qid) {
    out.push(qid.ty);
    put_u32(out, qid.version);
    put_u64(out, qid.path);
}

/// Rstat's and Twstat's stat[n]: n[2], then the stat with its own size[2].
fn put_counted_stat(out: &mut Vec<u8>, stat: &Stat<'_>, dialect: Dialect) {
    let n = stat_size(stat, dialect);
    put_u16(out, u16::try_from(n).expect("an Rstat/Twstat stat is at most 65535 bytes"));
    encode_stat(out, stat, dialect);
}
