//! The world a request is served in: the ring, the configuration, the
//! namespace, the live tables (agents, chat indexes), and the counts that
//! bound what every client together may hold. Connections and parked
//! records live beside it in `Server`, so a job's context (`Cx`) can
//! borrow the world while its record is borrowed too.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use crate::active::agents::Agents;
use crate::chat::pool::Pool;
use crate::harness::Harness;
use crate::ring::{Ring, Sub};
use crate::tree::Tree;

use super::config::Config;
use super::conn::Conn;
use super::fids::Opened;
use super::limits::RateLog;
use super::ops::Token;
use super::watch::{Gone, Waits};
use crate::errors::Error;

/// Files held open for open fids, across all connections. A fid opened on
/// a file keeps its fd, so a file unlinked while open stays readable and a
/// read resolves no path; past this many the Topen is refused, so what
/// clients do never runs the daemon out of descriptors.
pub(crate) const OPEN_FILES_MAX: usize = 4096;

/// The default of `--max-listed-entries`: directory entries held by open
/// directory fids, across all connections. A snapshot entry costs about 90
/// bytes, so this bounds them near 100 MB however many fids clients open
/// on large directories; past it a directory's Topen answers `Too many
/// open files in system`.
pub const LISTED_ENTRIES_MAX: usize = 1 << 20;

/// What open fids hold, across all connections: fds (`OPEN_FILES_MAX`)
/// and directory entries snapshotted at Topen (`--max-listed-entries`).
#[derive(Default, Debug)]
pub(crate) struct Held {
    pub files: super::count::Count,
    pub entries: super::count::Count,
}

pub(crate) struct World {
    pub ring: Ring<Token>,
    pub cfg: Config,
    pub tree: Tree,
    pub agents: Agents,
    pub chats: Pool,
    pub held: Held,
    pub real: RealPaths,
    /// Ring operations of jobs in flight (`jobs::JOB_OPS_MAX`).
    pub job_ops: usize,
    /// Fids of every connection, and walks in flight that will make one
    /// (`--max-fids-total`).
    pub fids_total: super::count::Count,
    /// Refusals logged, at most a few a second (`limits::RateLog`).
    pub refusals: RateLog,
    /// Agents a move is under way for: each entry lives as long as the
    /// move's record (`jobs::moves`).
    pub moving: std::collections::HashSet<(u32, u32)>,
    /// Bytes of file reads jobs started this turn of the loop.
    pub turn_read_bytes: usize,
    /// The `wait` readers, and the watches that wake their reads.
    pub waits: Waits,
    /// The harness bases opened lately (`ops::Bases`).
    pub bases: super::ops::Bases,
    /// Harness directories' listings, kept and checked (`listings`).
    pub listings: super::listings::Listings,
    /// The last `/usage` reports settled, and the fingerprint of the home
    /// they were settled from (`reports::Book::fingerprint`).
    pub last_report: Option<(u64, std::rc::Rc<crate::reports::book::Settled>)>,
    /// The searches open now (`searches`).
    pub searches: super::searches::Searches,
}

impl World {
    /// Is there room for one more fid, on this connection and in all?
    pub(crate) fn fid_room(&mut self, conn: &Conn) -> Result<(), Error> {
        if conn.fids_counted() >= self.cfg.max_fids {
            self.refusals.warn(format_args!("conn {}: at --max-fids {}", conn.id, self.cfg.max_fids));
            return Err(Error::TooManyFids);
        }
        if self.fids_total.get() >= self.cfg.max_fids_total {
            self.refusals.warn(format_args!("conn {}: at --max-fids-total {}", conn.id, self.cfg.max_fids_total));
            return Err(Error::TooManyOpenFiles);
        }
        Ok(())
    }

    /// What a fid had open is let go: an fd is closed through the ring once
    /// nothing else holds it, a snapshot's entries are given back.
    pub(crate) fn release_opened(&mut self, opened: Opened) {
        match opened {
            Opened::Wait(r) => {
                for gone in self.waits.remove_reader(r) {
                    self.close_watch(gone);
                }
            }
            Opened::Search(r) => self.searches.remove(r, &mut self.ring, &mut self.held.files),
            opened => release_opened(&mut self.ring, &mut self.held, opened),
        }
    }

    /// A watch goes: its pidfd's poll cancelled and the fd closed, both
    /// through the ring (the poll's completion comes back as an `Exit` of
    /// an agent nobody watches any more); its chat entry unpinned.
    pub(crate) fn close_watch(&mut self, gone: Gone) {
        if let Some(key) = gone.poll {
            self.ring.submit(Token::Discard, Sub::Cancel { key });
        }
        if let Some(fd) = gone.pidfd {
            self.ring.submit(Token::Discard, Sub::Close { fd });
        }
        if let Some(i) = gone.chat {
            self.chats.unpin(i);
        }
    }
}

/// `World::release_opened`, for callers that hold only the ring and the
/// counts (a job's context).
pub(crate) fn release_opened(ring: &mut Ring<Token>, held: &mut Held, opened: Opened) {
    match opened {
        Opened::File { fd, .. } => release_file(ring, held, fd),
        Opened::Dir(rc) if Rc::strong_count(&rc) == 1 => held.entries.give(rc.len()),
        _ => {}
    }
}

/// Let go of a counted fd: closed through the ring once its last holder
/// (a fid, a read in flight, a chat entry) lets go.
pub(crate) fn release_file(ring: &mut Ring<Token>, held: &mut Held, rc: Rc<OwnedFd>) {
    if super::ops::release_shared(ring, rc) {
        held.files.give(1);
    }
}

/// Paths resolved as the kernel spells them (readlink of /proc's fd links
/// and cwd gives resolved paths).
#[derive(Default)]
pub(crate) struct RealPaths {
    pub bases: [Option<Vec<u8>>; crate::harness::Harness::COUNT],
    pub home: Vec<u8>,
    pub tmp: Vec<u8>,
}

impl RealPaths {
    /// Resolve at start: the bases that exist, `$HOME`, the temp dir.
    pub(crate) fn at_start(tree: &Tree) -> RealPaths {
        let mut real = RealPaths::default();
        real.retry_bases(tree);
        let home = std::env::var_os("HOME").map(|h| h.into_encoded_bytes()).unwrap_or_default();
        let tmp = std::env::temp_dir().into_os_string().into_encoded_bytes();
        real.home = canonical(&home).unwrap_or(home);
        real.tmp = canonical(&tmp).unwrap_or(tmp);
        real
    }

    /// A base that did not exist at start is tried again (per scan) until
    /// it does: at most five short path walks, the only filesystem calls
    /// made off the ring here.
    pub(crate) fn retry_bases(&mut self, tree: &Tree) {
        for h in Harness::ALL {
            if self.bases[h.index()].is_none() {
                self.bases[h.index()] = tree.harness_base(h).and_then(|b| canonical(b.as_bytes()));
            }
        }
    }
}

fn canonical(path: &[u8]) -> Option<Vec<u8>> {
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    std::fs::canonicalize(path).ok().map(|p| p.into_os_string().into_encoded_bytes())
}
