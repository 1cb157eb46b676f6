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
use crate::proto::{self, Rmsg, WalkQids};

use super::conn::{Conn, Fid, Open, Opened};
use super::jobs::Reply;
use super::world::World;

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
        Reply::Walk { newfid, fid, qids, bind } => {
            if let Some((loc, is_dir)) = bind {
                let node = world.tree.bind(&loc);
                if newfid != fid {
                    world.fids_total += 1;
                }
                if let Some(old) = conn.fids.insert(newfid, Fid::new(node, is_dir)) {
                    debug_assert_eq!(fid, newfid);
                    world.tree.release(old.node);
                    if let Some(open) = old.open {
                        world.release_opened(open.what);
                    }
                }
            }
            let qids = WalkQids::new(&qids).expect("at most MAXWELEM names");
            conn.reply(tag, &Rmsg::Walk { qids }, trace);
        }
        Reply::Stat(entry) => world.tree.with_stat(&entry, |st| conn.reply(tag, &Rmsg::Stat { stat: *st }, trace)),
        Reply::Open { opened: Opened::Dir(entries), .. }
            if world.held.entries + entries.len() > world.cfg.max_listed_entries =>
        {
            conn.error(tag, Error::TooManyOpenFiles, trace);
        }
        Reply::Open { fid, qid, opened } => match conn.fids.get_mut(&fid) {
            Some(f) if f.open.is_none() => {
                if let Opened::Dir(entries) = &opened {
                    world.held.entries += entries.len();
                }
                f.open = Some(Box::new(Open { what: opened, dir_offset: 0, dir_index: 0 }));
                let iounit = conn.msize - proto::IOHDRSZ;
                conn.reply(tag, &Rmsg::Open { qid, iounit }, trace);
            }
            _ => {
                discard(world, Ok(Reply::Open { fid, qid, opened }));
                conn.error(tag, Error::UnknownFid, trace);
            }
        },
        Reply::Write { count } => conn.reply(tag, &Rmsg::Write { count }, trace),
        Reply::Read(bytes) => {
            if trace {
                eprintln!("-{}-> Rread tag {tag} count {}", conn.id, bytes.len() - 11);
            }
            conn.push_chunk(bytes);
        }
    }
}

/// An answer nobody will read: let go of what it holds. Only an fd is
/// counted before a fid takes it; a snapshot's entries are counted when a
/// fid takes them.
pub(crate) fn discard(world: &mut World, result: Result<Reply, Error>) {
    if let Ok(Reply::Open { opened: opened @ Opened::File(_), .. }) = result {
        world.release_opened(opened);
    }
}
