//! What a job's answer does to its connection: the one place a parked
//! request's reply is written, and its fids bound or opened.
//!
//! A walk that landed binds newfid (unless another request took it while
//! the walk was parked); an open sets the fid's open state (unless the fid
//! was clunked meanwhile, in which case what it opened is let go); a stat
//! encodes its entry; a read's reply is already whole. An answer nobody
//! wants any more (flushed, hung up) is `discard`ed, which lets go of what
//! it holds the same way.

use crate::errors::Error;
use crate::meta::Meta;
use crate::proto::{Dialect, Rmsg, WalkQids};
use crate::tree::{Entry, Tree};

use super::conn::{Conn, Listed, Look};
use super::fids::{Fid, FidOpen, Opened};
use super::fresh::Seen;
use super::jobs::cx::Cursor;
use super::jobs::read::RREAD_HEADER_BYTES;
use super::jobs::Reply;
use super::ops::Token;
use super::watch::{hold_for_machine, AgentKey, Reader, ReaderRef};
use super::world::{release_file, World, OPEN_FILES_MAX};
use crate::ring::Sub;
use std::collections::BTreeSet;
use std::rc::Rc;

/// Write the answer to `tag` on `conn`.
pub(crate) fn deliver(world: &mut World, conn: &mut Conn, tag: u16, result: Result<Reply, Error>) {
    let trace = world.cfg.trace;
    let reply = match result {
        Ok(r) => r,
        Err(e) => return conn.error(tag, e, trace),
    };
    match reply {
        Reply::Walk { newfid, fid, bind: Some(_), .. } if newfid != fid && conn.fids.contains_key(&newfid) => {
            // Another request took newfid while this walk was parked.
            conn.error(tag, Error::FidInUse, trace);
        }
        Reply::Walk { newfid, fid, qids, bind, look } => {
            if let Some((loc, is_dir)) = bind {
                bind_walked(world, conn, (fid, newfid), loc, is_dir, look.map(|m| (*m, qids.len())));
            }
            let qids = WalkQids::new(&qids).expect("at most MAXWELEM names");
            conn.reply(tag, &Rmsg::Walk { qids }, trace);
        }
        Reply::Listed { fid, qid, entries, metas, dir } => {
            deliver_listed(world, conn, tag, (fid, qid), (entries, metas), dir);
        }
        Reply::Stat(entry, meta) => stat_reply(&world.tree, conn, tag, &entry, meta.as_deref(), trace),
        Reply::Open { opened: Opened::Dir(entries), .. }
            if world.held.entries.get() + entries.len() > world.cfg.max_listed_entries =>
        {
            conn.error(tag, Error::TooManyOpenFiles, trace);
        }
        Reply::Open { fid, qid, opened } => {
            let size = match &opened {
                Opened::File { size, .. } => Some(*size),
                _ => None,
            };
            let entries = match &opened {
                Opened::Dir(entries) => entries.len(),
                _ => 0,
            };
            match conn.fids.open(fid, FidOpen::new(opened)) {
                Ok(()) => {
                    world.held.entries.take(entries);
                    conn.reply_open(tag, qid, size, trace);
                }
                Err(open) => {
                    discard(world, Ok(Reply::Open { fid, qid, opened: open.what }));
                    conn.error(tag, Error::UnknownFid, trace);
                }
            }
        }
        Reply::Write { count } => conn.reply(tag, &Rmsg::Write { count }, trace),
        Reply::Wait { reader, bytes, cursor } => {
            let count = bytes.len() - RREAD_HEADER_BYTES;
            conn.reply_whole(tag, bytes, false, "Rread (wait)", trace);
            world.waits.read_answered(reader, count);
            if let Some(cursor) = cursor {
                move_cursor(world, reader, cursor);
            }
        }
        Reply::Read(bytes) => conn.reply_whole(tag, bytes, true, "Rread", trace),
    }
}

/// A walk of `fids` (fid, newfid) that walked every name binds newfid to
/// `loc`, keeping the look at the last name (`look`: what it saw, and how
/// many names were walked) for the requests that follow.
fn bind_walked(
    world: &mut World,
    conn: &mut Conn,
    (fid, newfid): (u32, u32),
    loc: crate::tree::Loc,
    is_dir: bool,
    look: Option<(crate::meta::Meta, usize)>,
) {
    let node = world.tree.bind(&loc);
    // A clone (no names) keeps the look of the file it names.
    if let Some((m, names)) = look {
        if is_dir && names == 1 && !world.cfg.listing_window.is_zero() {
            conn.keep_dir_look(&loc, m, Seen::now(), world.cfg.listing_window);
        }
        conn.look = Some(Box::new(Look { node, meta: m, at: Seen::now(), statted: false }));
    }
    if let Some(old) = conn.fids.bind(&mut world.fids_total, newfid, Fid::new(node, is_dir)) {
        debug_assert_eq!(fid, newfid);
        world.tree.release(old.node);
        if let Some(open) = old.open {
            world.release_opened(open.what);
        }
    }
}

/// A disk directory's open: answered as any open, then its listing (and,
/// within the window, the directory's fd) kept on the connection for the
/// walks and stats that follow (`Listed`).
fn deliver_listed(
    world: &mut World,
    conn: &mut Conn,
    tag: u16,
    (fid, qid): (u32, crate::proto::Qid),
    (entries, metas): (Rc<Vec<Entry>>, Vec<crate::meta::Meta>),
    mut fd: Option<std::os::fd::OwnedFd>,
) {
    let node = conn.fids.get(&fid).map(|f| f.node);
    deliver(world, conn, tag, Ok(Reply::Open { fid, qid, opened: Opened::Dir(entries.clone()) }));
    let opened = conn.fids.get(&fid).and_then(|f| f.opened());
    let mut listed = None;
    if let (Some(dir), Some(Opened::Dir(kept))) = (node, opened) {
        if Rc::ptr_eq(kept, &entries) && !world.cfg.listing_window.is_zero() {
            let dir_fd = fd.take().filter(|_| world.held.files.get() < OPEN_FILES_MAX).map(Rc::new);
            world.held.files.take(usize::from(dir_fd.is_some()));
            let at = Seen::now();
            listed = Some(Box::new(Listed { dir, at, entries, metas, dir_fd, open_fid: fid }));
        }
    }
    if let Some(fd) = fd {
        world.ring.submit(Token::Discard, Sub::Close { fd });
    }
    if listed.is_some() {
        keep_listing(world, conn, listed);
    }
}

/// A `wait` reader's lines were delivered: its cursor moves past them. A
/// machine reader takes a watch on each agent it now knows and lets go of
/// those it no longer does.
fn move_cursor(world: &mut World, reader: ReaderRef, cursor: Cursor) {
    match cursor {
        Cursor::Agent(next) => {
            if let Some(Reader::Agent { cursor, .. }) = world.waits.reader_mut(reader) {
                *cursor = next;
            }
        }
        Cursor::Usage(next) => {
            if let Some(Reader::Usage { cursor }) = world.waits.reader_mut(reader) {
                *cursor = Some(next);
            }
        }
        Cursor::Machine(next) => {
            let Some(Reader::Machine { held, .. }) = world.waits.reader(reader) else { return };
            let keys: BTreeSet<AgentKey> = next.values().map(|(k, _)| *k).collect();
            let (gone, new): (Vec<AgentKey>, Vec<AgentKey>) =
                (held.difference(&keys).copied().collect(), keys.difference(held).copied().collect());
            for agent in gone {
                if let Some(gone) = world.waits.release(agent) {
                    world.close_watch(gone);
                }
            }
            let mut taken = Vec::new();
            for agent in new {
                if hold_for_machine(&world.tree, &world.agents, &mut world.ring, &mut world.waits, agent) {
                    taken.push(agent);
                }
            }
            if let Some(Reader::Machine { cursor, held }) = world.waits.reader_mut(reader) {
                held.retain(|k| keys.contains(k));
                held.extend(taken);
                *cursor = next;
            }
        }
    }
}

/// The reply to a Tstat (Rstat) or, in 9P2000.L, a Tgetattr (Rgetattr,
/// with the real link count, blocks and times where the file is on disk).
pub(crate) fn stat_reply(tree: &Tree, conn: &mut Conn, tag: u16, e: &Entry, meta: Option<&Meta>, trace: bool) {
    if conn.dialect == Dialect::L {
        return conn.reply(tag, &Rmsg::Getattr(tree.getattr(e, meta)), trace);
    }
    tree.with_stat(e, |st| conn.reply(tag, &Rmsg::Stat { stat: *st }, trace));
}

/// An answer nobody will read: let go of what it holds. Only an fd is
/// counted before a fid takes it; a snapshot's entries are counted when a
/// fid takes them.
/// Keep `listed` as the connection's last listing (`LISTING_REUSE_FOR_MS`),
/// letting go of the one before: its snapshot is uncounted from
/// `--max-listed-entries` once neither a fid nor the connection holds it.
pub(crate) fn keep_listing(world: &mut World, conn: &mut Conn, listed: Option<Box<Listed>>) {
    if let Some(mut old) = std::mem::replace(&mut conn.listed, listed) {
        release_listed_dir(world, &mut old);
        world.release_opened(Opened::Dir(old.entries));
    }
}

/// Let go of a listing's open directory (its snapshot stays for the walks).
pub(crate) fn release_listed_dir(world: &mut World, listed: &mut Listed) {
    if let Some(fd) = listed.dir_fd.take() {
        release_file(&mut world.ring, &mut world.held, fd);
    }
}

pub(crate) fn discard(world: &mut World, result: Result<Reply, Error>) {
    match result {
        Ok(Reply::Open { opened: opened @ Opened::File { .. }, .. }) => world.release_opened(opened),
        Ok(Reply::Listed { dir: Some(fd), .. }) => {
            world.ring.submit(Token::Discard, Sub::Close { fd });
        }
        _ => {}
    }
}
