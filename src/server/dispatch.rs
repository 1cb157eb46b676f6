//! One request in, its reply out: the check step of every message.
//!
//! Protocol misuse is refused here, before the tree is asked anything
//! (lib9p's rule): unknown fids, fids in use, open fids walking themselves,
//! bad names, opens for writing. What remains reaches the tree. Every
//! request gets exactly one reply, written to the connection's queue
//! before this returns — or, for a request that must wait, a parked record
//! that answers it later.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::errors::Error;
use crate::proto::{self, Dialect, Qid, Rmsg, Tmsg, IOHDRSZ, NOFID, OREAD, OTRUNC, OWRITE, QTFILE};
use crate::tree::{Field, Loc, Part, Tree};

use super::conn::{Conn, Fid, Opened, Phase};
use super::job::{Job, OpenStage, WalkState};
use super::Config;

/// The smallest msize we accept: Linux refuses a server's below 4096, and
/// a directory entry or a walk reply must always fit.
pub const MSIZE_MIN: u32 = 4096;
/// The longest name a walk may carry (NAME_MAX).
pub const NAME_BYTES_MAX: usize = 255;

/// What the loop does after a request.
pub enum After {
    Continue,
    /// The peer broke the protocol in a way that leaves nothing to answer.
    Close,
    /// The request waits on the disk: park it with this job.
    Park(u16, Box<Job>),
    /// A read of an open file on disk: park it on one pread.
    ParkRead {
        tag: u16,
        fid: u32,
        file: Rc<OwnedFd>,
        offset: u64,
        count: u32,
    },
    /// A write to an agent's `zmx`: a move.
    Move {
        tag: u16,
        slot: u32,
        gen: u32,
        data: Vec<u8>,
    },
    /// A read of a chat message: park it on the index's read.
    ParkChatRead {
        tag: u16,
        entry: (usize, u32),
        id: u32,
        offset: u64,
        count: u32,
    },
}

pub struct Ctx<'a> {
    pub tree: &'a mut Tree,
    pub cfg: &'a Config,
    /// What clunked fids had open, for the ring to close.
    pub closing: Vec<Opened>,
}

fn err(conn: &mut Conn, ctx: &Ctx, tag: u16, e: Error) {
    let (text, errno) = e.entry();
    conn.reply(tag, &Rmsg::Error { ename: text.as_bytes(), errno }, ctx.cfg.trace);
}

/// Handle one decoded request.
pub fn handle(ctx: &mut Ctx, conn: &mut Conn, tag: u16, msg: Tmsg<'_>) -> After {
    if ctx.cfg.trace {
        eprintln!("<-{}- {}", conn.id, proto::trace_t(tag, &msg));
    }
    if let Tmsg::Version { msize, version } = msg {
        return version_(ctx, conn, tag, msize, version);
    }
    if conn.phase == Phase::AwaitVersion {
        log::info!("conn {}: first message is not Tversion; closing", conn.id);
        return After::Close;
    }
    if conn.parked.contains_key(&tag) {
        err(conn, ctx, tag, Error::DupTag);
        return After::Continue;
    }
    match msg {
        Tmsg::Version { .. } => unreachable!("handled above"),
        Tmsg::Auth { .. } => err(conn, ctx, tag, Error::NoAuth),
        Tmsg::Attach { fid, afid, aname, .. } => attach(ctx, conn, tag, fid, afid, aname),
        Tmsg::Flush { oldtag } => flush(ctx, conn, tag, oldtag),
        Tmsg::Walk { fid, newfid, names } => return walk(ctx, conn, tag, fid, newfid, names.as_slice()),
        Tmsg::Open { fid, mode } => return open(ctx, conn, tag, fid, mode),
        Tmsg::Read { fid, offset, count } => return read(ctx, conn, tag, fid, offset, count),
        Tmsg::Stat { fid } => return stat(ctx, conn, tag, fid),
        Tmsg::Clunk { fid } => match clunk_fid(ctx, conn, fid) {
            Ok(()) => conn.reply(tag, &Rmsg::Clunk, ctx.cfg.trace),
            Err(e) => err(conn, ctx, tag, e),
        },
        // remove(5): the fid is clunked even when the remove fails.
        Tmsg::Remove { fid } => match clunk_fid(ctx, conn, fid) {
            Ok(()) => err(conn, ctx, tag, Error::ReadOnly),
            Err(e) => err(conn, ctx, tag, e),
        },
        Tmsg::Write { fid, data, .. }
            if matches!(conn.fids.get(&fid).and_then(|f| f.open.as_ref()), Some(Opened::Zmx { .. })) =>
        {
            let Some(Opened::Zmx { slot, gen }) = conn.fids[&fid].open.clone() else { unreachable!() };
            return After::Move { tag, slot, gen, data: data.to_vec() };
        }
        Tmsg::Create { fid, .. } | Tmsg::Write { fid, .. } | Tmsg::Wstat { fid, .. } => {
            let e = if conn.fids.contains_key(&fid) { Error::ReadOnly } else { Error::UnknownFid };
            err(conn, ctx, tag, e)
        }
    }
    After::Continue
}

/// version(5): negotiate msize and dialect; a Tversion mid-session aborts
/// every request and clunks every fid first.
fn version_(ctx: &mut Ctx, conn: &mut Conn, tag: u16, msize: u32, version: &[u8]) -> After {
    reset_session(ctx, conn);
    if msize < MSIZE_MIN {
        conn.phase = Phase::AwaitVersion;
        err(conn, ctx, tag, Error::MsizeTooSmall);
        return After::Continue;
    }
    let msize = msize.min(ctx.cfg.msize);
    match Dialect::negotiate(version) {
        Some(dialect) => {
            conn.dialect = dialect;
            conn.msize = msize;
            conn.phase = Phase::Ready;
            conn.reply(tag, &Rmsg::Version { msize, version: dialect.version().as_bytes() }, ctx.cfg.trace);
        }
        None => {
            conn.phase = Phase::AwaitVersion;
            conn.reply(tag, &Rmsg::Version { msize, version: b"unknown" }, ctx.cfg.trace);
        }
    }
    After::Continue
}

/// Drop every parked request (its reply will never be sent) and clunk
/// every fid.
pub fn reset_session(ctx: &mut Ctx, conn: &mut Conn) {
    conn.parked.clear();
    for (_, fid) in conn.fids.drain() {
        ctx.tree.release(fid.node);
        ctx.closing.extend(fid.open);
    }
}

fn attach(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32, afid: u32, aname: &[u8]) {
    let refusal = if afid != NOFID {
        Some(Error::BadAfid)
    } else if !aname.is_empty() {
        Some(Error::BadAname)
    } else if conn.fids.contains_key(&fid) {
        Some(Error::FidInUse)
    } else if conn.fids.len() >= ctx.cfg.max_fids {
        Some(Error::TooManyFids)
    } else {
        None
    };
    if let Some(e) = refusal {
        return err(conn, ctx, tag, e);
    }
    let root = ctx.tree.root();
    ctx.tree.acquire(root);
    conn.fids.insert(fid, Fid::new(root, true));
    let qid = ctx.tree.static_qid(0);
    conn.reply(tag, &Rmsg::Attach { qid }, ctx.cfg.trace);
}

/// flush(5): a parked request is forgotten (its reply never goes out) and
/// Rflush answers at once; an unknown tag is answered Rflush at once too.
fn flush(ctx: &mut Ctx, conn: &mut Conn, tag: u16, oldtag: u16) {
    conn.parked.remove(&oldtag);
    conn.reply(tag, &Rmsg::Flush, ctx.cfg.trace);
}

/// The name check, before any filesystem work (walk(5), CONFORMANCE 18).
fn check_name(name: &[u8]) -> Result<(), Error> {
    if name.len() > NAME_BYTES_MAX {
        return Err(Error::NameTooLong);
    }
    if name.is_empty() || name == b"." || name.contains(&b'/') || name.contains(&0) {
        return Err(Error::BadName);
    }
    Ok(())
}

fn walk(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32, newfid: u32, names: &[&[u8]]) -> After {
    let Some(from) = conn.fids.get(&fid) else {
        err(conn, ctx, tag, Error::UnknownFid);
        return After::Continue;
    };
    let refusal = if from.open.is_some() && newfid == fid {
        Some(Error::WalkOpenFid)
    } else if newfid != fid && conn.fids.contains_key(&newfid) {
        Some(Error::FidInUse)
    } else if newfid != fid && conn.fids.len() >= ctx.cfg.max_fids {
        Some(Error::TooManyFids)
    } else if !names.is_empty() && !from.is_dir {
        Some(Error::NotDir)
    } else {
        names.iter().find_map(|n| check_name(n).err())
    };
    let cur = ctx.tree.loc(from.node);
    let (refusal, cur) = match (refusal, cur) {
        (Some(e), _) => (Some(e), None),
        (None, None) => (Some(Error::NotFound), None),
        (None, Some(c)) => (None, Some(c)),
    };
    if let Some(e) = refusal {
        err(conn, ctx, tag, e);
        return After::Continue;
    }
    let state = WalkState {
        fid,
        newfid,
        names: names.iter().map(|n| n.to_vec()).collect(),
        cur: cur.expect("checked above"),
        cur_is_dir: from.is_dir,
        qids: Vec::with_capacity(names.len()),
        next: None,
        scanned: false,
        chat_waited: false,
        field: None,
        g: Default::default(),
    };
    After::Park(tag, Box::new(Job::Walk(state)))
}

fn open(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32, mode: u8) -> After {
    let Some(f) = conn.fids.get(&fid) else {
        err(conn, ctx, tag, Error::UnknownFid);
        return After::Continue;
    };
    // Only a plain read: write, read-write, exec, truncate and
    // remove-on-close are all refused (CONFORMANCE 22).
    let loc = ctx.tree.loc(f.node);
    // The one write: an agent's zmx, opened for writing (truncation is
    // meaningless and allowed, so `echo name > zmx` works), with --allow-move.
    if let (true, Some(Loc::Agent { slot, gen, part: Part::Field(Field::Zmx) })) = (ctx.cfg.allow_move, &loc) {
        if f.open.is_none() && (mode & !OTRUNC) == OWRITE {
            let (slot, gen) = (*slot, *gen);
            let qid = Qid { ty: QTFILE, version: 0, path: ctx.tree.agent_qid_path(slot, gen, Part::Field(Field::Zmx)) };
            conn.fids.get_mut(&fid).expect("checked above").open = Some(Opened::Zmx { slot, gen });
            let iounit = conn.msize - IOHDRSZ;
            conn.reply(tag, &Rmsg::Open { qid, iounit }, ctx.cfg.trace);
            return After::Continue;
        }
    }
    let refusal = if f.open.is_some() {
        Some(Error::FidOpen)
    } else if mode != OREAD {
        Some(Error::ReadOnly)
    } else {
        None
    };
    match (refusal, loc) {
        (Some(e), _) => err(conn, ctx, tag, e),
        (None, None) => err(conn, ctx, tag, Error::NotFound),
        (None, Some(loc)) => {
            let job = Job::Open {
                fid,
                loc,
                stage: OpenStage::Look,
                qid: Default::default(),
                pending: Vec::new(),
                entries: Vec::new(),
                scanned: false,
            };
            return After::Park(tag, Box::new(job));
        }
    }
    After::Continue
}

fn read(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32, offset: u64, count: u32) -> After {
    let Some(f) = conn.fids.get(&fid) else {
        err(conn, ctx, tag, Error::UnknownFid);
        return After::Continue;
    };
    let count = count.min(conn.msize - IOHDRSZ);
    match f.open.clone() {
        None => err(conn, ctx, tag, Error::FidNotOpen),
        // An offset past i64::MAX is past the end of any file; it must not
        // reach the ring, where -1 means "the current position".
        Some(Opened::File(_)) if offset > i64::MAX as u64 || count == 0 => {
            let start = proto::rread_begin(&mut conn.outq, tag);
            proto::rread_finish(&mut conn.outq, start);
        }
        Some(Opened::File(file)) => return After::ParkRead { tag, fid, file, offset, count },
        Some(Opened::Dir(entries)) => read_dir(ctx, conn, tag, fid, &entries, offset, count),
        Some(Opened::Fact) => read_fact(ctx, conn, tag, fid, offset, count),
        Some(Opened::Text(text)) => read_text(ctx, conn, tag, &text, offset, count),
        Some(Opened::Zmx { .. }) => err(conn, ctx, tag, Error::FidNotOpen),
        Some(Opened::Chat { entry, id }) => return After::ParkChatRead { tag, entry, id, offset, count },
    }
    After::Continue
}

fn read_fact(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32, offset: u64, count: u32) {
    let Some(crate::tree::Loc::Static(i)) = conn.fids.get(&fid).and_then(|f| ctx.tree.loc(f.node)) else {
        return err(conn, ctx, tag, Error::NotFound);
    };
    let start = proto::rread_begin(&mut conn.outq, tag);
    match ctx.tree.read_static(i, offset, count, &mut conn.outq) {
        Ok(()) => {
            proto::rread_finish(&mut conn.outq, start);
            if ctx.cfg.trace {
                let n = conn.outq.len() - start - 11;
                eprintln!("-{}-> Rread tag {tag} count {n}", conn.id);
            }
        }
        Err(e) => {
            conn.outq.truncate(start);
            err(conn, ctx, tag, e);
        }
    }
}

/// A read of derived text snapshotted at Topen.
fn read_text(ctx: &mut Ctx, conn: &mut Conn, tag: u16, text: &[u8], offset: u64, count: u32) {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
    let end = start.saturating_add(count as usize).min(text.len());
    conn.reply(tag, &Rmsg::Read { data: &text[start..end] }, ctx.cfg.trace);
}

/// A 9P2000 directory read: whole stat entries only, from offset 0 or
/// where the previous read ended (read(5)), out of the listing made at
/// Topen.
fn read_dir(
    ctx: &mut Ctx,
    conn: &mut Conn,
    tag: u16,
    fid: u32,
    entries: &[super::conn::DirEntry],
    offset: u64,
    count: u32,
) {
    let f = &conn.fids[&fid];
    let index = match offset {
        0 => 0,
        o if o == f.dir_offset => f.dir_index as usize,
        _ => return err(conn, ctx, tag, Error::BadOffset),
    };
    let start = proto::rread_begin(&mut conn.outq, tag);
    let data_start = conn.outq.len();
    let mut next = index;
    let dialect = conn.dialect;
    for entry in &entries[index.min(entries.len())..] {
        let fits = ctx.tree.with_stat(&entry.loc, &entry.attr, |st| {
            if conn.outq.len() - data_start + proto::stat_size(st, dialect) > count as usize {
                return false;
            }
            proto::encode_stat(&mut conn.outq, st, dialect);
            true
        });
        if !fits {
            break;
        }
        next += 1;
    }
    let written = conn.outq.len() - data_start;
    if written == 0 && next < entries.len() {
        conn.outq.truncate(start);
        return err(conn, ctx, tag, Error::DirReadTooSmall);
    }
    proto::rread_finish(&mut conn.outq, start);
    if ctx.cfg.trace {
        eprintln!("-{}-> Rread tag {tag} count {written} (directory)", conn.id);
    }
    let f = conn.fids.get_mut(&fid).expect("checked by read");
    f.dir_offset = offset + written as u64;
    f.dir_index = next as u32;
}

fn stat(ctx: &mut Ctx, conn: &mut Conn, tag: u16, fid: u32) -> After {
    match conn.fids.get(&fid).map(|f| ctx.tree.loc(f.node)) {
        None => err(conn, ctx, tag, Error::UnknownFid),
        Some(None) => err(conn, ctx, tag, Error::NotFound),
        Some(Some(loc)) => return After::Park(tag, Box::new(Job::Stat { loc })),
    }
    After::Continue
}

fn clunk_fid(ctx: &mut Ctx, conn: &mut Conn, fid: u32) -> Result<(), Error> {
    let f = conn.fids.remove(&fid).ok_or(Error::UnknownFid)?;
    ctx.tree.release(f.node);
    ctx.closing.extend(f.open);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_one_component_are_refused() {
        for bad in [&b""[..], b".", b"a/b", b"/", b"a\0b"] {
            assert_eq!(check_name(bad), Err(Error::BadName), "{bad:?}");
        }
        assert_eq!(check_name(&[b'x'; 256]), Err(Error::NameTooLong));
        assert_eq!(check_name(&[b'x'; 255]), Ok(()));
        assert_eq!(check_name(b".."), Ok(()));
        assert_eq!(check_name(b"..."), Ok(()));
    }
}
