//! Encoding: a message appended to a caller's buffer.
//!
//! A message is written in one pass: the header goes down with a zero
//! size, the body is appended field by field (`put!(out, fid, name, mode)`,
//! so each arm reads as the message's layout), and the size is patched from
//! how far the buffer grew. So no message is sized twice, and a reply queue
//! is one `Vec<u8>` that replies are appended to. Rread and Rreaddir can
//! also be built in place (`rread_begin`, `rreaddir_begin`), their data
//! appended by the caller and their count patched at the end.
//!
//! Encoding cannot fail by signature, and the messages we build always fit,
//! so a value the wire cannot carry (a string over 65535 bytes, data over
//! 4 GiB, a stat over 65535 bytes) is a bug in the caller and panics loudly
//! rather than being cut short into a message that means something else;
//! so does an error without an errno in 9P2000.L, whose Rlerror of 0 would
//! read as success.

use super::{msg, Dialect, Getattr, Qid, Rmsg, Stat, Tmsg, HEADER_LEN};

/// Append fields in order (`put!(out, fid, name, mode)`), so that each
/// message's encoding reads as its layout in the manual.
macro_rules! put {
    ($out:expr $(, $field:expr)+ $(,)?) => {
        {
            $(Field::put($field, $out);)+
        }
    };
}

/// Bytes of a stat that do not depend on its strings: size[2] type[2]
/// dev[4] qid[13] mode[4] atime[4] mtime[4] length[8], and the len[2] of
/// each of name, uid, gid, muid.
const STAT_FIXED_LEN: usize = 2 + 2 + 4 + 13 + 4 + 4 + 4 + 8 + 4 * 2;
/// What 9P2000.u adds to a stat beyond the extension's own bytes:
/// extension's len[2], n_uid[4] n_gid[4] n_muid[4].
const STAT_U_FIXED_LEN: usize = 2 + 3 * 4;
/// Rread's and Rreaddir's header: size[4] type[1] tag[2] count[4].
const COUNTED_HEADER_LEN: usize = HEADER_LEN + 4;
/// Bytes of an Rreaddir entry besides its name: qid[13] offset[8] type[1]
/// and the name's len[2].
const DIRENT_FIXED_LEN: usize = 13 + 8 + 1 + 2;

const _: () = assert!(STAT_FIXED_LEN == 49, "stat(5): 49 bytes besides the four strings");
const _: () = assert!(COUNTED_HEADER_LEN <= super::IOHDRSZ as usize, "a clamped read's reply fits the msize");

/// Append one request, size field included.
pub fn encode_t(out: &mut Vec<u8>, tag: u16, msg: &Tmsg<'_>, dialect: Dialect) {
    let start = begin(out, t_type(msg), tag);
    t_body(out, msg, dialect);
    end(out, start);
}

/// Append one reply, size field included.
pub fn encode_r(out: &mut Vec<u8>, tag: u16, msg: &Rmsg<'_>, dialect: Dialect) {
    let start = begin(out, r_type(msg, dialect), tag);
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
    if dialect.unix() {
        put_str(out, stat.extension);
        put_u32(out, stat.n_uid);
        put_u32(out, stat.n_gid);
        put_u32(out, stat.n_muid);
    }
}

/// The bytes `encode_stat` appends for `stat`.
pub fn stat_size(stat: &Stat<'_>, dialect: Dialect) -> usize {
    let strings = stat.name.len() + stat.uid.len() + stat.gid.len() + stat.muid.len();
    let tail = if dialect.unix() { STAT_U_FIXED_LEN + stat.extension.len() } else { 0 };
    STAT_FIXED_LEN + strings + tail
}

/// The bytes of an Rread's header, before its data: size[4] type[1]
/// tag[2] count[4].
pub const RREAD_HEADER_BYTES: usize = 11;
/// The bytes of an Rreaddir's header: size[4] type[1] tag[2] count[4].
pub const RREADDIR_HEADER_BYTES: usize = 11;

/// Begin an Rread whose data the caller appends directly (so file bytes
/// are read straight into the reply): writes size[4] type[1] tag[2]
/// count[4] with placeholders and returns the message's start offset.
pub fn rread_begin(out: &mut Vec<u8>, tag: u16) -> usize {
    counted_begin(out, msg::RREAD, tag)
}

/// Finish the Rread begun at `start`: patches size and count from what
/// was appended since.
pub fn rread_finish(out: &mut [u8], start: usize) {
    counted_finish(out, start, msg::RREAD);
}

/// Begin an Rreaddir whose entries the caller appends with `encode_dirent`
/// (each checked against the count left with `dirent_size`); returns the
/// message's start offset for `rreaddir_finish`.
pub fn rreaddir_begin(out: &mut Vec<u8>, tag: u16) -> usize {
    counted_begin(out, msg::RREADDIR, tag)
}

/// Finish the Rreaddir begun at `start`: patches size and count from the
/// entries appended since.
pub fn rreaddir_finish(out: &mut [u8], start: usize) {
    counted_finish(out, start, msg::RREADDIR);
}

/// Append one Rreaddir entry: qid[13] offset[8] type[1] name[s]. `offset`
/// is where a Treaddir resumes after this entry; `ty` a Linux DT_* type.
pub fn encode_dirent(out: &mut Vec<u8>, qid: Qid, offset: u64, ty: u8, name: &[u8]) {
    put!(out, qid, offset, ty, name);
}

/// The bytes `encode_dirent` appends for an entry called `name`.
pub fn dirent_size(name: &[u8]) -> usize {
    DIRENT_FIXED_LEN + name.len()
}

/// The header of a reply whose body is count[4] data[count], with
/// placeholders for `counted_finish` to patch.
fn counted_begin(out: &mut Vec<u8>, ty: u8, tag: u16) -> usize {
    let start = begin(out, ty, tag);
    put_u32(out, 0);
    start
}

/// Patch the size and count of the `ty` reply begun at `start` by
/// `counted_begin` from what was appended since.
fn counted_finish(out: &mut [u8], start: usize, ty: u8) {
    let message = &mut out[start..];
    assert!(message.len() >= COUNTED_HEADER_LEN, "a counted reply finished that was never begun");
    assert_eq!(message[4], ty, "a counted reply finished as a type it was not begun as");
    let size = u32::try_from(message.len()).expect("a 9P message is under 4 GiB");
    let count = size - COUNTED_HEADER_LEN as u32;
    message[0..4].copy_from_slice(&size.to_le_bytes());
    message[HEADER_LEN..COUNTED_HEADER_LEN].copy_from_slice(&count.to_le_bytes());
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
        Tmsg::Statfs { .. } => msg::TSTATFS,
        Tmsg::Lopen { .. } => msg::TLOPEN,
        Tmsg::Lcreate { .. } => msg::TLCREATE,
        Tmsg::Symlink { .. } => msg::TSYMLINK,
        Tmsg::Mknod { .. } => msg::TMKNOD,
        Tmsg::Rename { .. } => msg::TRENAME,
        Tmsg::Readlink { .. } => msg::TREADLINK,
        Tmsg::Getattr { .. } => msg::TGETATTR,
        Tmsg::Setattr { .. } => msg::TSETATTR,
        Tmsg::Xattrwalk { .. } => msg::TXATTRWALK,
        Tmsg::Xattrcreate { .. } => msg::TXATTRCREATE,
        Tmsg::Readdir { .. } => msg::TREADDIR,
        Tmsg::Fsync { .. } => msg::TFSYNC,
        Tmsg::Lock { .. } => msg::TLOCK,
        Tmsg::Getlock { .. } => msg::TGETLOCK,
        Tmsg::Link { .. } => msg::TLINK,
        Tmsg::Mkdir { .. } => msg::TMKDIR,
        Tmsg::Renameat { .. } => msg::TRENAMEAT,
        Tmsg::Unlinkat { .. } => msg::TUNLINKAT,
    }
}

/// The type number of a reply: `Rmsg::Error` is Rerror but in 9P2000.L,
/// whose only error reply is Rlerror.
fn r_type(msg: &Rmsg<'_>, dialect: Dialect) -> u8 {
    match msg {
        Rmsg::Version { .. } => msg::RVERSION,
        Rmsg::Auth { .. } => msg::RAUTH,
        Rmsg::Attach { .. } => msg::RATTACH,
        Rmsg::Error { .. } if dialect == Dialect::L => msg::RLERROR,
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
        Rmsg::Lerror { .. } => msg::RLERROR,
        Rmsg::Statfs(_) => msg::RSTATFS,
        Rmsg::Lopen { .. } => msg::RLOPEN,
        Rmsg::Lcreate { .. } => msg::RLCREATE,
        Rmsg::Symlink { .. } => msg::RSYMLINK,
        Rmsg::Mknod { .. } => msg::RMKNOD,
        Rmsg::Rename => msg::RRENAME,
        Rmsg::Readlink { .. } => msg::RREADLINK,
        Rmsg::Getattr(_) => msg::RGETATTR,
        Rmsg::Setattr => msg::RSETATTR,
        Rmsg::Xattrwalk { .. } => msg::RXATTRWALK,
        Rmsg::Xattrcreate => msg::RXATTRCREATE,
        Rmsg::Readdir { .. } => msg::RREADDIR,
        Rmsg::Fsync => msg::RFSYNC,
        Rmsg::Lock { .. } => msg::RLOCK,
        Rmsg::Getlock { .. } => msg::RGETLOCK,
        Rmsg::Link => msg::RLINK,
        Rmsg::Mkdir { .. } => msg::RMKDIR,
        Rmsg::Renameat => msg::RRENAMEAT,
        Rmsg::Unlinkat => msg::RUNLINKAT,
    }
}

/// A request's fields after the header, each arm the message's layout.
fn t_body(out: &mut Vec<u8>, msg: &Tmsg<'_>, dialect: Dialect) {
    let unix = dialect.unix();
    match *msg {
        Tmsg::Version { msize, version } => put!(out, msize, version),
        Tmsg::Auth { afid, uname, aname, n_uname } => {
            put!(out, afid, uname, aname);
            if unix {
                put!(out, n_uname);
            }
        }
        Tmsg::Attach { fid, afid, uname, aname, n_uname } => {
            put!(out, fid, afid, uname, aname);
            if unix {
                put!(out, n_uname);
            }
        }
        Tmsg::Flush { oldtag } => put!(out, oldtag),
        Tmsg::Walk { fid, newfid, names } => {
            put!(out, fid, newfid, names.len() as u16);
            names.as_slice().iter().for_each(|&name| put!(out, name));
        }
        Tmsg::Open { fid, mode } => put!(out, fid, mode),
        Tmsg::Create { fid, name, perm, mode, extension } => {
            put!(out, fid, name, perm, mode);
            if unix {
                put!(out, extension);
            }
        }
        Tmsg::Read { fid, offset, count } | Tmsg::Readdir { fid, offset, count } => put!(out, fid, offset, count),
        Tmsg::Write { fid, offset, data } => {
            put!(out, fid, offset);
            put_data(out, data);
        }
        Tmsg::Clunk { fid } | Tmsg::Remove { fid } | Tmsg::Stat { fid } => put!(out, fid),
        Tmsg::Statfs { fid } | Tmsg::Readlink { fid } => put!(out, fid),
        Tmsg::Wstat { fid, stat } => {
            put!(out, fid);
            put_counted_stat(out, &stat, dialect);
        }
        Tmsg::Lopen { fid, flags } => put!(out, fid, flags),
        Tmsg::Lcreate { fid, name, flags, mode, gid } => put!(out, fid, name, flags, mode, gid),
        Tmsg::Symlink { fid, name, symtgt, gid } => put!(out, fid, name, symtgt, gid),
        Tmsg::Mknod { dfid, name, mode, major, minor, gid } => put!(out, dfid, name, mode, major, minor, gid),
        Tmsg::Rename { fid, dfid, name } => put!(out, fid, dfid, name),
        Tmsg::Getattr { fid, mask } => put!(out, fid, mask),
        Tmsg::Setattr { fid, valid, mode, uid, gid, size, atime_sec, atime_nsec, mtime_sec, mtime_nsec } => {
            put!(out, fid, valid, mode, uid, gid, size, atime_sec, atime_nsec, mtime_sec, mtime_nsec);
        }
        Tmsg::Xattrwalk { fid, newfid, name } => put!(out, fid, newfid, name),
        Tmsg::Xattrcreate { fid, name, attr_size, flags } => put!(out, fid, name, attr_size, flags),
        Tmsg::Fsync { fid, datasync } => {
            put!(out, fid);
            datasync.into_iter().for_each(|datasync| put!(out, datasync));
        }
        Tmsg::Lock { fid, ty, flags, start, length, proc_id, client_id } => {
            put!(out, fid, ty, flags, start, length, proc_id, client_id);
        }
        Tmsg::Getlock { fid, ty, start, length, proc_id, client_id } => {
            put!(out, fid, ty, start, length, proc_id, client_id);
        }
        Tmsg::Link { dfid, fid, name } => put!(out, dfid, fid, name),
        Tmsg::Mkdir { dfid, name, mode, gid } => put!(out, dfid, name, mode, gid),
        Tmsg::Renameat { olddirfid, oldname, newdirfid, newname } => put!(out, olddirfid, oldname, newdirfid, newname),
        Tmsg::Unlinkat { dirfd, name, flags } => put!(out, dirfd, name, flags),
    }
}

/// A reply's fields after the header, each arm the message's layout.
fn r_body(out: &mut Vec<u8>, msg: &Rmsg<'_>, dialect: Dialect) {
    match *msg {
        Rmsg::Version { msize, version } => put!(out, msize, version),
        Rmsg::Auth { aqid: qid } | Rmsg::Attach { qid } => put!(out, qid),
        Rmsg::Error { errno, .. } if dialect == Dialect::L => {
            // Rlerror's ecode 0 would read as success (Linux returns -ecode).
            assert_ne!(errno, 0, "an Rlerror needs an errno");
            put!(out, errno);
        }
        Rmsg::Error { ename, errno } => {
            put!(out, ename);
            if dialect.unix() {
                put!(out, errno);
            }
        }
        Rmsg::Walk { qids } => {
            put!(out, qids.len() as u16);
            qids.as_slice().iter().for_each(|&qid| put!(out, qid));
        }
        Rmsg::Open { qid, iounit } | Rmsg::Create { qid, iounit } => put!(out, qid, iounit),
        Rmsg::Lopen { qid, iounit } | Rmsg::Lcreate { qid, iounit } => put!(out, qid, iounit),
        Rmsg::Read { data } | Rmsg::Readdir { data } => put_data(out, data),
        Rmsg::Write { count } => put!(out, count),
        Rmsg::Stat { stat } => put_counted_stat(out, &stat, dialect),
        Rmsg::Lerror { ecode } => put!(out, ecode),
        Rmsg::Statfs(s) => {
            put!(out, s.ty, s.bsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.fsid, s.namelen);
        }
        Rmsg::Symlink { qid } | Rmsg::Mknod { qid } | Rmsg::Mkdir { qid } => put!(out, qid),
        Rmsg::Readlink { target } => put!(out, target),
        Rmsg::Getattr(ref a) => put_getattr(out, a),
        Rmsg::Xattrwalk { size } => put!(out, size),
        Rmsg::Lock { status } => put!(out, status),
        Rmsg::Getlock { ty, start, length, proc_id, client_id } => put!(out, ty, start, length, proc_id, client_id),
        Rmsg::Flush | Rmsg::Clunk | Rmsg::Remove | Rmsg::Wstat => {}
        Rmsg::Rename | Rmsg::Setattr | Rmsg::Xattrcreate | Rmsg::Fsync => {}
        Rmsg::Link | Rmsg::Renameat | Rmsg::Unlinkat => {}
    }
}

/// Rgetattr's body, in its wire order.
fn put_getattr(out: &mut Vec<u8>, a: &Getattr) {
    put!(out, a.valid, a.qid, a.mode, a.uid, a.gid, a.nlink, a.rdev, a.size, a.blksize, a.blocks);
    put!(out, a.atime_sec, a.atime_nsec, a.mtime_sec, a.mtime_nsec, a.ctime_sec, a.ctime_nsec);
    put!(out, a.btime_sec, a.btime_nsec, a.gen, a.data_version);
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

/// A field as the wire carries it: integers little-endian at their width,
/// a byte slice as a string (len[2] then its bytes; data, whose count is
/// 4 bytes, goes through `put_data`), a qid as its 13 bytes.
trait Field {
    fn put(self, out: &mut Vec<u8>);
}

impl Field for u8 {
    fn put(self, out: &mut Vec<u8>) {
        out.push(self);
    }
}

impl Field for u16 {
    fn put(self, out: &mut Vec<u8>) {
        put_u16(out, self);
    }
}

impl Field for u32 {
    fn put(self, out: &mut Vec<u8>) {
        put_u32(out, self);
    }
}

impl Field for u64 {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self);
    }
}

impl Field for &[u8] {
    fn put(self, out: &mut Vec<u8>) {
        put_str(out, self);
    }
}

impl Field for Qid {
    fn put(self, out: &mut Vec<u8>) {
        put_qid(out, &self);
    }
}

/// Rstat's and Twstat's stat[n]: n[2], then the stat with its own size[2].
fn put_counted_stat(out: &mut Vec<u8>, stat: &Stat<'_>, dialect: Dialect) {
    let n = stat_size(stat, dialect);
    put_u16(out, u16::try_from(n).expect("an Rstat/Twstat stat is at most 65535 bytes"));
    encode_stat(out, stat, dialect);
}
