//! The codec against the manual pages, byte for byte, and against hostile
//! input.
//!
//! The vectors below are written out by hand from version(5), attach(5),
//! walk(5), open(5), read(5), stat(5), flush(5), clunk(5) and error(5), and
//! for 9P2000.L from diod's protocol.md and the formats of Linux's
//! net/9p/client.c, not produced by the encoder, so a mistake shared by the
//! encoder and the decoder cannot hide behind a round trip. Then every
//! message of every dialect is round-tripped, cut at every length, padded
//! by a byte, and a deterministic fuzz loop throws mutated and random
//! buffers at the decoders: whatever they accept must re-encode to exactly
//! the same bytes.

use super::*;

// ---------------------------------------------------------------------------
// Helpers: decoding and encoding in one call, and the message samples.

fn enc_t(tag: u16, msg: &Tmsg<'_>, dialect: Dialect) -> Vec<u8> {
    let mut out = Vec::new();
    encode_t(&mut out, tag, msg, dialect);
    out
}

fn enc_r(tag: u16, msg: &Rmsg<'_>, dialect: Dialect) -> Vec<u8> {
    let mut out = Vec::new();
    encode_r(&mut out, tag, msg, dialect);
    out
}

fn err(kind: DecodeErrorKind, tag: Option<u16>) -> DecodeError {
    DecodeError { kind, tag }
}

/// The dialects with Topen, stat and Rerror: 9P2000 and 9P2000.u.
const DIALECTS: [Dialect; 2] = [Dialect::P2000, Dialect::P2000u];
/// Every dialect, for the messages all three share.
const ALL_DIALECTS: [Dialect; 3] = [Dialect::P2000, Dialect::P2000u, Dialect::L];

const FILE_QID: Qid = Qid { ty: QTFILE, version: 7, path: 0x0102_0304_0506_0708 };
const ROOT_QID: Qid = Qid { ty: QTDIR, version: 0, path: 1 };

/// The stat of a file `README`, 120 bytes, mode 0444, owned by `agents`;
/// in .u with numeric ids 1000 and no muid.
fn readme_stat(dialect: Dialect) -> Stat<'static> {
    let u = dialect == Dialect::P2000u;
    Stat {
        ty: 0,
        dev: 0,
        qid: FILE_QID,
        mode: 0o444,
        atime: 1_700_000_000,
        mtime: 1_700_000_000,
        length: 120,
        name: b"README",
        uid: b"agents",
        gid: b"agents",
        muid: b"",
        extension: b"",
        n_uid: if u { 1000 } else { NONUNAME },
        n_gid: if u { 1000 } else { NONUNAME },
        n_muid: NONUNAME,
    }
}

/// A .u stat with every .u field set to something other than its default.
fn symlink_stat() -> Stat<'static> {
    Stat {
        mode: DMSYMLINK | 0o777,
        name: b"link",
        extension: b"/target",
        n_uid: 1,
        n_gid: 2,
        n_muid: 3,
        ..readme_stat(Dialect::P2000u)
    }
}

const SIXTEEN_NAMES: [&[u8]; MAXWELEM] =
    [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"i", b"j", b"k", b"l", b"m", b"n", b"o", b"p"];

/// One of every request (two of Walk and Write: empty and full), with the
/// .u-only fields at their 9P2000 defaults unless `dialect` is .u.
fn sample_requests(dialect: Dialect) -> Vec<Tmsg<'static>> {
    let u = dialect == Dialect::P2000u;
    let n_uname = if u { 1000 } else { NONUNAME };
    vec![
        Tmsg::Version { msize: 8192, version: b"9P2000" },
        Tmsg::Auth { afid: 5, uname: b"glenda", aname: b"", n_uname },
        Tmsg::Attach { fid: 0, afid: NOFID, uname: b"glenda", aname: b"claude", n_uname },
        Tmsg::Flush { oldtag: 4 },
        Tmsg::Walk { fid: 0, newfid: 0, names: WalkNames::new(&[]).unwrap() },
        Tmsg::Walk { fid: 0, newfid: 1, names: WalkNames::new(&SIXTEEN_NAMES).unwrap() },
        Tmsg::Open { fid: 1, mode: OREAD },
        Tmsg::Create { fid: 1, name: b"x", perm: 0o644, mode: OWRITE, extension: if u { b"ext" } else { b"" } },
        Tmsg::Read { fid: 1, offset: u64::MAX, count: 8168 },
        Tmsg::Write { fid: 1, offset: 3, data: b"" },
        Tmsg::Write { fid: 1, offset: 3, data: b"zmx-session" },
        Tmsg::Clunk { fid: 1 },
        Tmsg::Remove { fid: 1 },
        Tmsg::Stat { fid: 1 },
        Tmsg::Wstat { fid: 1, stat: readme_stat(dialect) },
    ]
}

/// One of every reply (two of Walk and Read: empty and full).
fn sample_replies(dialect: Dialect) -> Vec<Rmsg<'static>> {
    let u = dialect == Dialect::P2000u;
    vec![
        Rmsg::Version { msize: 8192, version: dialect.version().as_bytes() },
        Rmsg::Auth { aqid: Qid { ty: QTAUTH, version: 0, path: 9 } },
        Rmsg::Attach { qid: ROOT_QID },
        Rmsg::Error { ename: b"file does not exist", errno: if u { 2 } else { 0 } },
        Rmsg::Flush,
        Rmsg::Walk { qids: WalkQids::new(&[]).unwrap() },
        Rmsg::Walk { qids: WalkQids::new(&[ROOT_QID; MAXWELEM]).unwrap() },
        Rmsg::Open { qid: FILE_QID, iounit: 0 },
        Rmsg::Create { qid: FILE_QID, iounit: 8168 },
        Rmsg::Read { data: b"" },
        Rmsg::Read { data: b"hello, world\n" },
        Rmsg::Write { count: 11 },
        Rmsg::Clunk,
        Rmsg::Remove,
        Rmsg::Stat { stat: readme_stat(dialect) },
        Rmsg::Wstat,
    ]
}

/// The README's attributes in 9P2000.L, the times' fields all distinct so
/// that two swapped fields show.
const README_GETATTR: Getattr = Getattr {
    valid: GETATTR_BASIC,
    qid: FILE_QID,
    mode: 0o100444,
    uid: 1000,
    gid: 1001,
    nlink: 1,
    rdev: 0,
    size: 120,
    blksize: 4096,
    blocks: 8,
    atime_sec: 1_700_000_000,
    atime_nsec: 1,
    mtime_sec: 1_700_000_002,
    mtime_nsec: 3,
    ctime_sec: 1_700_000_004,
    ctime_nsec: 5,
    btime_sec: 0,
    btime_nsec: 0,
    gen: 0,
    data_version: 0,
};

/// A tmpfs's statfs, every field distinct.
const TMPFS_STATFS: Statfs = Statfs {
    ty: 0x0102_1994,
    bsize: 4096,
    blocks: 100,
    bfree: 50,
    bavail: 40,
    files: 1000,
    ffree: 900,
    fsid: 7,
    namelen: 255,
};

/// One of every 9P2000.L request (two of Walk, Write, Xattrwalk and Fsync),
/// 9P2000's that .L keeps among them.
fn sample_requests_l() -> Vec<Tmsg<'static>> {
    let n_uname = 1000;
    vec![
        Tmsg::Version { msize: 8192, version: b"9P2000.L" },
        Tmsg::Auth { afid: 5, uname: b"glenda", aname: b"", n_uname },
        Tmsg::Attach { fid: 0, afid: NOFID, uname: b"", aname: b"claude", n_uname },
        Tmsg::Flush { oldtag: 4 },
        Tmsg::Walk { fid: 0, newfid: 0, names: WalkNames::new(&[]).unwrap() },
        Tmsg::Walk { fid: 0, newfid: 1, names: WalkNames::new(&SIXTEEN_NAMES).unwrap() },
        Tmsg::Read { fid: 1, offset: u64::MAX, count: 8168 },
        Tmsg::Write { fid: 1, offset: 3, data: b"" },
        Tmsg::Write { fid: 1, offset: 3, data: b"zmx-session" },
        Tmsg::Clunk { fid: 1 },
        Tmsg::Remove { fid: 1 },
        Tmsg::Statfs { fid: 0 },
        Tmsg::Lopen { fid: 1, flags: DOTL_RDONLY | DOTL_DIRECTORY },
        Tmsg::Lcreate { fid: 1, name: b"x", flags: DOTL_WRONLY | DOTL_CREATE, mode: 0o100644, gid: 1000 },
        Tmsg::Symlink { fid: 1, name: b"link", symtgt: b"/target", gid: 1000 },
        Tmsg::Mknod { dfid: 1, name: b"null", mode: 0o20666, major: 1, minor: 3, gid: 1000 },
        Tmsg::Rename { fid: 2, dfid: 1, name: b"y" },
        Tmsg::Readlink { fid: 2 },
        Tmsg::Getattr { fid: 1, mask: GETATTR_ALL },
        Tmsg::Setattr {
            fid: 1,
            valid: SETATTR_MODE | SETATTR_ATIME | SETATTR_ATIME_SET,
            mode: 0o644,
            uid: 1,
            gid: 2,
            size: 3,
            atime_sec: 4,
            atime_nsec: 5,
            mtime_sec: 6,
            mtime_nsec: 7,
        },
        Tmsg::Xattrwalk { fid: 1, newfid: 2, name: b"" },
        Tmsg::Xattrwalk { fid: 1, newfid: 2, name: b"user.mime_type" },
        Tmsg::Xattrcreate { fid: 2, name: b"user.x", attr_size: 5, flags: 1 },
        Tmsg::Readdir { fid: 1, offset: 0, count: 8168 },
        Tmsg::Fsync { fid: 1, datasync: None },
        Tmsg::Fsync { fid: 1, datasync: Some(1) },
        Tmsg::Lock {
            fid: 3,
            ty: LOCK_TYPE_WRLCK,
            flags: LOCK_FLAGS_BLOCK,
            start: 0,
            length: 10,
            proc_id: 4242,
            client_id: b"host",
        },
        Tmsg::Getlock { fid: 3, ty: LOCK_TYPE_RDLCK, start: 1, length: 2, proc_id: 4242, client_id: b"host" },
        Tmsg::Link { dfid: 1, fid: 2, name: b"hard" },
        Tmsg::Mkdir { dfid: 1, name: b"dir", mode: 0o40755, gid: 1000 },
        Tmsg::Renameat { olddirfid: 1, oldname: b"a", newdirfid: 2, newname: b"b" },
        Tmsg::Unlinkat { dirfd: 1, name: b"dir", flags: DOTL_AT_REMOVEDIR },
    ]
}

/// One of every 9P2000.L reply (two of Walk, Read and Readdir), 9P2000's
/// that .L keeps among them.
fn sample_replies_l() -> Vec<Rmsg<'static>> {
    vec![
        Rmsg::Version { msize: 8192, version: b"9P2000.L" },
        Rmsg::Auth { aqid: Qid { ty: QTAUTH, version: 0, path: 9 } },
        Rmsg::Attach { qid: ROOT_QID },
        Rmsg::Flush,
        Rmsg::Walk { qids: WalkQids::new(&[]).unwrap() },
        Rmsg::Walk { qids: WalkQids::new(&[ROOT_QID; MAXWELEM]).unwrap() },
        Rmsg::Read { data: b"" },
        Rmsg::Read { data: b"hello, world\n" },
        Rmsg::Write { count: 11 },
        Rmsg::Clunk,
        Rmsg::Remove,
        Rmsg::Lerror { ecode: 2 },
        Rmsg::Statfs(TMPFS_STATFS),
        Rmsg::Lopen { qid: ROOT_QID, iounit: 0 },
        Rmsg::Lcreate { qid: FILE_QID, iounit: 8168 },
        Rmsg::Symlink { qid: Qid { ty: 0x02, version: 0, path: 3 } },
        Rmsg::Mknod { qid: FILE_QID },
        Rmsg::Rename,
        Rmsg::Readlink { target: b"/target" },
        Rmsg::Getattr(README_GETATTR),
        Rmsg::Setattr,
        Rmsg::Xattrwalk { size: 24 },
        Rmsg::Xattrcreate,
        Rmsg::Readdir { data: b"" },
        Rmsg::Readdir { data: &TWO_DIRENTS },
        Rmsg::Fsync,
        Rmsg::Lock { status: LOCK_SUCCESS },
        Rmsg::Getlock { ty: LOCK_TYPE_UNLCK, start: 1, length: 2, proc_id: 4242, client_id: b"host" },
        Rmsg::Link,
        Rmsg::Mkdir { qid: ROOT_QID },
        Rmsg::Renameat,
        Rmsg::Unlinkat,
    ]
}

/// Every sample message of both directions and every dialect, encoded.
fn sample_frames() -> Vec<(Dialect, Vec<u8>)> {
    let mut frames = Vec::new();
    for dialect in ALL_DIALECTS {
        for (i, msg) in requests_of(dialect).iter().enumerate() {
            frames.push((dialect, enc_t(i as u16, msg, dialect)));
        }
        for (i, msg) in replies_of(dialect).iter().enumerate() {
            frames.push((dialect, enc_r(i as u16, msg, dialect)));
        }
    }
    frames
}

/// The sample requests of a dialect.
fn requests_of(dialect: Dialect) -> Vec<Tmsg<'static>> {
    match dialect {
        Dialect::L => sample_requests_l(),
        _ => sample_requests(dialect),
    }
}

/// The sample replies of a dialect.
fn replies_of(dialect: Dialect) -> Vec<Rmsg<'static>> {
    match dialect {
        Dialect::L => sample_replies_l(),
        _ => sample_replies(dialect),
    }
}

/// Is this frame a Tfsync, whose datasync[4] may be absent, so that one
/// of its prefixes is whole and a byte after its first form is a datasync
/// cut short (its own test, below, says how)?
fn is_tfsync(frame: &[u8]) -> bool {
    frame[4] == msg::TFSYNC
}

/// The error, if any, of decoding `buf` in the direction of `frame`'s type.
fn decode_err_like(frame: &[u8], buf: &[u8], dialect: Dialect) -> Option<DecodeError> {
    if frame[4].is_multiple_of(2) {
        decode_t(buf, dialect).err()
    } else {
        decode_r(buf, dialect).err()
    }
}

fn with_size(mut frame: Vec<u8>, size: usize) -> Vec<u8> {
    frame[0..4].copy_from_slice(&(size as u32).to_le_bytes());
    frame
}

// ---------------------------------------------------------------------------
// Hand-written vectors from the manual pages.

/// version(5): size[4] Tversion tag[2] msize[4] version[s], tag NOTAG.
const TVERSION_8192: [u8; 19] = [
    19, 0, 0, 0,   // size
    100, // Tversion
    0xff, 0xff, // tag NOTAG
    0x00, 0x20, 0, 0, // msize 8192
    6, 0, b'9', b'P', b'2', b'0', b'0', b'0', // version[s] "9P2000"
];

#[test]
fn tversion_for_8192_bytes_of_9p2000_is_the_manuals_bytes_in_every_dialect() {
    let msg = Tmsg::Version { msize: 8192, version: b"9P2000" };
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_t(&TVERSION_8192, dialect), Ok((NOTAG, msg)));
        assert_eq!(enc_t(NOTAG, &msg, dialect), TVERSION_8192);
    }
}

#[test]
fn rversion_answering_9p2000_u_is_the_manuals_bytes() {
    let bytes = [
        21, 0, 0, 0, 101, 0xff, 0xff, // size, Rversion, tag NOTAG
        0x00, 0x20, 0, 0, // msize 8192
        8, 0, b'9', b'P', b'2', b'0', b'0', b'0', b'.', b'u', // "9P2000.u"
    ];
    let msg = Rmsg::Version { msize: 8192, version: b"9P2000.u" };
    assert_eq!(decode_r(&bytes, Dialect::P2000), Ok((NOTAG, msg)));
    assert_eq!(enc_r(NOTAG, &msg, Dialect::P2000), bytes);
}

/// attach(5): fid[4] afid[4] uname[s] aname[s], and .u's n_uname[4].
const TATTACH_P2000: [u8; 25] = [
    25, 0, 0, 0, 104, 1, 0, // size, Tattach, tag 1
    0, 0, 0, 0, // fid 0
    0xff, 0xff, 0xff, 0xff, // afid NOFID
    6, 0, b'g', b'l', b'e', b'n', b'd', b'a', // uname "glenda"
    0, 0, // aname ""
];
const TATTACH_P2000U: [u8; 29] = [
    29, 0, 0, 0, 104, 1, 0, // size, Tattach, tag 1
    0, 0, 0, 0, // fid 0
    0xff, 0xff, 0xff, 0xff, // afid NOFID
    6, 0, b'g', b'l', b'e', b'n', b'd', b'a', // uname "glenda"
    0, 0, // aname ""
    0xe8, 0x03, 0, 0, // n_uname 1000
];

#[test]
fn tattach_in_9p2000_has_no_n_uname_and_decodes_it_as_nonuname() {
    let msg = Tmsg::Attach { fid: 0, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME };
    assert_eq!(decode_t(&TATTACH_P2000, Dialect::P2000), Ok((1, msg)));
    assert_eq!(enc_t(1, &msg, Dialect::P2000), TATTACH_P2000);
}

#[test]
fn tattach_in_9p2000_u_carries_n_uname_after_aname() {
    let msg = Tmsg::Attach { fid: 0, afid: NOFID, uname: b"glenda", aname: b"", n_uname: 1000 };
    assert_eq!(decode_t(&TATTACH_P2000U, Dialect::P2000u), Ok((1, msg)));
    assert_eq!(enc_t(1, &msg, Dialect::P2000u), TATTACH_P2000U);
}

#[test]
fn tattach_of_the_other_dialect_is_refused_by_length() {
    assert_eq!(decode_t(&TATTACH_P2000U, Dialect::P2000), Err(err(DecodeErrorKind::Trailing, Some(1))));
    assert_eq!(decode_t(&TATTACH_P2000, Dialect::P2000u), Err(err(DecodeErrorKind::Truncated, Some(1))));
}

#[test]
fn tauth_in_9p2000_u_carries_n_uname_after_aname() {
    let bytes = [
        25, 0, 0, 0, 102, 1, 0, // size, Tauth, tag 1
        5, 0, 0, 0, // afid 5
        6, 0, b'g', b'l', b'e', b'n', b'd', b'a', // uname "glenda"
        0, 0, // aname ""
        0xff, 0xff, 0xff, 0xff, // n_uname NONUNAME
    ];
    let msg = Tmsg::Auth { afid: 5, uname: b"glenda", aname: b"", n_uname: NONUNAME };
    assert_eq!(decode_t(&bytes, Dialect::P2000u), Ok((1, msg)));
    assert_eq!(enc_t(1, &msg, Dialect::P2000u), bytes);
}

#[test]
fn rattach_of_the_root_directory_is_the_manuals_bytes() {
    let bytes = [
        20, 0, 0, 0, 105, 1, 0, // size, Rattach, tag 1
        0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // qid: QTDIR, vers 0, path 1
    ];
    let msg = Rmsg::Attach { qid: ROOT_QID };
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_r(&bytes, dialect), Ok((1, msg)));
        assert_eq!(enc_r(1, &msg, dialect), bytes);
    }
}

#[test]
fn twalk_of_two_names_is_the_manuals_bytes() {
    let bytes = [
        35, 0, 0, 0, 110, 2, 0, // size, Twalk, tag 2
        0, 0, 0, 0, // fid 0
        1, 0, 0, 0, // newfid 1
        2, 0, // nwname 2
        6, 0, b'c', b'l', b'a', b'u', b'd', b'e', // "claude"
        8, 0, b'p', b'r', b'o', b'j', b'e', b'c', b't', b's', // "projects"
    ];
    let names = WalkNames::new(&[b"claude", b"projects"]).unwrap();
    let msg = Tmsg::Walk { fid: 0, newfid: 1, names };
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_t(&bytes, dialect), Ok((2, msg)));
        assert_eq!(enc_t(2, &msg, dialect), bytes);
    }
}

#[test]
fn rwalk_of_two_qids_is_the_manuals_bytes() {
    let bytes = [
        35, 0, 0, 0, 111, 2, 0, // size, Rwalk, tag 2
        2, 0, // nwqid 2
        0x80, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, // QTDIR vers 0 path 2
        0x80, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // QTDIR vers 3 path 3
    ];
    let qids = [Qid { ty: QTDIR, version: 0, path: 2 }, Qid { ty: QTDIR, version: 3, path: 3 }];
    let msg = Rmsg::Walk { qids: WalkQids::new(&qids).unwrap() };
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_r(&bytes, dialect), Ok((2, msg)));
        assert_eq!(enc_r(2, &msg, dialect), bytes);
    }
}

#[test]
fn topen_and_ropen_are_the_manuals_bytes() {
    let topen = [12, 0, 0, 0, 112, 3, 0, 1, 0, 0, 0, OREAD];
    let ropen = [
        24, 0, 0, 0, 113, 3, 0, // size, Ropen, tag 3
        0, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // qid: file, vers 7, path 0x0102030405060708
        0, 0, 0, 0, // iounit 0
    ];
    let (t, r) = (Tmsg::Open { fid: 1, mode: OREAD }, Rmsg::Open { qid: FILE_QID, iounit: 0 });
    for dialect in DIALECTS {
        assert_eq!(decode_t(&topen, dialect), Ok((3, t)));
        assert_eq!(decode_r(&ropen, dialect), Ok((3, r)));
        assert_eq!((enc_t(3, &t, dialect), enc_r(3, &r, dialect)), (topen.to_vec(), ropen.to_vec()));
    }
}

#[test]
fn tcreate_in_9p2000_u_carries_an_extension_after_mode() {
    let p2000 = [
        19, 0, 0, 0, 114, 8, 0, // size, Tcreate, tag 8
        1, 0, 0, 0, // fid 1
        1, 0, b'x', // name "x"
        0xa4, 0x01, 0, 0,      // perm 0644
        OWRITE, // mode
    ];
    let p2000u = [&with_size(p2000.to_vec(), 23)[..], &[2, 0, b'a', b'b']].concat(); // extension "ab"
    let t = Tmsg::Create { fid: 1, name: b"x", perm: 0o644, mode: OWRITE, extension: b"" };
    let tu = Tmsg::Create { fid: 1, name: b"x", perm: 0o644, mode: OWRITE, extension: b"ab" };
    assert_eq!(decode_t(&p2000, Dialect::P2000), Ok((8, t)));
    assert_eq!(decode_t(&p2000u, Dialect::P2000u), Ok((8, tu)));
    assert_eq!((enc_t(8, &t, Dialect::P2000), enc_t(8, &tu, Dialect::P2000u)), (p2000.to_vec(), p2000u));
}

#[test]
fn tread_and_rread_are_the_manuals_bytes() {
    let tread = [
        23, 0, 0, 0, 116, 4, 0, // size, Tread, tag 4
        1, 0, 0, 0, // fid 1
        0, 0, 0, 0, 0, 0, 0, 0, // offset 0
        0xe8, 0x1f, 0, 0, // count 8168
    ];
    let rread = [16, 0, 0, 0, 117, 4, 0, 5, 0, 0, 0, b'h', b'e', b'l', b'l', b'o'];
    let (t, r) = (Tmsg::Read { fid: 1, offset: 0, count: 8168 }, Rmsg::Read { data: b"hello" });
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_t(&tread, dialect), Ok((4, t)));
        assert_eq!(decode_r(&rread, dialect), Ok((4, r)));
        assert_eq!((enc_t(4, &t, dialect), enc_r(4, &r, dialect)), (tread.to_vec(), rread.to_vec()));
    }
}

#[test]
fn tflush_rflush_tclunk_rclunk_are_the_manuals_bytes() {
    let tflush = [9, 0, 0, 0, 108, 6, 0, 4, 0];
    let rflush = [7, 0, 0, 0, 109, 6, 0];
    let tclunk = [11, 0, 0, 0, 120, 5, 0, 1, 0, 0, 0];
    let rclunk = [7, 0, 0, 0, 121, 5, 0];
    for dialect in ALL_DIALECTS {
        assert_eq!(decode_t(&tflush, dialect), Ok((6, Tmsg::Flush { oldtag: 4 })));
        assert_eq!(decode_r(&rflush, dialect), Ok((6, Rmsg::Flush)));
        assert_eq!(decode_t(&tclunk, dialect), Ok((5, Tmsg::Clunk { fid: 1 })));
        assert_eq!(decode_r(&rclunk, dialect), Ok((5, Rmsg::Clunk)));
        assert_eq!(enc_t(6, &Tmsg::Flush { oldtag: 4 }, dialect), tflush);
        assert_eq!(enc_r(6, &Rmsg::Flush, dialect), rflush);
        assert_eq!(enc_t(5, &Tmsg::Clunk { fid: 1 }, dialect), tclunk);
        assert_eq!(enc_r(5, &Rmsg::Clunk, dialect), rclunk);
    }
}

/// error(5): ename[s], and in .u errno[4] after it.
const RERROR_P2000: [u8; 28] = [
    28, 0, 0, 0, 107, 3, 0, // size, Rerror, tag 3
    19, 0, b'f', b'i', b'l', b'e', b' ', b'd', b'o', b'e', b's', b' ', // ename[s]
    b'n', b'o', b't', b' ', b'e', b'x', b'i', b's', b't', // "file does not exist"
];

#[test]
fn rerror_in_9p2000_is_the_text_alone() {
    let msg = Rmsg::Error { ename: b"file does not exist", errno: 0 };
    assert_eq!(decode_r(&RERROR_P2000, Dialect::P2000), Ok((3, msg)));
    assert_eq!(enc_r(3, &msg, Dialect::P2000), RERROR_P2000);
}

#[test]
fn rerror_in_9p2000_u_carries_the_errno_after_the_text() {
    let bytes = [&with_size(RERROR_P2000.to_vec(), 32)[..], &[2, 0, 0, 0]].concat(); // errno ENOENT
    let msg = Rmsg::Error { ename: b"file does not exist", errno: 2 };
    assert_eq!(decode_r(&bytes, Dialect::P2000u), Ok((3, msg)));
    assert_eq!(enc_r(3, &msg, Dialect::P2000u), bytes);
    assert_eq!(decode_r(&bytes, Dialect::P2000), Err(err(DecodeErrorKind::Trailing, Some(3))));
    assert_eq!(decode_r(&RERROR_P2000, Dialect::P2000u), Err(err(DecodeErrorKind::Truncated, Some(3))));
}

/// stat(5): the README stat after its size[2], common to both dialects.
const README_STAT_FIELDS: [u8; 65] = [
    0, 0, // type
    0, 0, 0, 0, // dev
    0, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // qid: file, vers 7, path 0x0102030405060708
    0x24, 0x01, 0, 0, // mode 0444
    0x00, 0xf1, 0x53, 0x65, // atime 1700000000
    0x00, 0xf1, 0x53, 0x65, // mtime 1700000000
    120, 0, 0, 0, 0, 0, 0, 0, // length 120
    6, 0, b'R', b'E', b'A', b'D', b'M', b'E', // name
    6, 0, b'a', b'g', b'e', b'n', b't', b's', // uid
    6, 0, b'a', b'g', b'e', b'n', b't', b's', // gid
    0, 0, // muid ""
];
/// 9P2000.u's tail: extension[s] n_uid[4] n_gid[4] n_muid[4].
const README_STAT_U_TAIL: [u8; 14] = [
    0, 0, // extension ""
    0xe8, 0x03, 0, 0, // n_uid 1000
    0xe8, 0x03, 0, 0, // n_gid 1000
    0xff, 0xff, 0xff, 0xff, // n_muid NONUNAME
];

fn readme_stat_bytes(dialect: Dialect) -> Vec<u8> {
    match dialect {
        Dialect::P2000 => [&[65, 0][..], &README_STAT_FIELDS].concat(),
        Dialect::P2000u | Dialect::L => [&[79, 0][..], &README_STAT_FIELDS, &README_STAT_U_TAIL].concat(),
    }
}

#[test]
fn a_stat_is_the_manuals_bytes_in_both_dialects() {
    for dialect in DIALECTS {
        let bytes = readme_stat_bytes(dialect);
        assert_eq!(decode_stat(&bytes, dialect), Ok((readme_stat(dialect), bytes.len())));
        let mut out = Vec::new();
        encode_stat(&mut out, &readme_stat(dialect), dialect);
        assert_eq!((out.len(), &out), (stat_size(&readme_stat(dialect), dialect), &bytes));
    }
}

#[test]
fn rstat_counts_the_stat_again_before_the_stats_own_size() {
    let p2000 = [&[76, 0, 0, 0, 125, 7, 0, 67, 0][..], &readme_stat_bytes(Dialect::P2000)].concat();
    let p2000u = [&[90, 0, 0, 0, 125, 7, 0, 81, 0][..], &readme_stat_bytes(Dialect::P2000u)].concat();
    for (dialect, bytes) in [(Dialect::P2000, p2000), (Dialect::P2000u, p2000u)] {
        let msg = Rmsg::Stat { stat: readme_stat(dialect) };
        assert_eq!(decode_r(&bytes, dialect), Ok((7, msg)));
        assert_eq!(enc_r(7, &msg, dialect), bytes);
    }
}

#[test]
fn tstat_is_the_manuals_bytes() {
    let bytes = [11, 0, 0, 0, 124, 7, 0, 0, 0, 0, 0];
    for dialect in DIALECTS {
        assert_eq!(decode_t(&bytes, dialect), Ok((7, Tmsg::Stat { fid: 0 })));
        assert_eq!(enc_t(7, &Tmsg::Stat { fid: 0 }, dialect), bytes);
    }
}

// ---------------------------------------------------------------------------
// 9P2000.L, by hand from diod's protocol.md and the formats of Linux's
// net/9p/client.c (`"dd"` for Tlopen, `"A"` for Rgetattr, ...).

#[test]
fn each_dialect_is_negotiated_by_its_exact_name_and_the_family_by_its_prefix() {
    let asked: [&[u8]; 7] = [b"9P2000.L", b"9P2000.u", b"9P2000", b"9P2000.X", b"9P2000.l", b"9P1999", b""];
    let got = asked.map(Dialect::negotiate);
    let (l, u, p) = (Some(Dialect::L), Some(Dialect::P2000u), Some(Dialect::P2000));
    assert_eq!(got, [l, u, p, p, p, None, None]);
}

#[test]
fn each_dialect_answers_the_name_it_is_negotiated_by() {
    let names = ALL_DIALECTS.map(Dialect::version);
    assert_eq!(names, ["9P2000", "9P2000.u", "9P2000.L"]);
    assert_eq!(names.map(|v| Dialect::negotiate(v.as_bytes())), ALL_DIALECTS.map(Some));
}

#[test]
fn tattach_in_9p2000_l_carries_n_uname_after_aname_as_in_u() {
    let msg = Tmsg::Attach { fid: 0, afid: NOFID, uname: b"glenda", aname: b"", n_uname: 1000 };
    assert_eq!(decode_t(&TATTACH_P2000U, Dialect::L), Ok((1, msg)));
    assert_eq!(enc_t(1, &msg, Dialect::L), TATTACH_P2000U);
    assert_eq!(decode_t(&TATTACH_P2000, Dialect::L), Err(err(DecodeErrorKind::Truncated, Some(1))));
}

#[test]
fn tlopen_and_rlopen_are_fid_and_linux_flags_then_qid_and_iounit() {
    let tlopen = [
        15, 0, 0, 0, 12, 1, 0, // size, Tlopen, tag 1
        5, 0, 0, 0, // fid 5
        0x00, 0x80, 0, 0, // flags 0100000 (O_LARGEFILE, as a Linux cat sends)
    ];
    let rlopen = [
        24, 0, 0, 0, 13, 1, 0, // size, Rlopen, tag 1
        0, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // qid: file, vers 7, path 0x0102030405060708
        0, 0, 0, 0, // iounit 0
    ];
    let (t, r) = (Tmsg::Lopen { fid: 5, flags: DOTL_LARGEFILE }, Rmsg::Lopen { qid: FILE_QID, iounit: 0 });
    assert_eq!((decode_t(&tlopen, Dialect::L), decode_r(&rlopen, Dialect::L)), (Ok((1, t)), Ok((1, r))));
    assert_eq!((enc_t(1, &t, Dialect::L), enc_r(1, &r, Dialect::L)), (tlopen.to_vec(), rlopen.to_vec()));
}

/// Rgetattr of the README: valid[8] qid[13] mode[4] uid[4] gid[4] and
/// fifteen [8]s, Linux's "qQdugqqqqqqqqqqqqqqq".
const RGETATTR_README: [u8; 160] = [
    160, 0, 0, 0, 25, 1, 0, // size, Rgetattr, tag 1
    0xff, 0x07, 0, 0, 0, 0, 0, 0, // valid GETATTR_BASIC
    0, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // qid: file, vers 7, path 0x0102030405060708
    0x24, 0x81, 0, 0, // mode 0100444 (S_IFREG | 0444)
    0xe8, 0x03, 0, 0, // uid 1000
    0xe9, 0x03, 0, 0, // gid 1001
    1, 0, 0, 0, 0, 0, 0, 0, // nlink 1
    0, 0, 0, 0, 0, 0, 0, 0, // rdev 0
    120, 0, 0, 0, 0, 0, 0, 0, // size 120
    0x00, 0x10, 0, 0, 0, 0, 0, 0, // blksize 4096
    8, 0, 0, 0, 0, 0, 0, 0, // blocks 8
    0x00, 0xf1, 0x53, 0x65, 0, 0, 0, 0, // atime_sec 1700000000
    1, 0, 0, 0, 0, 0, 0, 0, // atime_nsec 1
    0x02, 0xf1, 0x53, 0x65, 0, 0, 0, 0, // mtime_sec 1700000002
    3, 0, 0, 0, 0, 0, 0, 0, // mtime_nsec 3
    0x04, 0xf1, 0x53, 0x65, 0, 0, 0, 0, // ctime_sec 1700000004
    5, 0, 0, 0, 0, 0, 0, 0, // ctime_nsec 5
    0, 0, 0, 0, 0, 0, 0, 0, // btime_sec
    0, 0, 0, 0, 0, 0, 0, 0, // btime_nsec
    0, 0, 0, 0, 0, 0, 0, 0, // gen
    0, 0, 0, 0, 0, 0, 0, 0, // data_version
];

#[test]
fn rgetattr_is_every_field_in_linuxs_order() {
    let msg = Rmsg::Getattr(README_GETATTR);
    assert_eq!(decode_r(&RGETATTR_README, Dialect::L), Ok((1, msg)));
    assert_eq!(enc_r(1, &msg, Dialect::L), RGETATTR_README);
}

#[test]
fn tgetattr_is_fid_and_an_eight_byte_request_mask() {
    let bytes = [19, 0, 0, 0, 24, 1, 0, 0, 0, 0, 0, 0xff, 0x3f, 0, 0, 0, 0, 0, 0]; // fid 0, mask GETATTR_ALL
    let msg = Tmsg::Getattr { fid: 0, mask: GETATTR_ALL };
    assert_eq!(decode_t(&bytes, Dialect::L), Ok((1, msg)));
    assert_eq!(enc_t(1, &msg, Dialect::L), bytes);
}

#[test]
fn treaddir_is_fid_offset_and_count() {
    let bytes = [
        23, 0, 0, 0, 40, 5, 0, // size, Treaddir, tag 5
        2, 0, 0, 0, // fid 2
        0, 0, 0, 0, 0, 0, 0, 0, // offset 0
        0xe8, 0x1f, 0, 0, // count 8168
    ];
    let msg = Tmsg::Readdir { fid: 2, offset: 0, count: 8168 };
    assert_eq!(decode_t(&bytes, Dialect::L), Ok((5, msg)));
    assert_eq!(enc_t(5, &msg, Dialect::L), bytes);
}

/// Two Rreaddir entries, qid[13] offset[8] type[1] name[s] each: the root
/// `.` and the README file.
const TWO_DIRENTS: [u8; 55] = [
    0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // qid: QTDIR vers 0 path 1
    1, 0, 0, 0, 0, 0, 0, 0, // offset 1
    4, // type DT_DIR
    1, 0, b'.', // name "."
    0, 7, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // qid: file, vers 7, path 0x0102030405060708
    2, 0, 0, 0, 0, 0, 0, 0, // offset 2
    8, // type DT_REG
    6, 0, b'R', b'E', b'A', b'D', b'M', b'E', // name "README"
];

fn two_dirents() -> [Dirent<'static>; 2] {
    [
        Dirent { qid: ROOT_QID, offset: 1, ty: 4, name: b"." },
        Dirent { qid: FILE_QID, offset: 2, ty: 8, name: b"README" },
    ]
}

fn rreaddir_of_two_entries() -> Vec<u8> {
    [&[66, 0, 0, 0, 41, 5, 0, 55, 0, 0, 0][..], &TWO_DIRENTS].concat() // size, Rreaddir, tag 5, count 55
}

#[test]
fn rreaddir_of_two_entries_is_a_count_then_the_entries_back_to_back() {
    let bytes = rreaddir_of_two_entries();
    let msg = Rmsg::Readdir { data: &TWO_DIRENTS };
    assert_eq!(decode_r(&bytes, Dialect::L), Ok((5, msg)));
    assert_eq!(enc_r(5, &msg, Dialect::L), bytes);
    assert_eq!(decode_dirents(&TWO_DIRENTS).collect::<Vec<_>>(), two_dirents().map(Ok));
}

#[test]
fn rreaddir_built_in_place_equals_the_encoded_rreaddir() {
    let mut out = enc_r(1, &Rmsg::Flush, Dialect::L);
    let start = rreaddir_begin(&mut out, 5);
    for d in two_dirents() {
        let before = out.len();
        encode_dirent(&mut out, d.qid, d.offset, d.ty, d.name);
        assert_eq!(out.len() - before, dirent_size(d.name), "{d:?}");
    }
    rreaddir_finish(&mut out, start);
    assert_eq!(out[start..], rreaddir_of_two_entries());
}

#[test]
fn rreaddir_built_in_place_with_no_entries_is_a_zero_count() {
    let mut out = Vec::new();
    let start = rreaddir_begin(&mut out, 9);
    rreaddir_finish(&mut out, start);
    assert_eq!(out, [11, 0, 0, 0, 41, 9, 0, 0, 0, 0, 0]);
}

#[test]
#[should_panic(expected = "a counted reply finished as a type it was not begun as")]
fn an_rread_finished_as_an_rreaddir_is_a_loud_bug() {
    let mut out = Vec::new();
    let start = rread_begin(&mut out, 9);
    rreaddir_finish(&mut out, start);
}

#[test]
fn every_cut_of_the_first_entry_is_truncated_and_ends_the_run() {
    for len in 1..25 {
        let got: Vec<_> = decode_dirents(&TWO_DIRENTS[..len]).collect();
        assert_eq!(got, [Err(err(DecodeErrorKind::Truncated, None))], "cut to {len}");
    }
}

#[test]
fn every_cut_of_the_second_entry_yields_the_first_then_truncated() {
    let [first, _] = two_dirents();
    for len in 26..TWO_DIRENTS.len() {
        let got: Vec<_> = decode_dirents(&TWO_DIRENTS[..len]).collect();
        assert_eq!(got, [Ok(first), Err(err(DecodeErrorKind::Truncated, None))], "cut to {len}");
    }
}

#[test]
fn an_entrys_name_length_running_past_the_data_is_truncated() {
    let mut data = TWO_DIRENTS;
    data[22] = 0xff; // the first name's len[2], now 255 bytes
    let got: Vec<_> = decode_dirents(&data).collect();
    assert_eq!(got, [Err(err(DecodeErrorKind::Truncated, None))]);
}

#[test]
fn tlock_is_linuxs_fid_type_flags_start_length_proc_id_client_id() {
    let bytes = [
        42, 0, 0, 0, 52, 6, 0, // size, Tlock, tag 6
        3, 0, 0, 0, // fid 3
        1, // type WRLCK
        1, 0, 0, 0, // flags BLOCK
        0, 0, 0, 0, 0, 0, 0, 0, // start 0
        10, 0, 0, 0, 0, 0, 0, 0, // length 10
        0x92, 0x10, 0, 0, // proc_id 4242
        4, 0, b'h', b'o', b's', b't', // client_id "host"
    ];
    let msg = Tmsg::Lock {
        fid: 3,
        ty: LOCK_TYPE_WRLCK,
        flags: LOCK_FLAGS_BLOCK,
        start: 0,
        length: 10,
        proc_id: 4242,
        client_id: b"host",
    };
    assert_eq!(decode_t(&bytes, Dialect::L), Ok((6, msg)));
    assert_eq!(enc_t(6, &msg, Dialect::L), bytes);
}

#[test]
fn rlock_is_its_status_byte() {
    let bytes = [8, 0, 0, 0, 53, 6, 0, LOCK_BLOCKED];
    assert_eq!(decode_r(&bytes, Dialect::L), Ok((6, Rmsg::Lock { status: LOCK_BLOCKED })));
    assert_eq!(enc_r(6, &Rmsg::Lock { status: LOCK_BLOCKED }, Dialect::L), bytes);
}

/// Rlerror ENOENT on tag 3: ecode[4] and no text.
const RLERROR_ENOENT: [u8; 11] = [11, 0, 0, 0, 7, 3, 0, 2, 0, 0, 0];

#[test]
fn rlerror_is_the_errno_alone() {
    assert_eq!(decode_r(&RLERROR_ENOENT, Dialect::L), Ok((3, Rmsg::Lerror { ecode: 2 })));
    assert_eq!(enc_r(3, &Rmsg::Lerror { ecode: 2 }, Dialect::L), RLERROR_ENOENT);
}

#[test]
fn an_error_in_9p2000_l_is_sent_as_rlerror_with_its_errno_and_without_its_text() {
    let msg = Rmsg::Error { ename: b"file does not exist", errno: 2 };
    assert_eq!(enc_r(3, &msg, Dialect::L), RLERROR_ENOENT);
}

#[test]
#[should_panic(expected = "an Rlerror needs an errno")]
fn an_error_without_an_errno_cannot_be_sent_in_9p2000_l() {
    enc_r(3, &Rmsg::Error { ename: b"file does not exist", errno: 0 }, Dialect::L);
}

/// Tfsync of fid 1 as first specified (fid[4] alone) and as Linux sends
/// it (with datasync[4] 1).
const TFSYNC_FID_ONLY: [u8; 11] = [11, 0, 0, 0, 50, 4, 0, 1, 0, 0, 0];
const TFSYNC_DATASYNC: [u8; 15] = [15, 0, 0, 0, 50, 4, 0, 1, 0, 0, 0, 1, 0, 0, 0];

#[test]
fn tfsync_decodes_with_and_without_datasync_and_encodes_as_it_came() {
    let (short, long) = (Tmsg::Fsync { fid: 1, datasync: None }, Tmsg::Fsync { fid: 1, datasync: Some(1) });
    assert_eq!(decode_t(&TFSYNC_FID_ONLY, Dialect::L), Ok((4, short)));
    assert_eq!(decode_t(&TFSYNC_DATASYNC, Dialect::L), Ok((4, long)));
    assert_eq!(
        (enc_t(4, &short, Dialect::L), enc_t(4, &long, Dialect::L)),
        (TFSYNC_FID_ONLY.to_vec(), TFSYNC_DATASYNC.to_vec())
    );
}

#[test]
fn a_tfsync_cut_anywhere_but_after_its_fid_is_truncated() {
    for len in (HEADER_LEN..11).chain(12..15) {
        let cut = with_size(TFSYNC_DATASYNC[..len].to_vec(), len);
        assert_eq!(decode_t(&cut, Dialect::L), Err(err(DecodeErrorKind::Truncated, Some(4))), "cut to {len}");
    }
}

#[test]
fn a_tfsync_with_a_byte_after_datasync_is_trailing() {
    let padded = with_size([&TFSYNC_DATASYNC[..], &[0]].concat(), 16);
    assert_eq!(decode_t(&padded, Dialect::L), Err(err(DecodeErrorKind::Trailing, Some(4))));
}

/// Every 9P2000.L type number, requests and replies.
const L_TYPES: [u8; 39] = [
    msg::RLERROR,
    msg::TSTATFS,
    msg::RSTATFS,
    msg::TLOPEN,
    msg::RLOPEN,
    msg::TLCREATE,
    msg::RLCREATE,
    msg::TSYMLINK,
    msg::RSYMLINK,
    msg::TMKNOD,
    msg::RMKNOD,
    msg::TRENAME,
    msg::RRENAME,
    msg::TREADLINK,
    msg::RREADLINK,
    msg::TGETATTR,
    msg::RGETATTR,
    msg::TSETATTR,
    msg::RSETATTR,
    msg::TXATTRWALK,
    msg::RXATTRWALK,
    msg::TXATTRCREATE,
    msg::RXATTRCREATE,
    msg::TREADDIR,
    msg::RREADDIR,
    msg::TFSYNC,
    msg::RFSYNC,
    msg::TLOCK,
    msg::RLOCK,
    msg::TGETLOCK,
    msg::RGETLOCK,
    msg::TLINK,
    msg::RLINK,
    msg::TMKDIR,
    msg::RMKDIR,
    msg::TRENAMEAT,
    msg::RRENAMEAT,
    msg::TUNLINKAT,
    msg::RUNLINKAT,
];

#[test]
fn every_l_message_is_an_unknown_type_in_9p2000_and_u() {
    let l_only = sample_frames().into_iter().filter(|(dialect, frame)| *dialect == Dialect::L && frame[4] < 100);
    for (_, frame) in l_only {
        let (ty, tag) = (frame[4], u16::from_le_bytes([frame[5], frame[6]]));
        for dialect in DIALECTS {
            let got = decode_err_like(&frame, &frame, dialect);
            assert_eq!(got, Some(err(DecodeErrorKind::UnknownType(ty), Some(tag))), "{frame:?} in {dialect:?}");
        }
    }
}

#[test]
fn every_l_type_number_is_unknown_in_9p2000_and_u_in_both_directions() {
    for ty in L_TYPES {
        let bytes = [7, 0, 0, 0, ty, 3, 0];
        for dialect in DIALECTS {
            assert_eq!(decode_t(&bytes, dialect), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))), "{ty}");
            assert_eq!(decode_r(&bytes, dialect), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))), "{ty}");
        }
    }
}

#[test]
fn topen_and_tstat_are_unknown_types_in_9p2000_l() {
    let topen = enc_t(3, &Tmsg::Open { fid: 1, mode: OREAD }, Dialect::P2000u);
    let tstat = enc_t(7, &Tmsg::Stat { fid: 0 }, Dialect::P2000u);
    assert_eq!(decode_t(&topen, Dialect::L), Err(err(DecodeErrorKind::UnknownType(msg::TOPEN), Some(3))));
    assert_eq!(decode_t(&tstat, Dialect::L), Err(err(DecodeErrorKind::UnknownType(msg::TSTAT), Some(7))));
}

#[test]
fn every_message_9p2000_l_drops_is_an_unknown_type_there_in_both_directions() {
    let dropped =
        [msg::TOPEN, msg::ROPEN, msg::TCREATE, msg::RCREATE, msg::TSTAT, msg::RSTAT, msg::TWSTAT, msg::RWSTAT];
    for ty in dropped.into_iter().chain([msg::RERROR]) {
        let bytes = [7, 0, 0, 0, ty, 3, 0];
        assert_eq!(decode_t(&bytes, Dialect::L), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))), "{ty}");
        assert_eq!(decode_r(&bytes, Dialect::L), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))), "{ty}");
    }
}

#[test]
fn an_rerror_is_unknown_in_9p2000_l_where_errors_are_rlerror() {
    let rerror = enc_r(3, &Rmsg::Error { ename: b"file does not exist", errno: 2 }, Dialect::P2000u);
    assert_eq!(decode_r(&rerror, Dialect::L), Err(err(DecodeErrorKind::UnknownType(msg::RERROR), Some(3))));
}

#[test]
fn an_l_reply_sent_as_a_request_is_the_wrong_direction() {
    let rlopen = enc_r(1, &Rmsg::Lopen { qid: FILE_QID, iounit: 0 }, Dialect::L);
    let tlopen = enc_t(1, &Tmsg::Lopen { fid: 5, flags: 0 }, Dialect::L);
    assert_eq!(decode_t(&rlopen, Dialect::L), Err(err(DecodeErrorKind::WrongDirection(msg::RLOPEN), Some(1))));
    assert_eq!(decode_r(&tlopen, Dialect::L), Err(err(DecodeErrorKind::WrongDirection(msg::TLOPEN), Some(1))));
}

#[test]
fn l_traces_read_like_diods() {
    let lines = [
        trace_t(1, &Tmsg::Getattr { fid: 0, mask: GETATTR_BASIC }).to_string(),
        trace_r(1, &Rmsg::Lerror { ecode: 2 }).to_string(),
        trace_t(1, &Tmsg::Lopen { fid: 5, flags: DOTL_LARGEFILE }).to_string(),
        trace_t(1, &Tmsg::Lcreate { fid: 2, name: b"foo", flags: 0x8241, mode: 0o100644, gid: 500 }).to_string(),
        trace_t(1, &Tmsg::Readdir { fid: 2, offset: 0, count: 65488 }).to_string(),
        trace_r(1, &Rmsg::Readdir { data: &TWO_DIRENTS }).to_string(),
        trace_t(4, &Tmsg::Fsync { fid: 1, datasync: None }).to_string(),
        trace_t(4, &Tmsg::Fsync { fid: 1, datasync: Some(1) }).to_string(),
    ];
    assert_eq!(
        lines,
        [
            "Tgetattr tag 1 fid 0 request_mask 0x7ff",
            "Rlerror tag 1 ecode 2",
            "Tlopen tag 1 fid 5 flags 0100000",
            "Tlcreate tag 1 fid 2 name 'foo' flags 0101101 mode 0100644 gid 500",
            "Treaddir tag 1 fid 2 offset 0 count 65488",
            "Rreaddir tag 1 count 55",
            "Tfsync tag 4 fid 1",
            "Tfsync tag 4 fid 1 datasync 1",
        ]
    );
}

#[test]
fn rgetattr_trace_shows_every_field_in_wire_order() {
    let line = trace_r(1, &Rmsg::Getattr(README_GETATTR)).to_string();
    let want = "Rgetattr tag 1 valid 0x7ff qid (0102030405060708 7 ) mode 0100444 uid 1000 gid 1001 \
                nlink 1 rdev 0 size 120 blksize 4096 blocks 8 atime 1700000000.000000001 \
                mtime 1700000002.000000003 ctime 1700000004.000000005 btime 0.000000000 gen 0 data_version 0";
    assert_eq!(line, want);
}

#[test]
fn every_l_message_type_has_a_trace_name_of_its_own() {
    let t = sample_requests_l().into_iter().map(|m| (enc_t(0, &m, Dialect::L)[4], trace_t(0, &m).to_string()));
    let r = sample_replies_l().into_iter().map(|m| (enc_r(0, &m, Dialect::L)[4], trace_r(0, &m).to_string()));
    let named: std::collections::BTreeSet<(u8, String)> =
        t.chain(r).map(|(ty, line)| (ty, line.split(' ').next().unwrap_or_default().to_owned())).collect();
    let types: std::collections::BTreeSet<u8> = named.iter().map(|(ty, _)| *ty).collect();
    let names: std::collections::BTreeSet<&str> = named.iter().map(|(_, name)| name.as_str()).collect();
    assert_eq!((named.len(), names.len()), (types.len(), types.len()), "{named:?}");
    assert!(named.iter().all(|(ty, name)| name.starts_with(if ty % 2 == 0 { 'T' } else { 'R' })), "{named:?}");
}

// ---------------------------------------------------------------------------
// Round trips.

#[test]
fn every_request_survives_a_round_trip_in_every_dialect() {
    for dialect in ALL_DIALECTS {
        for (tag, msg) in requests_of(dialect).iter().enumerate() {
            let bytes = enc_t(tag as u16, msg, dialect);
            assert_eq!(decode_t(&bytes, dialect), Ok((tag as u16, *msg)), "{dialect:?} {msg:?}");
        }
    }
}

#[test]
fn every_reply_survives_a_round_trip_in_every_dialect() {
    for dialect in ALL_DIALECTS {
        for (tag, msg) in replies_of(dialect).iter().enumerate() {
            let bytes = enc_r(tag as u16, msg, dialect);
            assert_eq!(decode_r(&bytes, dialect), Ok((tag as u16, *msg)), "{dialect:?} {msg:?}");
        }
    }
}

#[test]
fn a_u_stat_keeps_its_extension_and_numeric_ids_through_twstat_and_rstat() {
    let stat = symlink_stat();
    let t = Tmsg::Wstat { fid: 3, stat };
    let r = Rmsg::Stat { stat };
    assert_eq!(decode_t(&enc_t(1, &t, Dialect::P2000u), Dialect::P2000u), Ok((1, t)));
    assert_eq!(decode_r(&enc_r(1, &r, Dialect::P2000u), Dialect::P2000u), Ok((1, r)));
}

#[test]
fn a_directory_read_of_two_stats_decodes_one_entry_at_a_time() {
    let mut buf = Vec::new();
    encode_stat(&mut buf, &readme_stat(Dialect::P2000u), Dialect::P2000u);
    encode_stat(&mut buf, &symlink_stat(), Dialect::P2000u);
    let (first, used) = decode_stat(&buf, Dialect::P2000u).unwrap();
    let (second, rest) = decode_stat(&buf[used..], Dialect::P2000u).unwrap();
    assert_eq!((first, second, used + rest), (readme_stat(Dialect::P2000u), symlink_stat(), buf.len()));
}

#[test]
fn rread_built_in_place_equals_the_encoded_rread() {
    let mut out = enc_r(1, &Rmsg::Flush, Dialect::P2000);
    let start = rread_begin(&mut out, 9);
    out.extend_from_slice(b"file bytes");
    rread_finish(&mut out, start);
    assert_eq!(out[start..], enc_r(9, &Rmsg::Read { data: b"file bytes" }, Dialect::P2000));
}

#[test]
fn rread_built_in_place_with_no_data_is_a_zero_count() {
    let mut out = Vec::new();
    let start = rread_begin(&mut out, 9);
    rread_finish(&mut out, start);
    assert_eq!(out, [11, 0, 0, 0, 117, 9, 0, 0, 0, 0, 0]);
}

// ---------------------------------------------------------------------------
// Hostile input: truncation, padding, lies about lengths.

#[test]
fn every_prefix_of_every_message_is_truncated_with_its_tag_once_the_header_is_whole() {
    for (dialect, frame) in sample_frames() {
        let tag = u16::from_le_bytes([frame[5], frame[6]]);
        for len in 0..frame.len() {
            let want = err(DecodeErrorKind::Truncated, (len >= HEADER_LEN).then_some(tag));
            let got = decode_err_like(&frame, &frame[..len], dialect);
            assert_eq!(got, Some(want), "{dialect:?} {frame:?} cut to {len}");
        }
    }
}

#[test]
fn every_prefix_whose_size_field_agrees_is_still_truncated() {
    for (dialect, frame) in sample_frames().into_iter().filter(|(_, frame)| !is_tfsync(frame)) {
        let tag = u16::from_le_bytes([frame[5], frame[6]]);
        for len in HEADER_LEN..frame.len() {
            let cut = with_size(frame[..len].to_vec(), len);
            let got = decode_err_like(&frame, &cut, dialect);
            assert_eq!(got, Some(err(DecodeErrorKind::Truncated, Some(tag))), "{dialect:?} {cut:?}");
        }
    }
}

#[test]
fn a_trailing_byte_after_every_message_is_trailing() {
    for (dialect, frame) in sample_frames().into_iter().filter(|(_, frame)| !is_tfsync(frame)) {
        let tag = u16::from_le_bytes([frame[5], frame[6]]);
        let len = frame.len();
        let unsized_pad = [&frame[..], &[0]].concat();
        let sized_pad = with_size(unsized_pad.clone(), len + 1);
        for padded in [unsized_pad, sized_pad] {
            let got = decode_err_like(&frame, &padded, dialect);
            assert_eq!(got, Some(err(DecodeErrorKind::Trailing, Some(tag))), "{dialect:?} {padded:?}");
        }
    }
}

#[test]
fn every_prefix_of_a_stat_is_truncated_and_a_padded_stat_is_trailing() {
    for dialect in DIALECTS {
        let bytes = readme_stat_bytes(dialect);
        for len in 0..bytes.len() {
            assert_eq!(decode_stat(&bytes[..len], dialect), Err(err(DecodeErrorKind::Truncated, None)));
            if len >= 2 {
                let mut lying = bytes[..len].to_vec();
                lying[0..2].copy_from_slice(&(len as u16 - 2).to_le_bytes());
                assert_eq!(decode_stat(&lying, dialect), Err(err(DecodeErrorKind::Truncated, None)));
            }
        }
        let mut padded = [&bytes[..], &[0]].concat();
        padded[0..2].copy_from_slice(&(bytes.len() as u16 - 1).to_le_bytes());
        assert_eq!(decode_stat(&padded, dialect), Err(err(DecodeErrorKind::Trailing, None)));
    }
}

#[test]
fn rstat_whose_count_disagrees_with_the_stats_size_is_refused() {
    let stat = readme_stat_bytes(Dialect::P2000);
    let n_over = [&[77, 0, 0, 0, 125, 7, 0, 68, 0][..], &stat, &[0]].concat();
    let n_under = [&[75, 0, 0, 0, 125, 7, 0, 66, 0][..], &stat[..66]].concat();
    assert_eq!(decode_r(&n_over, Dialect::P2000), Err(err(DecodeErrorKind::Trailing, Some(7))));
    assert_eq!(decode_r(&n_under, Dialect::P2000), Err(err(DecodeErrorKind::Truncated, Some(7))));
}

#[test]
fn walk_with_seventeen_names_is_refused_with_its_tag() {
    let sixteen = Tmsg::Walk { fid: 0, newfid: 1, names: WalkNames::new(&SIXTEEN_NAMES).unwrap() };
    let mut names = enc_t(2, &sixteen, Dialect::P2000);
    names[15] = 17; // nwname, with only sixteen names behind it
    let bare = [17, 0, 0, 0, 110, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 17, 0]; // nwname 17, no names at all
    assert_eq!(decode_t(&names, Dialect::P2000), Err(err(DecodeErrorKind::TooManyNames(17), Some(2))));
    assert_eq!(decode_t(&bare, Dialect::P2000), Err(err(DecodeErrorKind::TooManyNames(17), Some(2))));
}

#[test]
fn walk_with_nwname_65535_is_refused_before_any_name_is_read() {
    let bytes = [17, 0, 0, 0, 110, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff];
    assert_eq!(decode_t(&bytes, Dialect::P2000u), Err(err(DecodeErrorKind::TooManyNames(0xffff), Some(2))));
}

#[test]
fn rwalk_with_seventeen_qids_is_refused_with_its_tag() {
    let bytes = [9, 0, 0, 0, 111, 2, 0, 17, 0];
    assert_eq!(decode_r(&bytes, Dialect::P2000), Err(err(DecodeErrorKind::TooManyNames(17), Some(2))));
}

#[test]
fn a_reply_sent_as_a_request_is_the_wrong_direction_with_its_tag() {
    let rversion = enc_r(NOTAG, &Rmsg::Version { msize: 8192, version: b"9P2000" }, Dialect::P2000);
    assert_eq!(decode_t(&rversion, Dialect::P2000), Err(err(DecodeErrorKind::WrongDirection(101), Some(NOTAG))));
    assert_eq!(decode_r(&TVERSION_8192, Dialect::P2000), Err(err(DecodeErrorKind::WrongDirection(100), Some(NOTAG))));
}

#[test]
fn terror_and_numbers_outside_every_dialect_are_unknown_in_both_directions() {
    for ty in [msg::TERROR, msg::TLERROR, 0, 5, 10, 11, 28, 29, 78, 99, 128, 255] {
        let bytes = [7, 0, 0, 0, ty, 3, 0];
        for dialect in ALL_DIALECTS {
            assert_eq!(decode_t(&bytes, dialect), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))));
            assert_eq!(decode_r(&bytes, dialect), Err(err(DecodeErrorKind::UnknownType(ty), Some(3))));
        }
    }
}

#[test]
fn a_string_running_past_the_end_is_truncated() {
    let bytes = [13, 0, 0, 0, 100, 0xff, 0xff, 0, 0x20, 0, 0, 0xff, 0xff]; // version[s] of 65535 bytes
    assert_eq!(decode_t(&bytes, Dialect::P2000), Err(err(DecodeErrorKind::Truncated, Some(NOTAG))));
}

#[test]
fn a_write_whose_count_runs_past_the_end_is_truncated() {
    let bytes = [
        25, 0, 0, 0, 118, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // header, fid 1, offset 0
        0xff, 0xff, 0xff, 0xff, b'h', b'i', // count 4294967295, two bytes of data
    ];
    assert_eq!(decode_t(&bytes, Dialect::P2000), Err(err(DecodeErrorKind::Truncated, Some(1))));
}

#[test]
fn a_size_field_shorter_than_the_buffer_is_trailing_and_longer_is_truncated() {
    let short = with_size(TVERSION_8192.to_vec(), 18);
    let long = with_size(TVERSION_8192.to_vec(), 20);
    assert_eq!(decode_t(&short, Dialect::P2000), Err(err(DecodeErrorKind::Trailing, Some(NOTAG))));
    assert_eq!(decode_t(&long, Dialect::P2000), Err(err(DecodeErrorKind::Truncated, Some(NOTAG))));
}

// ---------------------------------------------------------------------------
// Framing.

#[test]
fn frame_size_waits_for_four_bytes() {
    assert_eq!(frame_size(&[], 8192), Ok(None));
    assert_eq!(frame_size(&[19, 0, 0], 8192), Ok(None));
}

#[test]
fn frame_size_under_the_header_is_too_small() {
    assert_eq!(frame_size(&[6, 0, 0, 0], 8192), Err(FrameError::TooSmall(6)));
    assert_eq!(frame_size(&[0, 0, 0, 0], 8192), Err(FrameError::TooSmall(0)));
}

#[test]
fn frame_size_of_a_bare_header_is_accepted_before_the_rest_arrives() {
    assert_eq!(frame_size(&[7, 0, 0, 0], 8192), Ok(Some(7)));
    assert_eq!(frame_size(&TVERSION_8192[..5], 8192), Ok(Some(19)));
}

#[test]
fn frame_size_of_exactly_msize_is_accepted_and_one_more_is_too_large() {
    assert_eq!(frame_size(&[0x00, 0x20, 0, 0], 8192), Ok(Some(8192)));
    assert_eq!(frame_size(&[0x01, 0x20, 0, 0], 8192), Err(FrameError::TooLarge(8193)));
    assert_eq!(frame_size(&[0xff, 0xff, 0xff, 0xff], 8192), Err(FrameError::TooLarge(u32::MAX)));
}

// ---------------------------------------------------------------------------
// Traces.

#[test]
fn traces_read_like_chatty9p() {
    let names = WalkNames::new(&[b"claude", b"projects"]).unwrap();
    let lines = [
        trace_t(NOTAG, &Tmsg::Version { msize: 8192, version: b"9P2000" }).to_string(),
        trace_t(1, &Tmsg::Walk { fid: 0, newfid: 1, names }).to_string(),
        trace_t(1, &Tmsg::Attach { fid: 0, afid: NOFID, uname: b"glenda", aname: b"", n_uname: NONUNAME }).to_string(),
        trace_r(3, &Rmsg::Error { ename: b"file does not exist", errno: 0 }).to_string(),
        trace_r(4, &Rmsg::Read { data: &[0; 120] }).to_string(),
        trace_r(1, &Rmsg::Attach { qid: ROOT_QID }).to_string(),
    ];
    assert_eq!(
        lines,
        [
            "Tversion tag 65535 msize 8192 version '9P2000'",
            "Twalk tag 1 fid 0 newfid 1 nwname 2 0:claude 1:projects",
            "Tattach tag 1 fid 0 afid -1 uname 'glenda' aname ''",
            "Rerror tag 3 ename 'file does not exist'",
            "Rread tag 4 count 120",
            "Rattach tag 1 qid (0000000000000001 0 d)",
        ]
    );
}

#[test]
fn rstat_trace_shows_the_stat_like_fdirconv() {
    let line = trace_r(5, &Rmsg::Stat { stat: readme_stat(Dialect::P2000) }).to_string();
    let want = "Rstat tag 5 'README' 'agents' 'agents' '' q (0102030405060708 7 ) m 0444 \
                at 1700000000 mt 1700000000 l 120 t 0 d 0";
    assert_eq!(line, want);
}

#[test]
fn u_fields_appear_in_traces_only_when_set() {
    let rerror = trace_r(3, &Rmsg::Error { ename: b"Is a directory", errno: 21 }).to_string();
    let rstat = trace_r(5, &Rmsg::Stat { stat: symlink_stat() }).to_string();
    assert_eq!(rerror, "Rerror tag 3 ename 'Is a directory' errno 21");
    assert!(rstat.ends_with(" ext '/target' n_uid 1 n_gid 2 n_muid 3"), "{rstat}");
}

#[test]
fn hostile_names_cannot_forge_a_trace_line() {
    let names = WalkNames::new(&[b"a b\n", b"it's\x1b[2J", b"\xff\\"]).unwrap();
    let line = trace_t(1, &Tmsg::Walk { fid: 0, newfid: 1, names }).to_string();
    assert_eq!(line, r"Twalk tag 1 fid 0 newfid 1 nwname 3 0:a\u{20}b\n 1:it\'s\u{1b}[2J 2:�\\");
}

#[test]
fn write_data_is_counted_never_shown() {
    let line = trace_t(2, &Tmsg::Write { fid: 4, offset: 0, data: b"secret" }).to_string();
    assert_eq!(line, "Twrite tag 2 fid 4 offset 0 count 6");
}

// ---------------------------------------------------------------------------
// Fuzz: no input makes a decoder panic, and what it accepts is canonical.

/// xorshift64: deterministic, so a failure reproduces from the iteration.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A buffer to fuzz with: a sample message with a few bytes changed, its
/// size sometimes made to agree, or random bytes behind a plausible header.
fn fuzz_case(rng: &mut XorShift, frames: &[(Dialect, Vec<u8>)]) -> Vec<u8> {
    let mut buf = if rng.below(4) == 0 {
        let len = rng.below(64);
        let mut buf: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if len >= 5 {
            // A number of 9P2000 (100 to 127) or of 9P2000.L (6 to 77).
            buf[4] = if rng.below(2) == 0 { 100 + rng.below(28) as u8 } else { 6 + rng.below(72) as u8 };
        }
        buf
    } else {
        let mut buf = frames[rng.below(frames.len())].1.clone();
        for _ in 0..=rng.below(3) {
            let at = rng.below(buf.len());
            buf[at] = match rng.below(3) {
                0 => rng.next() as u8,
                1 => buf[at].wrapping_add(1),
                _ => buf[at].wrapping_sub(1),
            };
        }
        buf.truncate(buf.len() - rng.below(3).min(buf.len()));
        buf
    };
    if buf.len() >= 4 && rng.below(2) == 0 {
        let len = buf.len();
        buf = with_size(buf, len);
    }
    buf
}

/// Decode `buf` every way there is; whatever decodes must re-encode to the
/// very same bytes, and trace without panicking. Returns how many messages
/// each dialect accepted, in `ALL_DIALECTS`' order.
fn decode_every_way(buf: &[u8]) -> [usize; 3] {
    let mut accepted = [0; 3];
    for (n, dialect) in ALL_DIALECTS.into_iter().enumerate() {
        if let Ok((tag, msg)) = decode_t(buf, dialect) {
            assert_eq!(enc_t(tag, &msg, dialect), buf, "{dialect:?} {msg:?}");
            let _ = trace_t(tag, &msg).to_string();
            accepted[n] += 1;
        }
        if let Ok((tag, msg)) = decode_r(buf, dialect) {
            assert_eq!(enc_r(tag, &msg, dialect), buf, "{dialect:?} {msg:?}");
            let _ = trace_r(tag, &msg).to_string();
            accepted[n] += 1;
        }
        for skip in [0, HEADER_LEN + 2] {
            if let Ok((stat, used)) = decode_stat(buf.get(skip..).unwrap_or_default(), dialect) {
                let mut out = Vec::new();
                encode_stat(&mut out, &stat, dialect);
                assert_eq!(out, buf[skip..skip + used], "{dialect:?} {stat:?}");
            }
        }
    }
    dirents_reencode(buf.get(HEADER_LEN + 4..).unwrap_or_default());
    accepted
}

/// Every entry `decode_dirents` yields from `data`, re-encoded in turn, is
/// the bytes it came from.
fn dirents_reencode(data: &[u8]) {
    let mut out = Vec::new();
    for entry in decode_dirents(data).map_while(Result::ok) {
        encode_dirent(&mut out, entry.qid, entry.offset, entry.ty, entry.name);
        assert_eq!(out, data[..out.len()], "{entry:?}");
    }
}

#[test]
fn a_hundred_thousand_mutated_and_random_buffers_never_panic_a_decoder() {
    let frames = sample_frames();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut accepted = [0; 3];
    for _ in 0..100_000 {
        let buf = fuzz_case(&mut rng, &frames);
        let got = decode_every_way(&buf);
        accepted.iter_mut().zip(got).for_each(|(sum, n)| *sum += n);
    }
    // Each dialect must decode a fair share whole, or the fuzz never got past the first field.
    assert!(accepted.iter().all(|&n| n > 1000), "messages accepted in {ALL_DIALECTS:?}: {accepted:?}");
}
