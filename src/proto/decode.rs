//! Decoding: a whole message's bytes to a borrowed message.
//!
//! Every byte a decoder reads comes through one cursor, `Reader`, whose
//! reads are all checked against the bytes left and return `Truncated`
//! instead of indexing past the end. So no input — truncated, padded,
//! lying about its lengths, or random — can make a decoder panic, and none
//! makes it allocate: strings and data are slices of the input, a walk's
//! names and qids live in fixed arrays of `MAXWELEM`, an Rreaddir's entries
//! are read one at a time by an iterator over its data.
//!
//! A message is decoded strictly: the header's size must be the buffer's
//! length, every field must be whole, and nothing may follow the last
//! field. A lenient decoder would let a client and the server disagree on
//! where a message ends. Which type numbers exist depends on the dialect
//! (`known`): a 9P2000.L number in a 9P2000 session, or Topen in a .L one,
//! is an unknown type like any other.

use std::fmt;

use super::{
    msg, Dialect, Dirent, Getattr, Qid, Rmsg, Stat, Statfs, Tmsg, WalkNames, WalkQids, HEADER_LEN, MAXWELEM, NONUNAME,
};

/// Why a frame's size field is refused: the connection is closed, since
/// after a bad size nothing that follows can be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// size[4] under the 7 bytes of a header.
    TooSmall(u32),
    /// size[4] over the negotiated msize.
    TooLarge(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The message ends before a field it declares.
    Truncated,
    /// Bytes left over after the last field.
    Trailing,
    /// A type number that is not a message of this dialect.
    UnknownType(u8),
    /// An R-message where a T-message was expected, or the reverse.
    WrongDirection(u8),
    /// A Twalk with more than MAXWELEM names, or an Rwalk with more qids.
    TooManyNames(u16),
}

/// A message that is framed but cannot be decoded. `tag` is known whenever
/// the header itself was whole, so the server can answer Rerror on that tag
/// rather than drop the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    pub tag: Option<u16>,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooSmall(size) => write!(f, "9P frame size {size} is under the 7-byte header"),
            FrameError::TooLarge(size) => write!(f, "9P frame size {size} is over the msize"),
        }
    }
}

impl std::error::Error for FrameError {}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeErrorKind::Truncated => write!(f, "message ends before a field it declares"),
            DecodeErrorKind::Trailing => write!(f, "bytes left over after the last field"),
            DecodeErrorKind::UnknownType(ty) => write!(f, "unknown message type {ty}"),
            DecodeErrorKind::WrongDirection(ty) => write!(f, "message type {ty} sent the wrong way"),
            DecodeErrorKind::TooManyNames(n) => write!(f, "{n} walk elements, over {MAXWELEM}"),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tag {
            Some(tag) => write!(f, "9P decode (tag {tag}): {}", self.kind),
            None => write!(f, "9P decode: {}", self.kind),
        }
    }
}

impl std::error::Error for DecodeError {}

type Result<T> = std::result::Result<T, DecodeErrorKind>;

/// The length of the message at the front of `buf`: `Ok(None)` while fewer
/// than 4 bytes are there, `Ok(Some(size))` once size[4] is readable and
/// acceptable (the whole message may not have arrived yet), `Err` when the
/// size is under the header's 7 bytes or over `msize`.
pub fn frame_size(buf: &[u8], msize: u32) -> std::result::Result<Option<usize>, FrameError> {
    let Some(size) = buf.first_chunk::<4>().map(|b| u32::from_le_bytes(*b)) else {
        return Ok(None);
    };
    if (size as usize) < HEADER_LEN {
        return Err(FrameError::TooSmall(size));
    }
    if size > msize {
        return Err(FrameError::TooLarge(size));
    }
    Ok(Some(size as usize))
}

/// Decode one whole request. `buf` is exactly one message, size field
/// included (its size field is not re-checked against `buf.len()` beyond
/// consistency: a mismatch is `Truncated` or `Trailing`).
pub fn decode_t(buf: &[u8], dialect: Dialect) -> std::result::Result<(u16, Tmsg<'_>), DecodeError> {
    let (ty, tag, mut body) = header(buf)?;
    let with_tag = |kind| DecodeError { kind, tag: Some(tag) };
    match direction(ty, dialect) {
        Some(Direction::Request) => {}
        Some(Direction::Reply) => return Err(with_tag(DecodeErrorKind::WrongDirection(ty))),
        None => return Err(with_tag(DecodeErrorKind::UnknownType(ty))),
    }
    let msg = if ty < msg::TVERSION { t_body_l(ty, &mut body) } else { t_body(ty, &mut body, dialect) };
    let msg = msg.map_err(with_tag)?;
    body.finish().map_err(with_tag)?;
    Ok((tag, msg))
}

/// Decode one whole reply, the mirror of `decode_t`.
pub fn decode_r(buf: &[u8], dialect: Dialect) -> std::result::Result<(u16, Rmsg<'_>), DecodeError> {
    let (ty, tag, mut body) = header(buf)?;
    let with_tag = |kind| DecodeError { kind, tag: Some(tag) };
    match direction(ty, dialect) {
        Some(Direction::Reply) => {}
        Some(Direction::Request) => return Err(with_tag(DecodeErrorKind::WrongDirection(ty))),
        None => return Err(with_tag(DecodeErrorKind::UnknownType(ty))),
    }
    let msg = if ty < msg::TVERSION { r_body_l(ty, &mut body) } else { r_body(ty, &mut body, dialect) };
    let msg = msg.map_err(with_tag)?;
    body.finish().map_err(with_tag)?;
    Ok((tag, msg))
}

/// Decode one stat entry at the front of `buf` (as a directory read returns
/// them, size[2] first), returning it and the bytes it took.
pub fn decode_stat(buf: &[u8], dialect: Dialect) -> std::result::Result<(Stat<'_>, usize), DecodeError> {
    let no_tag = |kind| DecodeError { kind, tag: None };
    let mut r = Reader::new(buf);
    let stat = stat_entry(&mut r, dialect).map_err(no_tag)?;
    Ok((stat, buf.len() - r.rest.len()))
}

/// The entries of an Rreaddir's data, one at a time, each borrowing its
/// name from `data`. An entry cut short yields `Truncated` (with no tag)
/// and ends the run.
pub fn decode_dirents(data: &[u8]) -> Dirents<'_> {
    Dirents { r: Reader::new(data) }
}

/// The iterator `decode_dirents` returns.
pub struct Dirents<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for Dirents<'a> {
    type Item = std::result::Result<Dirent<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.r.rest.is_empty() {
            return None;
        }
        let entry = self.r.dirent();
        if entry.is_err() {
            self.r.rest = &[];
        }
        Some(entry.map_err(|kind| DecodeError { kind, tag: None }))
    }
}

/// A cursor over the bytes of one message not yet read. Each read takes
/// from the front and fails with `Truncated`, never panics, when the bytes
/// left are too few.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { rest: buf }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n).ok_or(DecodeErrorKind::Truncated)?;
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or(DecodeErrorKind::Truncated)?;
        self.rest = tail;
        Ok(*head)
    }

    fn u8(&mut self) -> Result<u8> {
        self.array::<1>().map(|[b]| b)
    }

    fn u16(&mut self) -> Result<u16> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// A string: len[2] then that many bytes (not checked for UTF-8: names
    /// are judged by the server, which refuses what it does not serve).
    fn str(&mut self) -> Result<&'a [u8]> {
        let len = self.u16()?;
        self.bytes(usize::from(len))
    }

    /// Data: count[4] then that many bytes.
    fn data(&mut self) -> Result<&'a [u8]> {
        let count = self.u32()?;
        let count = usize::try_from(count).map_err(|_| DecodeErrorKind::Truncated)?;
        self.bytes(count)
    }

    fn qid(&mut self) -> Result<Qid> {
        Ok(Qid { ty: self.u8()?, version: self.u32()?, path: self.u64()? })
    }

    /// One Rreaddir entry: qid[13] offset[8] type[1] name[s].
    fn dirent(&mut self) -> Result<Dirent<'a>> {
        Ok(Dirent { qid: self.qid()?, offset: self.u64()?, ty: self.u8()?, name: self.str()? })
    }

    /// Rgetattr's body after the header, in its wire order.
    fn getattr(&mut self) -> Result<Getattr> {
        Ok(Getattr {
            valid: self.u64()?,
            qid: self.qid()?,
            mode: self.u32()?,
            uid: self.u32()?,
            gid: self.u32()?,
            nlink: self.u64()?,
            rdev: self.u64()?,
            size: self.u64()?,
            blksize: self.u64()?,
            blocks: self.u64()?,
            atime_sec: self.u64()?,
            atime_nsec: self.u64()?,
            mtime_sec: self.u64()?,
            mtime_nsec: self.u64()?,
            ctime_sec: self.u64()?,
            ctime_nsec: self.u64()?,
            btime_sec: self.u64()?,
            btime_nsec: self.u64()?,
            gen: self.u64()?,
            data_version: self.u64()?,
        })
    }

    /// Rstatfs's body after the header, in its wire order.
    fn statfs(&mut self) -> Result<Statfs> {
        Ok(Statfs {
            ty: self.u32()?,
            bsize: self.u32()?,
            blocks: self.u64()?,
            bfree: self.u64()?,
            bavail: self.u64()?,
            files: self.u64()?,
            ffree: self.u64()?,
            fsid: self.u64()?,
            namelen: self.u32()?,
        })
    }

    /// The end of a message or stat: nothing may be left.
    fn finish(&self) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(DecodeErrorKind::Trailing)
        }
    }
}

enum Direction {
    Request,
    Reply,
}

/// Which way a type number travels, if it is a message of `dialect` at
/// all: T-messages are even, R-messages odd.
fn direction(ty: u8, dialect: Dialect) -> Option<Direction> {
    match known(ty, dialect) {
        false => None,
        true if ty.is_multiple_of(2) => Some(Direction::Request),
        true => Some(Direction::Reply),
    }
}

/// The type numbers of a dialect. 9P2000 and .u: Tversion (100) to Rwstat
/// (127), but for 106, Terror, which does not exist. 9P2000.L: the part of
/// those it keeps (version, auth, attach, flush, walk, read, write, clunk,
/// remove) and its own numbers, Rlerror (7) to Runlinkat (77) with gaps;
/// 6 would be Tlerror, which does not exist either.
fn known(ty: u8, dialect: Dialect) -> bool {
    match dialect {
        Dialect::P2000 | Dialect::P2000u => matches!(ty, msg::TVERSION..=msg::RWSTAT) && ty != msg::TERROR,
        Dialect::L => matches!(
            ty,
            msg::TVERSION..=msg::RATTACH
                | msg::TFLUSH..=msg::RWALK
                | msg::TREAD..=msg::RREMOVE
                | msg::RLERROR..=msg::RSTATFS
                | msg::TLOPEN..=msg::RSETATTR
                | msg::TXATTRWALK..=msg::RXATTRCREATE
                | msg::TREADDIR..=msg::RREADDIR
                | msg::TFSYNC..=msg::RGETLOCK
                | msg::TLINK..=msg::RUNLINKAT
        ),
    }
}

/// The header: size[4] type[1] tag[2]. Returns the type, the tag and a
/// reader over the body. The size must be exactly the buffer's length.
fn header(buf: &[u8]) -> std::result::Result<(u8, u16, Reader<'_>), DecodeError> {
    let mut r = Reader::new(buf);
    let (Ok(size), Ok(ty), Ok(tag)) = (r.u32(), r.u8(), r.u16()) else {
        return Err(DecodeError { kind: DecodeErrorKind::Truncated, tag: None });
    };
    let kind = match usize::try_from(size).map(|size| size.cmp(&buf.len())) {
        Ok(std::cmp::Ordering::Equal) => return Ok((ty, tag, r)),
        Ok(std::cmp::Ordering::Less) => DecodeErrorKind::Trailing,
        _ => DecodeErrorKind::Truncated,
    };
    Err(DecodeError { kind, tag: Some(tag) })
}

/// The body of a 9P2000 request (or one 9P2000.L keeps) whose type
/// `direction` has accepted.
fn t_body<'a>(ty: u8, r: &mut Reader<'a>, dialect: Dialect) -> Result<Tmsg<'a>> {
    Ok(match ty {
        msg::TVERSION => Tmsg::Version { msize: r.u32()?, version: r.str()? },
        msg::TAUTH => {
            let (afid, uname, aname) = (r.u32()?, r.str()?, r.str()?);
            Tmsg::Auth { afid, uname, aname, n_uname: n_uname(r, dialect)? }
        }
        msg::TATTACH => {
            let (fid, afid, uname, aname) = (r.u32()?, r.u32()?, r.str()?, r.str()?);
            Tmsg::Attach { fid, afid, uname, aname, n_uname: n_uname(r, dialect)? }
        }
        msg::TFLUSH => Tmsg::Flush { oldtag: r.u16()? },
        msg::TWALK => Tmsg::Walk { fid: r.u32()?, newfid: r.u32()?, names: walk_names(r)? },
        msg::TOPEN => Tmsg::Open { fid: r.u32()?, mode: r.u8()? },
        msg::TCREATE => {
            let (fid, name, perm, mode) = (r.u32()?, r.str()?, r.u32()?, r.u8()?);
            let extension = if dialect.unix() { r.str()? } else { &[][..] };
            Tmsg::Create { fid, name, perm, mode, extension }
        }
        msg::TREAD => Tmsg::Read { fid: r.u32()?, offset: r.u64()?, count: r.u32()? },
        msg::TWRITE => Tmsg::Write { fid: r.u32()?, offset: r.u64()?, data: r.data()? },
        msg::TCLUNK => Tmsg::Clunk { fid: r.u32()? },
        msg::TREMOVE => Tmsg::Remove { fid: r.u32()? },
        msg::TSTAT => Tmsg::Stat { fid: r.u32()? },
        msg::TWSTAT => Tmsg::Wstat { fid: r.u32()?, stat: counted_stat(r, dialect)? },
        _ => return Err(DecodeErrorKind::UnknownType(ty)),
    })
}

/// The body of a 9P2000 reply (or one 9P2000.L keeps) whose type
/// `direction` has accepted.
fn r_body<'a>(ty: u8, r: &mut Reader<'a>, dialect: Dialect) -> Result<Rmsg<'a>> {
    Ok(match ty {
        msg::RVERSION => Rmsg::Version { msize: r.u32()?, version: r.str()? },
        msg::RAUTH => Rmsg::Auth { aqid: r.qid()? },
        msg::RATTACH => Rmsg::Attach { qid: r.qid()? },
        msg::RERROR => {
            let ename = r.str()?;
            let errno = if dialect.unix() { r.u32()? } else { 0 };
            Rmsg::Error { ename, errno }
        }
        msg::RFLUSH => Rmsg::Flush,
        msg::RWALK => Rmsg::Walk { qids: walk_qids(r)? },
        msg::ROPEN => Rmsg::Open { qid: r.qid()?, iounit: r.u32()? },
        msg::RCREATE => Rmsg::Create { qid: r.qid()?, iounit: r.u32()? },
        msg::RREAD => Rmsg::Read { data: r.data()? },
        msg::RWRITE => Rmsg::Write { count: r.u32()? },
        msg::RCLUNK => Rmsg::Clunk,
        msg::RREMOVE => Rmsg::Remove,
        msg::RSTAT => Rmsg::Stat { stat: counted_stat(r, dialect)? },
        msg::RWSTAT => Rmsg::Wstat,
        _ => return Err(DecodeErrorKind::UnknownType(ty)),
    })
}

/// The body of a 9P2000.L request (a type under Tversion's 100) whose
/// type `direction` has accepted.
fn t_body_l<'a>(ty: u8, r: &mut Reader<'a>) -> Result<Tmsg<'a>> {
    Ok(match ty {
        msg::TSTATFS => Tmsg::Statfs { fid: r.u32()? },
        msg::TLOPEN => Tmsg::Lopen { fid: r.u32()?, flags: r.u32()? },
        msg::TLCREATE => {
            Tmsg::Lcreate { fid: r.u32()?, name: r.str()?, flags: r.u32()?, mode: r.u32()?, gid: r.u32()? }
        }
        msg::TSYMLINK => Tmsg::Symlink { fid: r.u32()?, name: r.str()?, symtgt: r.str()?, gid: r.u32()? },
        msg::TMKNOD => {
            let (dfid, name, mode) = (r.u32()?, r.str()?, r.u32()?);
            Tmsg::Mknod { dfid, name, mode, major: r.u32()?, minor: r.u32()?, gid: r.u32()? }
        }
        msg::TRENAME => Tmsg::Rename { fid: r.u32()?, dfid: r.u32()?, name: r.str()? },
        msg::TREADLINK => Tmsg::Readlink { fid: r.u32()? },
        msg::TGETATTR => Tmsg::Getattr { fid: r.u32()?, mask: r.u64()? },
        msg::TSETATTR => setattr(r)?,
        msg::TXATTRWALK => Tmsg::Xattrwalk { fid: r.u32()?, newfid: r.u32()?, name: r.str()? },
        msg::TXATTRCREATE => Tmsg::Xattrcreate { fid: r.u32()?, name: r.str()?, attr_size: r.u64()?, flags: r.u32()? },
        msg::TREADDIR => Tmsg::Readdir { fid: r.u32()?, offset: r.u64()?, count: r.u32()? },
        // The first Tfsync ended after the fid; datasync[4] came later.
        msg::TFSYNC => Tmsg::Fsync { fid: r.u32()?, datasync: (!r.rest.is_empty()).then(|| r.u32()).transpose()? },
        msg::TLOCK => {
            let (fid, ty, flags) = (r.u32()?, r.u8()?, r.u32()?);
            let (start, length, proc_id, client_id) = (r.u64()?, r.u64()?, r.u32()?, r.str()?);
            Tmsg::Lock { fid, ty, flags, start, length, proc_id, client_id }
        }
        msg::TGETLOCK => {
            let (fid, ty, start, length) = (r.u32()?, r.u8()?, r.u64()?, r.u64()?);
            Tmsg::Getlock { fid, ty, start, length, proc_id: r.u32()?, client_id: r.str()? }
        }
        msg::TLINK => Tmsg::Link { dfid: r.u32()?, fid: r.u32()?, name: r.str()? },
        msg::TMKDIR => Tmsg::Mkdir { dfid: r.u32()?, name: r.str()?, mode: r.u32()?, gid: r.u32()? },
        msg::TRENAMEAT => {
            let (olddirfid, oldname) = (r.u32()?, r.str()?);
            Tmsg::Renameat { olddirfid, oldname, newdirfid: r.u32()?, newname: r.str()? }
        }
        msg::TUNLINKAT => Tmsg::Unlinkat { dirfd: r.u32()?, name: r.str()?, flags: r.u32()? },
        _ => return Err(DecodeErrorKind::UnknownType(ty)),
    })
}

/// Tsetattr's body: fid[4] and then Linux's iattr, in its wire order.
fn setattr<'a>(r: &mut Reader<'a>) -> Result<Tmsg<'a>> {
    let (fid, valid, mode, uid, gid, size) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u64()?);
    let (atime_sec, atime_nsec, mtime_sec, mtime_nsec) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
    Ok(Tmsg::Setattr { fid, valid, mode, uid, gid, size, atime_sec, atime_nsec, mtime_sec, mtime_nsec })
}

/// The body of a 9P2000.L reply (a type under Tversion's 100) whose type
/// `direction` has accepted.
fn r_body_l<'a>(ty: u8, r: &mut Reader<'a>) -> Result<Rmsg<'a>> {
    Ok(match ty {
        msg::RLERROR => Rmsg::Lerror { ecode: r.u32()? },
        msg::RSTATFS => Rmsg::Statfs(r.statfs()?),
        msg::RLOPEN => Rmsg::Lopen { qid: r.qid()?, iounit: r.u32()? },
        msg::RLCREATE => Rmsg::Lcreate { qid: r.qid()?, iounit: r.u32()? },
        msg::RSYMLINK => Rmsg::Symlink { qid: r.qid()? },
        msg::RMKNOD => Rmsg::Mknod { qid: r.qid()? },
        msg::RRENAME => Rmsg::Rename,
        msg::RREADLINK => Rmsg::Readlink { target: r.str()? },
        msg::RGETATTR => Rmsg::Getattr(r.getattr()?),
        msg::RSETATTR => Rmsg::Setattr,
        msg::RXATTRWALK => Rmsg::Xattrwalk { size: r.u64()? },
        msg::RXATTRCREATE => Rmsg::Xattrcreate,
        msg::RREADDIR => Rmsg::Readdir { data: r.data()? },
        msg::RFSYNC => Rmsg::Fsync,
        msg::RLOCK => Rmsg::Lock { status: r.u8()? },
        msg::RGETLOCK => {
            let (ty, start, length) = (r.u8()?, r.u64()?, r.u64()?);
            Rmsg::Getlock { ty, start, length, proc_id: r.u32()?, client_id: r.str()? }
        }
        msg::RLINK => Rmsg::Link,
        msg::RMKDIR => Rmsg::Mkdir { qid: r.qid()? },
        msg::RRENAMEAT => Rmsg::Renameat,
        msg::RUNLINKAT => Rmsg::Unlinkat,
        _ => return Err(DecodeErrorKind::UnknownType(ty)),
    })
}

/// Tauth/Tattach's trailing n_uname[4], in 9P2000.u and 9P2000.L.
fn n_uname(r: &mut Reader<'_>, dialect: Dialect) -> Result<u32> {
    if dialect.unix() {
        r.u32()
    } else {
        Ok(NONUNAME)
    }
}

/// nwname[2] nwname*(wname[s]). The count is refused before any name is
/// read, so a huge nwname costs nothing.
fn walk_names<'a>(r: &mut Reader<'a>) -> Result<WalkNames<'a>> {
    let count = r.u16()?;
    let n = usize::from(count);
    if n > MAXWELEM {
        return Err(DecodeErrorKind::TooManyNames(count));
    }
    let mut names: [&'a [u8]; MAXWELEM] = [&[]; MAXWELEM];
    for name in names.iter_mut().take(n) {
        *name = r.str()?;
    }
    WalkNames::new(names.get(..n).unwrap_or_default()).ok_or(DecodeErrorKind::TooManyNames(count))
}

/// nwqid[2] nwqid*(wqid[13]), the reply's mirror of `walk_names`.
fn walk_qids(r: &mut Reader<'_>) -> Result<WalkQids> {
    let count = r.u16()?;
    let n = usize::from(count);
    if n > MAXWELEM {
        return Err(DecodeErrorKind::TooManyNames(count));
    }
    let mut qids = [Qid::default(); MAXWELEM];
    for qid in qids.iter_mut().take(n) {
        *qid = r.qid()?;
    }
    WalkQids::new(qids.get(..n).unwrap_or_default()).ok_or(DecodeErrorKind::TooManyNames(count))
}

/// Rstat's and Twstat's stat[n]: a count n[2], then a stat of exactly n
/// bytes that carries its own size[2] (stat(5)'s BUGS: the two sizes are
/// redundant, and must agree).
fn counted_stat<'a>(r: &mut Reader<'a>, dialect: Dialect) -> Result<Stat<'a>> {
    let mut inner = Reader::new(r.str()?);
    let stat = stat_entry(&mut inner, dialect)?;
    inner.finish()?;
    Ok(stat)
}

/// One stat at the front of `r`: size[2], then exactly that many bytes of
/// fields. Fields that run past the size are `Truncated`; bytes the size
/// covers but no field reads are `Trailing`.
fn stat_entry<'a>(r: &mut Reader<'a>, dialect: Dialect) -> Result<Stat<'a>> {
    let mut s = Reader::new(r.str()?);
    let (ty, dev, qid) = (s.u16()?, s.u32()?, s.qid()?);
    let (mode, atime, mtime, length) = (s.u32()?, s.u32()?, s.u32()?, s.u64()?);
    let (name, uid, gid, muid) = (s.str()?, s.str()?, s.str()?, s.str()?);
    let (extension, n_uid, n_gid, n_muid) = match dialect.unix() {
        false => (&[][..], NONUNAME, NONUNAME, NONUNAME),
        true => (s.str()?, s.u32()?, s.u32()?, s.u32()?),
    };
    s.finish()?;
    Ok(Stat { ty, dev, qid, mode, atime, mtime, length, name, uid, gid, muid, extension, n_uid, n_gid, n_muid })
}
