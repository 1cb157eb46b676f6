//! The `9agents` command: the daemon, or (with a subcommand) a client of it.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitCode;

use nineagents::harness::Harness;
use nineagents::server::{activation, listen, Config, Server};
use nineagents::tree::{Owner, Tree};

const USAGE: &str = "\
usage: 9agents [--unix PATH | --tcp IP:PORT | --fd N] [--no-post] [--name NAME]
               [--tcp-any] [--root NAME=PATH]... [--proc DIR] [--allow-move] [--demo]
               [--msize BYTES] [--max-fids N] [--max-conns N]
               [--max-fids-total N] [--version-deadline MS]
               [--max-dir-entries N] [--listing-window MS] [--max-chats N] [--max-chat-messages N]
               [--max-inflated BYTES] [--prices FILE] [--tz ZONE]
               [--max-watches N] [--max-waits N] [--rescan-interval MS] [--kernel-workers N]
               [--allow-hard-links] [--zmx PATH] [-D] [-v]...
       9agents ls [-l] [-a ADDR] PATH
       9agents cat [-a ADDR] PATH
       9agents stat [-a ADDR] PATH
       9agents write [-a ADDR] PATH        (data from stdin)
       9agents usage [-a ADDR] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [REPORT]
       9agents search [-a ADDR] WORD...
       9agents top [-a ADDR]...
       9agents --stdio [--name NAME] [daemon flags]

Serves every AI coding agent on this machine as a read-only 9P2000 tree,
posted at $XDG_RUNTIME_DIR/9p/NAME (default NAME: agents). ADDR is
unix!/path, tcp!host!port, ssh!host, or a posted name.

With --stdio it serves one 9P session on standard input and output (what
ssh gives `ssh host 9agents --stdio`, which ssh!host runs): relayed to the
daemon posted as NAME when there is one, else served by a daemon of its
own, started with the other flags and stopped when the input ends.

Started by systemd with sockets passed (LISTEN_PID is this process and
LISTEN_FDS is 1 or more: contrib/systemd/9agents.socket), it accepts on those
listening sockets (fds 3 onwards) and does not post: systemd owns the socket
path, so the daemon neither posts nor unposts it, and --name and --no-post
change nothing. --unix and --tcp still add listeners. With --fd N the passed
sockets are not listened on (systemd's Accept=yes: ExecStart=9agents --fd 3).

  --unix PATH      also listen on a Unix socket at PATH
  --tcp IP:PORT    also listen on TCP; a non-loopback IP (0.0.0.0 included)
                   is refused unless --tcp-any is given
  --tcp-any        let --tcp (or a passed TCP socket) listen on a non-loopback
                   address: nothing on the wire is authenticated, so anyone who
                   reaches it reads the tree (prefer ssh -L: README)
  --fd N           serve one 9P session on the connected stream fd N, then exit
  --stdio          one 9P session on stdin and stdout (above), then exit
  --no-post        do not post under $XDG_RUNTIME_DIR/9p
  --name NAME      the posted name (default agents)
  --root NAME=PATH pin a harness root (claude codex omp hermes dsh pi)
  --proc DIR       read processes from DIR instead of /proc
  --allow-move     let a write to /active/<h>/<pid>/zmx move that agent
  --zmx PATH       the zmx binary a move runs (default: zmx on PATH)
  --move-kill-after MS, --move-give-up MS, --move-post-deadline MS
                   a move's clocks (defaults 5000, 12000, 10000)
  --demo           serve the demo home built into the binary (unpacked into a
                   private directory under $XDG_RUNTIME_DIR, removed at exit)
  --msize BYTES    the largest message (default 1048576, at least 4096)
  --max-fids N     fids per connection (default 1048576)
  --max-fids-total N  fids of all connections together (default 2097152)
  --max-conns N    connections at once (default 256)
  --version-deadline MS  close a connection that has not sent Tversion by then
                   (default 5000)
  --max-dir-entries N  entries a listed directory may hold (default 65536)
  --max-listed-entries N  directory entries all open directories hold (default 1048576)
  --listing-window MS  a directory's listing answers the walks into it that
                   follow on its connection for this long (default 1000; 0: never)
  --max-chats N    transcripts whose chat index is kept (default 8)
  --max-chat-messages N  messages one chat may list (default 1048576)
  --max-inflated BYTES  bytes of decoded compressed transcripts held at once
                   (default 1073741824; past it their chat is File too large)
  --prices FILE    a price table (data/prices.txt's form) whose rows replace
                   or extend the built-in one's, for /usage
  --tz ZONE        the zone /usage's days, weeks and months are in, as $TZ
                   would name it (default: the daemon's local zone)
  --max-watches N  inotify watches the wait files may hold (default 8192)
  --max-waits N    reads of wait files parked at once (default 65536)
  --rescan-interval MS  how often /proc is rescanned while a read of
                   /active/wait is parked (default 1000)
  --kernel-workers N  kernel threads at once for the file operations that
                   cannot finish inline: stats, opens, disk reads (default:
                   one less than the CPUs, at least 1; the loop keeps a CPU)
  --allow-hard-links  serve regular files that have more than one hard link
                   (by default they are hidden like symlinks: the other name
                   may be any file of yours)
  -D               print every 9P message to stderr
  -v               more logging (repeat for more)
";

/// Defaults of the limits (see docs/DESIGN.md for why each has its value).
const MSIZE_DEFAULT: u32 = 1 << 20;
const MAX_FIDS_DEFAULT: usize = 1 << 20;
/// Two kernel mounts' worth of fids: about 180 MB at the measured cost of a
/// fid, however many connections share them.
const MAX_FIDS_TOTAL_DEFAULT: usize = 2 << 20;
const MAX_CONNS_DEFAULT: usize = 256;
/// A Tversion is the first thing any client sends, within a round trip of
/// connecting; five seconds is generous to a slow machine and short enough
/// that silent sockets cannot hold the connection slots for long.
const VERSION_DEADLINE_MS: u64 = 5_000;
/// inotify watches the `wait` readers hold: two an agent (its registry
/// directory, its transcript), so thousands of agents watched, well inside
/// Linux's default per-user limit.
const MAX_WATCHES_DEFAULT: usize = 8192;
/// Parked reads of `wait` files: a kernel mount with a `cat wait` per agent
/// per terminal parks one each; about 300 bytes apiece, 20 MB at the cap.
const MAX_WAITS_DEFAULT: usize = 65_536;
/// New processes make no inotify event: while an `/active/wait` read is
/// parked, `/proc` is rescanned this often, and not otherwise.
const RESCAN_INTERVAL_MS: u64 = 1_000;
const MAX_DIR_ENTRIES_DEFAULT: usize = 65_536;
/// A move's clocks (the seed's): SIGKILL 5 s after SIGTERM, give up at
/// 12 s, and wait this long for zmx to post the new session.
const MOVE_KILL_AFTER_MS: u64 = 5_000;
const MOVE_GIVE_UP_MS: u64 = 12_000;
const MOVE_POST_DEADLINE_MS: u64 = 10_000;

/// The ring's kernel workers: one less than the CPUs, so that however many
/// looks a listing has in flight the loop is left a CPU to answer on
/// (bench/README, "Kernel workers"), and at least one.
fn kernel_workers_default() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    u32::try_from(cpus.saturating_sub(1).max(1)).unwrap_or(u32::MAX)
}

fn millis(p: &mut pico_args::Arguments, flag: &'static str, default: u64) -> Result<std::time::Duration, String> {
    let ms: u64 = p.opt_value_from_str(flag).map_err(|e| e.to_string())?.unwrap_or(default);
    Ok(std::time::Duration::from_millis(ms))
}

struct Options {
    cfg: Config,
    unix: Vec<PathBuf>,
    tcp: Vec<SocketAddr>,
    tcp_any: bool,
    fd: Option<i32>,
    post: bool,
    name: String,
    /// `--root` pins, over the defaults (the home's harness dirs, or the
    /// demo's).
    pinned: Vec<(Harness, PathBuf)>,
    /// `--proc`, else `/proc` (or the demo's fake table).
    proc_dir: Option<PathBuf>,
    demo: bool,
    /// The sockets systemd passed, if it did.
    offer: Option<activation::Offer>,
    verbosity: usize,
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if let Some(first) = args.first().and_then(|a| a.to_str()) {
        if matches!(first, "ls" | "cat" | "stat" | "write" | "wait" | "usage" | "search" | "top") {
            let code = nineagents::client::run(std::mem::take(&mut args));
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
    }
    if args.iter().any(|a| a == "--stdio") {
        let code = nineagents::stdio::run(std::mem::take(&mut args));
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    // First, while this is the only thread: it unsets the variables.
    let offer = match activation::take_offer() {
        Ok(offer) => offer,
        Err(e) => {
            eprintln!("9agents: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = match parse(args, offer) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("9agents: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let level = match opts.verbosity {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        _ => log::LevelFilter::Debug,
    };
    let _ = simple_logger::SimpleLogger::new().with_level(level).init();
    match serve(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("9agents: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The daemon's options from its arguments and what systemd passed.
/// (Longer than most: one line per flag, in `USAGE`'s order.)
fn parse(args: Vec<OsString>, offer: Option<activation::Offer>) -> Result<Options, String> {
    let mut p = pico_args::Arguments::from_vec(args);
    if p.contains(["-h", "--help"]) {
        print!("{USAGE}");
        std::process::exit(0);
    }
    let e = |e: pico_args::Error| e.to_string();
    let cfg = Config {
        msize: p.opt_value_from_str("--msize").map_err(e)?.unwrap_or(MSIZE_DEFAULT),
        max_fids: p.opt_value_from_str("--max-fids").map_err(e)?.unwrap_or(MAX_FIDS_DEFAULT),
        max_fids_total: p.opt_value_from_str("--max-fids-total").map_err(e)?.unwrap_or(MAX_FIDS_TOTAL_DEFAULT),
        max_conns: p.opt_value_from_str("--max-conns").map_err(e)?.unwrap_or(MAX_CONNS_DEFAULT),
        version_deadline: millis(&mut p, "--version-deadline", VERSION_DEADLINE_MS)?,
        trace: p.contains("-D"),
        max_dir_entries: p.opt_value_from_str("--max-dir-entries").map_err(e)?.unwrap_or(MAX_DIR_ENTRIES_DEFAULT),
        max_listed_entries: p
            .opt_value_from_str("--max-listed-entries")
            .map_err(e)?
            .unwrap_or(nineagents::server::LISTED_ENTRIES_MAX),
        listing_window: millis(&mut p, "--listing-window", nineagents::server::LISTING_REUSE_FOR_MS)?,
        allow_hard_links: p.contains("--allow-hard-links"),
        allow_move: p.contains("--allow-move"),
        zmx: p.opt_value_from_str("--zmx").map_err(e)?.unwrap_or_else(|| PathBuf::from("zmx")),
        zmx_dir: nineagents::post::post_dir().map(|d| d.join("zmx")).unwrap_or_else(|_| PathBuf::from("/nonexistent")),
        move_kill_after: millis(&mut p, "--move-kill-after", MOVE_KILL_AFTER_MS)?,
        move_give_up: millis(&mut p, "--move-give-up", MOVE_GIVE_UP_MS)?,
        move_post_deadline: millis(&mut p, "--move-post-deadline", MOVE_POST_DEADLINE_MS)?,
        max_watches: p.opt_value_from_str("--max-watches").map_err(e)?.unwrap_or(MAX_WATCHES_DEFAULT),
        max_waits: p.opt_value_from_str("--max-waits").map_err(e)?.unwrap_or(MAX_WAITS_DEFAULT),
        rescan_interval: millis(&mut p, "--rescan-interval", RESCAN_INTERVAL_MS)?,
        kernel_workers: p.opt_value_from_str("--kernel-workers").map_err(e)?.unwrap_or_else(kernel_workers_default),
        max_chats: p.opt_value_from_str("--max-chats").map_err(e)?.unwrap_or(nineagents::chat::MAX_CHATS_DEFAULT),
        max_chat_messages: p
            .opt_value_from_str("--max-chat-messages")
            .map_err(e)?
            .unwrap_or(nineagents::chat::MAX_MESSAGES_DEFAULT),
        max_inflated: p
            .opt_value_from_str("--max-inflated")
            .map_err(e)?
            .unwrap_or(nineagents::server::MAX_INFLATED_DEFAULT),
        prices: prices(p.opt_value_from_str::<_, PathBuf>("--prices").map_err(e)?)?,
        zone: match p.opt_value_from_str::<_, String>("--tz").map_err(e)? {
            Some(tz) => nineagents::localtime::Zone::named(&tz).ok_or(format!("--tz {tz}: no such zone"))?,
            None => nineagents::localtime::Zone::local(),
        },
    };
    if cfg.kernel_workers == 0 {
        return Err("--kernel-workers must be at least 1".into());
    }
    if cfg.msize < nineagents::server::dispatch::MSIZE_MIN {
        return Err(format!("--msize {} is below the minimum 4096", cfg.msize));
    }
    let mut verbosity = 0;
    while p.contains("-v") {
        verbosity += 1;
    }
    let mut pinned = Vec::new();
    for spec in p.values_from_str::<_, String>("--root").map_err(e)? {
        let (name, path) = spec.split_once('=').ok_or(format!("--root {spec}: expected NAME=PATH"))?;
        let Some(h) = Harness::from_name(name.as_bytes()) else {
            let all: Vec<&str> = Harness::ALL.iter().map(|h| h.name()).collect();
            return Err(format!("--root {name}: unknown harness (one of {})", all.join(" ")));
        };
        pinned.retain(|(n, _)| *n != h);
        pinned.push((h, PathBuf::from(path)));
    }
    let opts = Options {
        cfg,
        unix: p.values_from_str("--unix").map_err(e)?,
        tcp: p.values_from_str("--tcp").map_err(e)?,
        tcp_any: p.contains("--tcp-any"),
        fd: p.opt_value_from_str("--fd").map_err(e)?,
        post: !p.contains("--no-post"),
        name: p.opt_value_from_str("--name").map_err(e)?.unwrap_or_else(|| "agents".to_string()),
        pinned,
        proc_dir: p.opt_value_from_str("--proc").map_err(e)?,
        demo: p.contains("--demo"),
        offer,
        verbosity,
    };
    let rest = p.finish();
    if !rest.is_empty() {
        return Err(format!("unexpected arguments: {rest:?}"));
    }
    check_name(&opts.name)?;
    check_tcp(&opts.tcp, opts.tcp_any)?;
    let listens = opts.fd.is_some() || opts.offer.is_some() || !opts.unix.is_empty() || !opts.tcp.is_empty();
    if !opts.post && !listens {
        return Err("--no-post with nothing to listen on: give --unix, --tcp or --fd".into());
    }
    Ok(opts)
}

/// Nothing 9P carries is authenticated: a TCP listener anyone else can
/// reach serves them the tree, so it takes `--tcp-any` to ask for one.
fn check_tcp(tcp: &[SocketAddr], tcp_any: bool) -> Result<(), String> {
    match tcp.iter().find(|a| !listen::is_loopback(a)) {
        Some(a) if !tcp_any => Err(format!(
            "--tcp {a}: not a loopback address, and nothing on the wire is authenticated: anyone who \
             can reach it could read every transcript. Reach a remote daemon through ssh -L (README), \
             or give --tcp-any to listen there anyway"
        )),
        _ => Ok(()),
    }
}

/// A posted name is one path component.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0');
    if ok {
        Ok(())
    } else {
        Err(format!("--name {name:?}: must be one path component"))
    }
}

fn serve(opts: Options) -> std::io::Result<()> {
    check_openat2()?;
    raise_fd_limit();
    return_big_buffers_to_the_system();
    // Unpacked first so a failure to listen removes it again (it drops).
    let demo = if opts.demo { Some(nineagents::demo::unpack()?) } else { None };
    let roots = roots(demo.as_ref(), &opts.pinned);
    // The demo lists no agent of the machine it runs on: its process table
    // is the fake one built in beside its home, unless --proc says.
    let proc_dir = match (&opts.proc_dir, &demo) {
        (Some(dir), _) => dir.clone(),
        (None, Some(demo)) => demo.proc_dir(),
        (None, None) => PathBuf::from("/proc"),
    };
    log::debug!("roots {roots:?}, proc {}, allow-move {}", proc_dir.display(), opts.cfg.allow_move);
    let signal_fd = listen::signals()?;
    let (listeners, only) = listeners(&opts)?;
    let uid = rustix::process::getuid().as_raw();
    let owner = Owner { name: user_name(uid).into_bytes(), uid, gid: rustix::process::getgid().as_raw() };
    let tree = Tree::new(owner, &roots, &proc_dir, opts.cfg.allow_move);
    let mut server = Server::new(opts.cfg, tree, listeners, signal_fd)?;
    server.run(only)
}

/// Each harness's root: the demo's, or `$HOME`'s, unless `--root` pins it.
fn roots(demo: Option<&nineagents::demo::Unpacked>, pinned: &[(Harness, PathBuf)]) -> Vec<(Harness, PathBuf)> {
    let home = match demo {
        Some(demo) => Some(demo.home()),
        None => std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
    };
    let mut roots: Vec<(Harness, PathBuf)> = match home {
        Some(home) => Harness::ALL.iter().map(|&h| (h, home.join(h.home_dir()))).collect(),
        None => Vec::new(),
    };
    for (h, path) in pinned {
        roots.retain(|(n, _)| n != h);
        roots.push((*h, path.clone()));
    }
    roots
}

/// What the daemon listens on, and the one session `--fd` serves instead.
/// `--fd` posts nothing; passed sockets replace the post (systemd owns
/// their path).
fn listeners(opts: &Options) -> std::io::Result<(Vec<listen::Listener>, Option<OwnedFd>)> {
    if let Some(n) = opts.fd {
        if let Some(offer) = &opts.offer {
            activation::seal(offer);
        }
        return Ok((Vec::new(), Some(adopt_fd(n)?)));
    }
    let mut listeners = Vec::new();
    match &opts.offer {
        Some(offer) => {
            for passed in activation::adopt(offer)? {
                if let Some(addr) = passed.tcp.filter(|a| !listen::is_loopback(a)) {
                    check_passed_tcp(addr, opts.tcp_any)?;
                }
                listeners.push(passed.listener);
            }
        }
        None if opts.post => {
            let dir = nineagents::post::ensure_post_dir()?;
            listeners.push(listen::unix(&dir.join(&opts.name))?);
        }
        None => {}
    }
    for path in &opts.unix {
        listeners.push(listen::unix(path)?);
    }
    for addr in &opts.tcp {
        listeners.push(listen::tcp(*addr)?);
    }
    Ok((listeners, None))
}

/// A passed TCP socket is held to `--tcp`'s rule.
fn check_passed_tcp(addr: SocketAddr, tcp_any: bool) -> std::io::Result<()> {
    if !tcp_any {
        let why = format!("passed socket tcp!{addr}: not a loopback address; add --tcp-any to ExecStart to serve it");
        return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, why));
    }
    log::warn!("listening on tcp!{addr}: nothing on the wire is authenticated; anyone who can reach it reads the tree");
    Ok(())
}

/// Every file is opened with openat2 and its RESOLVE_ flags; without it
/// there is no safe way to open beneath a root, so the daemon refuses to
/// start rather than fall back.
fn check_openat2() -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
    match rustix::fs::openat2(CWD, c"/", OFlags::PATH | OFlags::CLOEXEC, Mode::empty(), ResolveFlags::NO_SYMLINKS) {
        // The descriptor only proved the call exists: it closes as it drops.
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::NOSYS) => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this kernel has no openat2 (Linux 5.6+): 9agents cannot open files safely without it",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Buffers of up to an msize (1 MiB) come and go with every large read.
/// glibc's malloc raises its mmap threshold as such blocks are freed, after
/// which they come from its heap and stay there when freed: a daemon that
/// served a burst of clients would keep the burst's size long after they
/// left. A fixed threshold keeps every block this large its own mapping,
/// given back to the system when freed.
///
/// It sits just above one Linux kernel mount's read reply: the client
/// asks every Tread for its whole msize (128 KiB by default) less the
/// header, whatever the file holds, and the reply's buffer — 131,059
/// bytes, a 128 KiB chunk to malloc — was a mapping of its own at a
/// threshold of 128 KiB: an mmap, page faults, an munmap and a TLB flush
/// for every read, a quarter of the daemon's CPU in a `cat` of a small file
/// (bench/README, ops.rs). Such buffers now come from the heap, which
/// `malloc_trim` gives back after a burst (`server::trim`).
const MALLOC_MMAP_THRESHOLD_BYTES: i32 = 132 * 1024;
const _: () = assert!(
    MALLOC_MMAP_THRESHOLD_BYTES as usize > (128 << 10) + nineagents::proto::RREAD_HEADER_BYTES,
    "a read reply at Linux's 128 KiB msize comes from the heap"
);

fn return_big_buffers_to_the_system() {
    // SAFETY: mallopt only sets a malloc tunable; it is called before any
    // other thread exists.
    if unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD_BYTES) } != 1 {
        log::warn!("could not set malloc's mmap threshold: memory may be kept after bursts");
    }
}

/// Raise the soft fd limit to the hard one: the caps (connections, open
/// files, probes in flight) bound what we hold, and the default soft 1024
/// is below their sum.
fn raise_fd_limit() {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raised = rustix::process::Rlimit { current: lim.maximum, maximum: lim.maximum };
    if let Err(e) = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised) {
        log::warn!("could not raise the fd limit: {e}");
    }
}

/// The name stats carry as owner: `$USER`, else our passwd entry's name,
/// else the uid as digits. Read once at start, so bounded and off the loop.
fn user_name(uid: u32) -> String {
    if let Some(u) = std::env::var("USER").ok().filter(|u| !u.is_empty()) {
        return u;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2].parse() == Ok(uid))
        .map_or_else(|| uid.to_string(), |f| f[0].to_string())
}

/// Take ownership of the stream on fd `n`, checking it is open, and make
/// it close-on-exec so a zmx a move starts does not hold the session.
fn adopt_fd(n: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: F_GETFD only asks whether `n` is an open descriptor.
    if n < 0 || unsafe { libc::fcntl(n, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("--fd {n}: not an open descriptor")));
    }
    // SAFETY: `n` is open, and the command line hands it to us to own.
    let fd = unsafe { OwnedFd::from_raw_fd(n) };
    let flags = rustix::io::fcntl_getfd(&fd)?;
    rustix::io::fcntl_setfd(&fd, flags | rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

/// The price table: the built-in one, with `file`'s rows over it.
fn prices(file: Option<PathBuf>) -> Result<nineagents::reports::Prices, String> {
    let mut p = nineagents::reports::Prices::built_in();
    if let Some(f) = file {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("--prices {}: {e}", f.display()))?;
        p.extend(&text).map_err(|e| format!("--prices {}: {e}", f.display()))?;
    }
    Ok(p)
}
