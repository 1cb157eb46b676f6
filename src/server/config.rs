//! What the command line decides for the server: its limits, its
//! permissions, the move's clocks. Plain data, read by everything.

use std::time::Duration;

/// Everything the command line decides for the server.
#[derive(Clone, Debug)]
pub struct Config {
    /// The largest message we accept or send (`--msize`).
    pub msize: u32,
    /// Fids per connection (`--max-fids`), walks in flight included.
    pub max_fids: usize,
    /// Fids of all connections together (`--max-fids-total`).
    pub max_fids_total: usize,
    /// Connections at once (`--max-conns`); past it a new one is closed.
    pub max_conns: usize,
    /// A connection that has not finished Tversion by then is closed
    /// (`--version-deadline`, ms).
    pub version_deadline: Duration,
    /// `-D`: print every message.
    pub trace: bool,
    /// Entries a directory may have and still be listed (`--max-dir-entries`).
    pub max_dir_entries: usize,
    /// Directory entries all open directory fids may hold together
    /// (`--max-listed-entries`).
    pub max_listed_entries: usize,
    /// How long a directory's listing answers the walks into it on its
    /// connection (`--listing-window`, ms; `conn::LISTING_REUSE_FOR`).
    pub listing_window: Duration,
    /// `--allow-hard-links`: serve regular files with more than one link.
    pub allow_hard_links: bool,
    /// `--allow-move`: a write to an agent's `zmx` moves it.
    pub allow_move: bool,
    /// The zmx binary (`--zmx`, else `zmx` on PATH).
    pub zmx: std::path::PathBuf,
    /// Where zmx sessions post themselves: `<post dir>/zmx`.
    pub zmx_dir: std::path::PathBuf,
    /// A move sends SIGKILL this long after SIGTERM (`--move-kill-after`, ms).
    pub move_kill_after: Duration,
    /// A move gives up on an agent that has not exited (`--move-give-up`, ms).
    pub move_give_up: Duration,
    /// A move fails if zmx has not posted by then (`--move-post-deadline`, ms).
    pub move_post_deadline: Duration,
    /// inotify watches all `wait` readers may hold (`--max-watches`).
    pub max_watches: usize,
    /// Reads of `wait` files parked at once (`--max-waits`).
    pub max_waits: usize,
    /// How often `/proc` is rescanned while an `/active/wait` read is
    /// parked (`--rescan-interval`, ms).
    pub rescan_interval: Duration,
    /// Kernel workers the ring may run at once for the operations that
    /// cannot complete inline (`--kernel-workers`; `Ring::limit_workers`).
    pub kernel_workers: u32,
    /// `--max-chats` and `--max-chat-messages`.
    pub max_chats: usize,
    pub max_chat_messages: usize,
    /// Bytes of decoded copies of compressed transcripts held at once
    /// (`--max-inflated`).
    pub max_inflated: u64,
    /// The price table `/usage` prices by: the built-in one, replaced or
    /// extended by `--prices FILE`.
    pub prices: crate::reports::Prices,
    /// The zone `/usage`'s days, weeks and months are in (`--tz`, else the
    /// daemon's local zone).
    pub zone: crate::localtime::Zone,
}
