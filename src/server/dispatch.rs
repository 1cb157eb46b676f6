//! One request in: the check step of every message.
//!
//! Protocol misuse is refused here, before the tree is asked anything
//! (lib9p's rule): unknown fids, fids in use, open fids walking themselves,
//! bad names, opens for writing, the fid caps. What needs nothing but the
//! tables is answered here too — version, attach, flush, clunk, the stat
//! of a skeleton node, reads of facts, of derived text and of directory
//! snapshots. Everything else becomes a job, chosen here by what the fid
//! names, and is parked (`After::Park`); its answer comes from `park`.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::rc::Rc;

use crate::errors::Error;
use crate::proto::{self, Dialect, Qid, Rmsg, Tmsg, IOHDRSZ, NOFID, QTFILE};
use crate::tree::{self, Attr, Loc, Part, SPart};

use super::conn::{Conn, InPlace, Phase};
use super::dotl::Intent;
use super::fids::{Fid, FidOpen, Opened};
use super::jobs::{self, chat::ChatView, ChatOf, Decided, Job, Reply};
use super::jobs::{wait::Wait, wait_all::WaitAll};
use super::watch::Reader;
use super::world::World;

/// The smallest msize we accept: Linux refuses a server's below 4096, and
/// a directory entry or a walk reply must always fit.
pub const MSIZE_MIN: u32 = 4096;
const _: () =
    assert!(super::conn::BUDGET_BYTES_MIN >= MSIZE_MIN as usize * 2, "several reads in flight at the smallest msize");
/// The longest name a walk may carry (NAME_MAX).
pub(crate) const NAME_BYTES_MAX: usize = 255;

/// What the loop does after a request.
pub(crate) enum After {
    Continue,
    /// The peer broke the protocol in a way that leaves nothing to answer.
    Close,
    /// The request waits: park it with this job.
    Park(u16, Box<Job>),
    /// A flush or a Tversion removed these parked records' tags.
    Forget(Vec<usize>),
}

/// Handle one decoded request.
pub(crate) fn handle(w: &mut World, conn: &mut Conn, tag: u16, msg: Tmsg<'_>) -> After {
    let trace = w.cfg.trace;
    if trace {
        eprintln!("<-{}- {}", conn.id, proto::trace_t(tag, &msg));
    }
    conn.asked.asked(tag);
    // Tversion starts the connection over, whatever was outstanding.
    if !matches!(msg, Tmsg::Version { .. }) {
        if conn.phase == Phase::AwaitVersion {
            log::info!("conn {}: first message is not Tversion; closing", conn.id);
            return After::Close;
        }
        if conn.parked.contains_key(&tag) {
            conn.error(tag, Error::DupTag, trace);
            return After::Continue;
        }
    }
    let result = match msg {
        Tmsg::Version { msize, version } => return version_(w, conn, tag, msize, version),
        // diod's tools take only ENOENT (or success) from an .L Tauth to
        // mean that no authentication is needed.
        Tmsg::Auth { .. } if conn.dialect == Dialect::L => Err(Error::NoAuthFile),
        Tmsg::Auth { .. } => Err(Error::NoAuth),
        Tmsg::Attach { fid, afid, aname, .. } => attach(w, conn, tag, fid, afid, aname),
        Tmsg::Flush { oldtag } => {
            let flushed = conn.parked.remove(&oldtag);
            if flushed.is_some() {
                conn.asked.forgotten(oldtag);
            }
            conn.reply(tag, &Rmsg::Flush, trace);
            return After::Forget(flushed.into_iter().collect());
        }
        Tmsg::Walk { fid, newfid, names } => walk(w, conn, tag, fid, newfid, names.as_slice()),
        Tmsg::Open { fid, mode } => open(w, conn, tag, fid, Intent::of_mode(mode)),
        Tmsg::Lopen { fid, flags } => open(w, conn, tag, fid, Intent::of_flags(flags)),
        Tmsg::Getattr { fid, .. } => stat(w, conn, tag, fid),
        Tmsg::Read { fid, offset, count } => read(w, conn, tag, fid, offset, count),
        Tmsg::Stat { fid } => stat(w, conn, tag, fid),
        Tmsg::Clunk { fid } => clunk(w, conn, fid).map(|()| {
            conn.reply(tag, &Rmsg::Clunk, trace);
            None
        }),
        // remove(5): the fid is clunked even when the remove fails.
        Tmsg::Remove { fid } => clunk(w, conn, fid).and(Err(Error::ReadOnly)),
        Tmsg::Write { fid, data, .. } => match conn.fids.get(&fid).map(|f| f.opened()) {
            Some(Some(Opened::Zmx { slot, gen })) => Ok(Some(Job::Move(jobs::moves::Move::new(*slot, *gen, data)))),
            Some(Some(Opened::Search(r))) => write_query(w, conn, tag, *r, data),
            Some(_) => Err(Error::ReadOnly),
            None => Err(Error::UnknownFid),
        },
        Tmsg::Create { fid, .. } | Tmsg::Wstat { fid, .. } => {
            Err(if conn.fids.contains_key(&fid) { Error::ReadOnly } else { Error::UnknownFid })
        }
        msg => super::dotl::handle(w, conn, tag, msg),
    };
    match result {
        Ok(Some(job)) => After::Park(tag, Box::new(job)),
        Ok(None) => After::Continue,
        Err(e) => {
            conn.error(tag, e, trace);
            After::Continue
        }
    }
}

/// version(5): negotiate msize and dialect; a Tversion mid-session aborts
/// every request and clunks every fid first.
fn version_(w: &mut World, conn: &mut Conn, tag: u16, msize: u32, version: &[u8]) -> After {
    let forgotten = reset_session(w, conn);
    conn.asked.restarted(tag);
    let trace = w.cfg.trace;
    if msize < MSIZE_MIN {
        conn.phase = Phase::AwaitVersion;
        conn.error(tag, Error::MsizeTooSmall, trace);
        return After::Forget(forgotten);
    }
    let msize = msize.min(w.cfg.msize);
    match Dialect::negotiate(version) {
        Some(dialect) => {
            conn.dialect = dialect;
            conn.msize = msize;
            conn.phase = Phase::Ready;
            conn.reply(tag, &Rmsg::Version { msize, version: dialect.version().as_bytes() }, trace);
        }
        None => {
            conn.phase = Phase::AwaitVersion;
            conn.reply(tag, &Rmsg::Version { msize, version: b"unknown" }, trace);
        }
    }
    After::Forget(forgotten)
}

/// Forget every parked request (its reply will never be sent) and clunk
/// every fid. Returns the forgotten records, for the server to reap.
pub(crate) fn reset_session(w: &mut World, conn: &mut Conn) -> Vec<usize> {
    let forgotten = conn.parked.drain().map(|(_, key)| key).collect();
    for fid in conn.fids.clear(&mut w.fids_total) {
        w.tree.release(fid.node);
        if let Some(open) = fid.open {
            w.release_opened(open.what);
        }
    }
    super::reply::keep_listing(w, conn, None);
    conn.dir_looks.clear();
    forgotten
}

fn attach(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, afid: u32, aname: &[u8]) -> Decided {
    if afid != NOFID {
        return Err(Error::BadAfid);
    }
    if !aname.is_empty() {
        return Err(Error::BadAname);
    }
    if conn.fids.contains_key(&fid) {
        return Err(Error::FidInUse);
    }
    w.fid_room(conn)?;
    let root = w.tree.root();
    w.tree.acquire(root);
    conn.fids.bind(&mut w.fids_total, fid, Fid::new(root, true));
    conn.reply(tag, &Rmsg::Attach { qid: w.tree.static_qid(0) }, w.cfg.trace);
    Ok(None)
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

fn walk(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, newfid: u32, names: &[&[u8]]) -> Decided {
    let from = conn.fids.get(&fid).ok_or(Error::UnknownFid)?;
    if from.open.is_some() && newfid == fid {
        return Err(Error::WalkOpenFid);
    }
    if newfid != fid && conn.fids.contains_key(&newfid) {
        return Err(Error::FidInUse);
    }
    if !names.is_empty() && !from.is_dir {
        return Err(Error::NotDir);
    }
    names.iter().try_for_each(|n| check_name(n))?;
    let (node, is_dir) = (from.node, from.is_dir);
    if newfid != fid {
        w.fid_room(conn)?;
    }
    let cur = w.tree.loc(node, &w.agents).ok_or(Error::NotFound)?;
    if let [name] = names {
        if let Some(reply) = walk_seen(w, conn, node, &cur, name).map(|(qid, bind, look)| Reply::Walk {
            fid,
            newfid,
            qids: vec![qid],
            bind: Some(bind),
            look: Some(Box::new(look)),
        }) {
            super::reply::deliver(w, conn, tag, Ok(reply));
            return Ok(None);
        }
    }
    Ok(Some(Job::Walk(Box::new(jobs::walk::Walk::new(fid, newfid, names, cur, is_dir)))))
}

/// A walk of one name from the directory the connection listed last, within
/// `LISTING_REUSE_FOR_MS`: the listing's entry is the name's qid and its look
/// (the listing applied the exclusion, symlink and hard-link rules, so a
/// name it left out is looked at as always). An expired listing is let go.
fn walk_listed(
    w: &mut World,
    conn: &mut Conn,
    dir: tree::NodeId,
    p: &tree::paths::Place,
    name: &[u8],
) -> Option<Found> {
    let listed = conn.listed.as_deref()?;
    if !listed.fresh(w.cfg.listing_window) {
        super::reply::keep_listing(w, conn, None);
        return None;
    }
    let (e, m) = listed.find(dir, name)?;
    let (qid, m, at, child) = (e.qid, *m, listed.at, Loc::Mirror(p.child(name)));
    if m.is_dir() {
        // Kept as seen at the listing, so the walk's answer does not renew it.
        conn.keep_dir_look(&child, m, at, w.cfg.listing_window);
    }
    Some((qid, (child, m.is_dir()), m))
}

/// A walk of one name answered without a look: from the last listing
/// (`walk_listed`), or to a directory a walk looked at within the window
/// (`conn::DirLook`). An excluded name, `..`, and anything else are walked
/// as always.
fn walk_seen(w: &mut World, conn: &mut Conn, dir: tree::NodeId, cur: &Loc, name: &[u8]) -> Option<Found> {
    if name == b".." || crate::exclude::excluded(name) {
        return None;
    }
    let child = match cur {
        Loc::Mirror(p) => {
            if let Some(found) = walk_listed(w, conn, dir, p, name) {
                return Some(found);
            }
            Loc::Mirror(p.child(name))
        }
        // A harness directory, or a mirror's top (a harness directory's child).
        Loc::Static(d) => {
            w.tree.static_child(*d, name).filter(|c| w.tree.is_harness_dir(c) || matches!(c, Loc::Mirror(_)))?
        }
        _ => return None,
    };
    let m = *conn.dir_look(&child, w.cfg.listing_window)?;
    let qid = match child {
        Loc::Static(i) => w.tree.static_qid(i),
        _ => m.qid(),
    };
    Some((qid, (child, true), m))
}

/// A name found in a listing: its qid, where it is, and what was seen.
type Found = (Qid, (Loc, bool), crate::meta::Meta);

/// Topen and Tlopen: a read of anything, or the one write (an agent's
/// `zmx`, with `--allow-move`); every other intent is refused
/// (CONFORMANCE 22).
fn open(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, intent: Intent) -> Decided {
    let f = conn.fids.get(&fid).ok_or(Error::UnknownFid)?;
    let node = f.node;
    let loc = w.tree.loc(node, &w.agents);
    // The one write: an agent's zmx, opened for writing (truncation is
    // meaningless and allowed, so `echo name > zmx` works), with --allow-move.
    if let (true, Some(Loc::Agent { slot, gen, part: part @ Part::Field(crate::active::Field::Zmx) })) =
        (w.cfg.allow_move, &loc)
    {
        if f.open.is_none() && intent == Intent::Write {
            let found = w.agents.get(*slot, *gen).map(|a| a.found);
            let qid = Qid { ty: QTFILE, version: 0, path: tree::agent_qid_path(found.as_ref(), *part) };
            let what = Opened::Zmx { slot: *slot, gen: *gen };
            conn.fids.open(fid, FidOpen::new(what)).map_err(|_| Error::FidOpen)?;
            conn.reply_open(tag, qid, None, w.cfg.trace);
            return Ok(None);
        }
    }
    if f.open.is_some() {
        return Err(Error::FidOpen);
    }
    // `/search/query`, opened to be written a query and read.
    if let Some(Loc::Static(i)) = loc.as_ref().filter(|l| matches!(l, Loc::Static(i) if w.tree.is_search_query(*i))) {
        if intent == Intent::Refused {
            return Err(Error::ReadOnly);
        }
        let qid = w.tree.static_qid(*i);
        return open_search(w, conn, tag, fid, qid, None);
    }
    if intent != Intent::Read {
        // The one file a write could open, with moves off, says so.
        let zmx = matches!(loc, Some(Loc::Agent { part: Part::Field(crate::active::Field::Zmx), .. }));
        return Err(if zmx { Error::MovesOff } else { Error::ReadOnly });
    }
    let loc = loc.ok_or(Error::NotFound)?;
    open_read(w, conn, tag, fid, node, loc)
}

/// A write to `/search/query`: the search starts over for the query
/// written, whole (a query that does not parse is refused, and the next
/// read says why).
fn write_query(
    w: &mut World,
    conn: &mut Conn,
    tag: u16,
    r: crate::server::searches::SearchRef,
    data: &[u8],
) -> Decided {
    let mut at = w.searches.get_mut(r).ok_or(Error::FidNotOpen)?.at.take();
    w.searches.leave(&mut at, &mut w.ring, &mut w.held.files);
    let s = w.searches.get_mut(r).ok_or(Error::FidNotOpen)?;
    s.begin(crate::search::Query::parse(data));
    if s.query.is_none() {
        return Err(Error::BadQuery);
    }
    conn.reply(tag, &Rmsg::Write { count: data.len() as u32 }, w.cfg.trace);
    Ok(None)
}

/// An open of a search: `/search/<query>` with its query parsed (a query
/// that does not parse opens, and its read says why), `/search/query`
/// with none until one is written.
fn open_search(
    w: &mut World,
    conn: &mut Conn,
    tag: u16,
    fid: u32,
    qid: Qid,
    query: Option<Result<crate::search::Query, String>>,
) -> Decided {
    let r = w.searches.add(query);
    if conn.fids.open(fid, FidOpen::new(Opened::Search(r))).is_err() {
        w.searches.remove(r, &mut w.ring, &mut w.held.files);
        return Err(Error::FidOpen);
    }
    conn.reply_open(tag, qid, None, w.cfg.trace);
    Ok(None)
}

/// An open for reading of `fid` (node `node`, at `loc`): a skeleton file
/// is answered at once; anything else is a job's.
fn open_read(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, node: tree::NodeId, loc: Loc) -> Decided {
    Ok(Some(match loc {
        Loc::Search(name) => {
            let qid = w.tree.skeleton_qid(&Loc::Search(name.clone()), &w.agents);
            return open_search(w, conn, tag, fid, qid, Some(crate::search::Query::parse(&name)));
        }
        Loc::Static(i) if w.tree.is_usage_wait(i) => {
            // Nothing to evaluate yet: its first read answers at once.
            let reader = w.waits.add_reader(Reader::Usage { cursor: None });
            if conn.fids.open(fid, FidOpen::new(Opened::Wait(reader))).is_err() {
                w.waits.remove_reader(reader);
                return Err(Error::FidOpen);
            }
            conn.reply_open(tag, w.tree.static_qid(i), None, w.cfg.trace);
            return Ok(None);
        }
        Loc::Static(i) if !w.tree.static_is_dir(i) && !w.tree.is_machine_wait(i) && w.tree.report(i).is_none() => {
            // `/health` changes as chats are read: an open reads it as it
            // was, whatever reads it takes.
            let what = match i {
                crate::tree::HEALTH => Opened::Text(std::rc::Rc::new(w.tree.fact_text(i).into_bytes())),
                _ => Opened::Fact(i),
            };
            conn.fids.open(fid, FidOpen::new(what)).map_err(|_| Error::FidOpen)?;
            let qid = w.tree.static_qid(i);
            conn.reply_open(tag, qid, None, w.cfg.trace);
            return Ok(None);
        }
        Loc::Static(i) if w.tree.is_machine_wait(i) => Job::WaitAll(Box::new(WaitAll::open(fid, w.tree.static_qid(i)))),
        Loc::Static(i) if w.tree.report(i).is_some() => {
            let what = jobs::report::For::Open(fid, w.tree.report(i).expect("checked"));
            Job::Report(Box::new(jobs::report::UsageReport::new(what, w.tree.static_qid(i))))
        }
        Loc::Static(tree::USAGE) => {
            let what = jobs::report::For::List(fid);
            Job::Report(Box::new(jobs::report::UsageReport::new(what, w.tree.static_qid(tree::USAGE))))
        }
        Loc::Static(i) if w.tree.sessions_harness(i).is_some() => {
            let h = w.tree.sessions_harness(i).expect("checked");
            Job::SessionsList(Box::new(jobs::sessions_list::SessionsList::new(fid, h, i)))
        }
        Loc::Static(i) => Job::Listing(Box::new(jobs::listing::Listing::new(fid, i))),
        Loc::Agent { slot, gen, part: Part::Wait } => Job::Wait(Wait::open(fid, slot, gen)),
        Loc::Agent { slot, gen, part: Part::Chat } => Job::Chat(ChatView::open(fid, ChatOf::Agent(slot, gen), None)),
        Loc::Agent { slot, gen, part: Part::ChatMsg(id) } => {
            Job::Chat(ChatView::open(fid, ChatOf::Agent(slot, gen), Some(id)))
        }
        Loc::Session { key, part: SPart::Chat } => Job::Chat(ChatView::open(fid, ChatOf::Session(key), None)),
        Loc::Session { key, part: SPart::ChatMsg(id) } => {
            Job::Chat(ChatView::open(fid, ChatOf::Session(key), Some(id)))
        }
        Loc::Session { key, part: part @ (SPart::Dir | SPart::Field(_) | SPart::Agents | SPart::Usage) } => {
            Job::Session(Box::new(jobs::session::Session::node(Some(fid), key, part)))
        }
        Loc::Agent { slot, gen, part: part @ (Part::Dir | Part::Field(_)) } => {
            Job::Derive(Box::new(jobs::derive::Derive::open(fid, slot, gen, part)))
        }
        // The walk's look said moments ago that it can be read
        // (`LOOK_REUSE_FOR`): open it, and check what was opened.
        loc @ Loc::Mirror(_)
            if conn.look.as_ref().is_some_and(|l| l.fresh_for(node) && (l.meta.is_regular() || l.meta.is_dir())) =>
        {
            Job::Open(Box::new(jobs::open::Open::after_look(fid, loc)))
        }
        loc => Job::Open(Box::new(jobs::open::Open::new(fid, loc))),
    }))
}

fn read(w: &mut World, conn: &mut Conn, tag: u16, fid: u32, offset: u64, count: u32) -> Decided {
    let f = conn.fids.get(&fid).ok_or(Error::UnknownFid)?;
    let count = count.min(conn.msize - IOHDRSZ);
    let trace = w.cfg.trace;
    match f.opened().cloned() {
        None | Some(Opened::Zmx { .. }) => Err(Error::FidNotOpen),
        Some(Opened::File { fd, size }) => {
            // No file reaches past i64::MAX: a read at or over it, or of
            // nothing, is empty — and must not reach the kernel, which
            // refuses a range that overflows (and reads -1 as "the current
            // position").
            let count = count.min((i64::MAX as u64).saturating_sub(offset).min(u32::MAX as u64) as u32);
            if count == 0 {
                conn.reply(tag, &Rmsg::Read { data: &[] }, trace);
                return Ok(None);
            }
            Ok(Some(Job::Read(jobs::read::Read::new(tag, fd, offset, count, size))))
        }
        // 9P2000.L lists with Treaddir; a directory's Tread is 9P2000's.
        Some(Opened::Dir(_)) if conn.dialect == Dialect::L => Err(Error::IsDir),
        Some(Opened::Dir(entries)) => read_dir(w, conn, tag, fid, &entries, offset, count),
        // An extended-attribute list: there are none.
        Some(Opened::Xattrs) => {
            conn.reply(tag, &Rmsg::Read { data: &[] }, trace);
            Ok(None)
        }
        Some(Opened::Fact(i)) => {
            let start = conn.begin_in_place(tag, InPlace::Read);
            if let Err(e) = w.tree.read_static(i, offset, count, &mut conn.outq) {
                conn.abandon_in_place(start);
                return Err(e);
            }
            conn.reply_in_place(tag, start, InPlace::Read, trace);
            Ok(None)
        }
        Some(Opened::Text(text)) => {
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
            let end = start.saturating_add(count as usize).min(text.len());
            conn.reply(tag, &Rmsg::Read { data: &text[start..end] }, trace);
            Ok(None)
        }
        Some(Opened::Search(r)) => {
            Ok(Some(Job::Search(Box::new(jobs::search::SearchRead::new(tag, r, offset, count)))))
        }
        Some(Opened::Wait(reader)) => {
            if w.waits.read_arrived(reader, offset, count) {
                conn.reply(tag, &Rmsg::Read { data: &[] }, trace);
                return Ok(None);
            }
            if w.waits.parked.get() >= w.cfg.max_waits {
                w.refusals.warn(format_args!("conn {}: at --max-waits {}", conn.id, w.cfg.max_waits));
                return Err(Error::TooManyWaits);
            }
            // A line never splits: the count is what the reply may hold.
            Ok(Some(match w.waits.reader(reader) {
                Some(Reader::Agent { .. }) => Job::Wait(Wait::read(tag, reader, count)),
                Some(Reader::Machine { .. }) => Job::WaitAll(Box::new(WaitAll::read(tag, reader, count))),
                Some(Reader::Usage { .. }) => {
                    let what = jobs::report::For::Wait { tag, reader, count };
                    let qid = w.tree.usage_wait().map(|i| w.tree.static_qid(i)).ok_or(Error::NotFound)?;
                    Job::Report(Box::new(jobs::report::UsageReport::new(what, qid)))
                }
                None => return Err(Error::FidNotOpen),
            }))
        }
        Some(Opened::Chat { entry, id }) => {
            Ok(Some(Job::ChatRead(Box::new(jobs::chat_read::ChatRead::new(tag, entry, id, offset, count)))))
        }
    }
}

/// A 9P2000 directory read: whole stat entries only, from offset 0 or
/// where the previous read ended (read(5)), out of the snapshot made at
/// Topen. A count too small for the next entry reads 0 bytes, as lib9p
/// and QEMU answer it: the Linux client asks for the few bytes left in its
/// readdir buffer, and fails the whole listing on an error; its next read,
/// with a full count, continues at the same offset.
fn read_dir(
    w: &mut World,
    conn: &mut Conn,
    tag: u16,
    fid: u32,
    entries: &[tree::Entry],
    offset: u64,
    count: u32,
) -> Decided {
    let open = conn.fids.get(&fid).and_then(|f| f.open.as_deref()).expect("checked by read");
    let index = match offset {
        0 => 0,
        o if o == open.dir_offset => open.dir_index as usize,
        _ => return Err(Error::BadOffset),
    };
    let dialect = conn.dialect;
    let start = conn.begin_in_place(tag, InPlace::ReadDir9p);
    let data_start = conn.outq.len();
    let mut next = index;
    for entry in &entries[index.min(entries.len())..] {
        if conn.outq.len() - data_start + w.tree.stat_size(entry, dialect) > count as usize {
            break;
        }
        w.tree.with_stat(entry, |st| proto::encode_stat(&mut conn.outq, st, dialect));
        next += 1;
    }
    let written = conn.outq.len() - data_start;
    conn.reply_in_place(tag, start, InPlace::ReadDir9p, w.cfg.trace);
    let open = conn.fids.open_mut(fid).expect("checked by read");
    open.dir_offset = offset + written as u64;
    open.dir_index = next as u32;
    Ok(None)
}

/// Tstat and Tgetattr: the reply's shape is the dialect's
/// (`reply::stat_reply`).
fn stat(w: &mut World, conn: &mut Conn, tag: u16, fid: u32) -> Decided {
    let f = conn.fids.get(&fid).ok_or(Error::UnknownFid)?;
    let node = f.node;
    let loc = w.tree.loc(node, &w.agents).ok_or(Error::NotFound)?;
    let job = match loc.clone() {
        Loc::Static(i) if w.tree.report(i).is_some() => {
            let what = jobs::report::For::Stat(i, w.tree.report(i).expect("checked"));
            Some(Job::Report(Box::new(jobs::report::UsageReport::new(what, w.tree.static_qid(i)))))
        }
        Loc::Static(_) if !w.tree.is_harness_dir(&loc) => None,
        // A harness directory a walk just found: the skeleton's entry.
        Loc::Static(_) if conn.dialect == Dialect::L && reuse_look_for_getattr(conn, node) => {
            let entry = w.tree.entry(&loc, &Attr::Skeleton, &w.agents);
            super::reply::stat_reply(&w.tree, conn, tag, &entry, None, w.cfg.trace);
            return Ok(None);
        }
        Loc::Agent { part: Part::Dir | Part::Chat | Part::Wait, .. } => None,
        Loc::Agent { slot, gen, part: part @ Part::Field(_) } => {
            Some(Job::Derive(Box::new(jobs::derive::Derive::stat(slot, gen, part))))
        }
        Loc::Agent { slot, gen, part: Part::ChatMsg(id) } => {
            Some(Job::Chat(ChatView::stat(ChatOf::Agent(slot, gen), id)))
        }
        Loc::Session { key, part: SPart::ChatMsg(id) } => Some(Job::Chat(ChatView::stat(ChatOf::Session(key), id))),
        Loc::Session { key, part: part @ (SPart::Dir | SPart::Field(_) | SPart::Usage) } => {
            Some(Job::Session(Box::new(jobs::session::Session::node(None, key, part))))
        }
        Loc::Session { part: SPart::Chat | SPart::Agents, .. } | Loc::Search(_) => None,
        Loc::Mirror(_) if conn.dialect == Dialect::L && reuse_look_for_getattr(conn, node) => {
            let meta = conn.look.as_ref().expect("just checked").meta;
            let entry = w.tree.entry(&loc, &Attr::Disk(meta), &w.agents);
            super::reply::stat_reply(&w.tree, conn, tag, &entry, Some(&meta), w.cfg.trace);
            return Ok(None);
        }
        Loc::Mirror(ref p) => match listed_dir(w, conn, p) {
            Some((dir, name)) => Some(Job::Stat(Box::new(jobs::stat::Stat::in_dir(loc.clone(), dir, name)))),
            None => Some(Job::Stat(Box::new(jobs::stat::Stat::new(loc.clone())))),
        },
        _ => Some(Job::Stat(Box::new(jobs::stat::Stat::new(loc.clone())))),
    };
    if job.is_some() {
        return Ok(job);
    }
    // The skeleton, and an agent's own directories: the tables know.
    if w.tree.presence(&loc, &w.agents) == tree::Presence::Absent {
        return Err(Error::NotFound);
    }
    // A wait file is a stream: length 0, a version that never moves.
    let attr = match loc {
        Loc::Agent { part: Part::Wait, .. } | Loc::Search(_) => {
            Attr::Text { len: 0, version: 0, mtime: w.tree.started_unix() }
        }
        _ => Attr::Skeleton,
    };
    let entry = w.tree.entry(&loc, &attr, &w.agents);
    super::reply::stat_reply(&w.tree, conn, tag, &entry, None, w.cfg.trace);
    Ok(None)
}

/// The open directory of the connection's listing, if `p` is a name in it
/// and the listing is within `--listing-window`: `ls -lR` stats every name
/// it listed, and a statx of one name beneath the listing's own fd is one
/// operation where a look is three (the open beneath the base, its statx,
/// its close). The name is looked at afresh, every rule applied (a symlink
/// or a hard-linked file is not there); the directory is the one the
/// listing read, as its walks are (`walk_listed`).
fn listed_dir(w: &World, conn: &Conn, p: &tree::paths::Place) -> Option<(Rc<OwnedFd>, CString)> {
    let listed = conn.listed.as_deref().filter(|l| l.fresh(w.cfg.listing_window))?;
    let dir_fd = listed.dir_fd.as_ref()?;
    let name = p.name();
    let Some(Loc::Mirror(dir)) = w.tree.loc(listed.dir, &w.agents) else { return None };
    if p.parent().as_ref() != Some(&dir) {
        return None;
    }
    listed.find(listed.dir, name)?;
    Some((dir_fd.clone(), CString::new(name).ok()?))
}

/// Linux's lookup is a Twalk and then a Tgetattr of the new fid: the
/// walk's look, if it is that file's and fresh, answers the first such
/// Tgetattr (`LOOK_REUSE_FOR`); any other looks again.
fn reuse_look_for_getattr(conn: &mut Conn, node: tree::NodeId) -> bool {
    match conn.look.as_deref_mut() {
        Some(l) if !l.statted && l.fresh_for(node) => {
            l.statted = true;
            true
        }
        _ => false,
    }
}

fn clunk(w: &mut World, conn: &mut Conn, fid: u32) -> Result<(), Error> {
    let f = conn.fids.clunk(&mut w.fids_total, fid).ok_or(Error::UnknownFid)?;
    if conn.look.as_ref().is_some_and(|l| l.node == f.node) {
        conn.look = None;
    }
    if conn.listed.as_ref().is_some_and(|l| l.dir == f.node && !l.fresh(w.cfg.listing_window)) {
        super::reply::keep_listing(w, conn, None);
    }
    // The directory stays open only while the fid that listed it does.
    if let Some(l) = conn.listed.as_deref_mut().filter(|l| l.open_fid == fid) {
        super::reply::release_listed_dir(w, l);
    }
    w.tree.release(f.node);
    if let Some(open) = f.open {
        w.release_opened(open.what);
    }
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
