//! `cargo bench --bench ops`: 9agents against diod on the host, no qemu:
//! the 9P2000.L messages Linux's 9p client sends (cache=none) for one
//! process's `stat`, `ls -lR` and `cat`, sent one at a time, as the kernel
//! does for one process, over a unix socket to each server in turn.
//!
//! `bench/diod.rs` measures the same servers through a real kernel mount in
//! a TCG guest, which takes minutes and a whole core; this one takes
//! seconds, so a change to a request's path can be measured before and
//! after in one sitting, and it says where the time goes: each row's
//! ops/s, and each server's CPU time per op (its threads, and for 9agents
//! the ring's kernel workers, which are threads of the process).
//!
//! The tree is bench/diod.rs's: `DIRS` directories of `FILES_PER_DIR`
//! files of the same sizes, in a scratch home, served by 9agents as
//! `/claude/projects/tree` (`--root claude=HOME/.claude`) and by diod as
//! `HOME/.claude/projects/tree` under the export `HOME` (`diod -f -n -c
//! /dev/null -o ro -e HOME`), so both walks are three names deep. The rows:
//!
//! | row | per op (one file or directory) |
//! |---|---|
//! | `lookup+stat` | Twalk of one name from its directory, Tgetattr (the lookup's), Tgetattr (the stat), Tclunk |
//! | `list dir` | Twalk, Tgetattr, Tlopen O_DIRECTORY, Treaddir until empty, Tclunk |
//! | `cat file` | Twalk, Tgetattr, Twalk clone, Tlopen, Tread until empty, Tclunk ×2 |
//! | `ls -lR dir` | what `ls -lR` sends for one directory (traced in the guest, `bench/diod.rs --trace-sample`): Twalk, Tgetattr, Twalk clone, Tlopen O_DIRECTORY, Tgetattr, Treaddir until empty, then for each entry Twalk, Tgetattr (the lookup's), Tgetattr (the lstat), Tclunk; a last Treaddir, Tclunk ×2; an op is an entry |
//! | `stat path` | what `stat PATH` sends when nothing of the path is cached (`find -exec stat`'s second half): for each of its five names Twalk from the one before and Tgetattr, then Tgetattr (the stat) and Tclunk ×5 |
//! | `floor` | Tclunk of a fid that does not exist (the cheapest round trip) |
//!
//! Everything runs on one CPU (`--cpu`, by default the last): the diod
//! bench's guest has one vCPU, where a hand-off between threads costs two
//! context switches rather than running beside the client for free, and
//! the ratios come out as the guest's do; `--no-pin` runs unpinned.
//!
//! Each row runs `--rounds` times, the servers taking turns, each round at
//! least `--secs` long (whole passes over the tree), and each server's best
//! round is kept. Every reply is checked (an error reply stops the run; a
//! listing must name every entry, a cat read every byte).

use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nineagents::client::{Client, Config, Conn};
use nineagents::proto::{
    decode_dirents, Rmsg, Tmsg, WalkNames, DOTL_DIRECTORY, DOTL_RDONLY, GETATTR_ALL, GETATTR_BASIC, IOHDRSZ,
};

mod harness;

const USAGE: &str = "\
usage: cargo bench --bench ops -- [--rounds 3] [--secs 1] [--msize 131072] [--bin PATH]
                                  [--base PATH] [--only 9agents|diod] [--rows lookup,list,lslr,statpath,cat,floor]
                                  [--cpu N | --no-pin]

  --bin PATH   the 9agents measured (default: the one cargo built)
  --base PATH  another 9agents measured beside it, in the same run (a build from before a change)
  --only S     measure only 9agents (and --base) or only diod
  --rows R     which rows, comma-separated
  --cpu N    the one CPU the bench and both servers run on (default: the last one allowed)
  --no-pin   run on every CPU allowed instead
";

/// bench/diod.rs's tree: the same shape and file sizes.
const DIRS: usize = 20;
const FILES_PER_DIR: usize = 50;
const FILE_SIZES: [usize; 6] = [0, 100, 1_000, 4_096, 10_000, 65_537];
const DIOD: &str = "/usr/sbin/diod";
/// The kernel's default msize; diod answers 64 KiB.
const MSIZE_DEFAULT: u32 = 128 * 1024;
/// Fids the bench makes (the client's own start at 0).
const FID_DIR: u32 = 1000;
const FID_TREE: u32 = 1001;
const FID_A: u32 = 1002;
const FID_B: u32 = 1003;
const FID_UNKNOWN: u32 = 0x7EAD_BEEF;
/// The fids of a path's names, from the attach down (`stat path`).
const FID_PATH: u32 = 1010;

struct Args {
    rounds: u32,
    secs: f64,
    msize: u32,
    bin: PathBuf,
    /// Another 9agents measured beside it (a build from before a change).
    base: Option<PathBuf>,
    only: Option<String>,
    rows: Vec<String>,
    /// The CPU everything is pinned to; None: not pinned.
    cpu: Option<usize>,
}

fn args(mut p: pico_args::Arguments) -> Result<Args, String> {
    let e = |e: pico_args::Error| e.to_string();
    let rows: Option<String> = p.opt_value_from_str("--rows").map_err(e)?;
    let cpu: Option<usize> = p.opt_value_from_str("--cpu").map_err(e)?;
    let cpu = if p.contains("--no-pin") { None } else { cpu.or_else(last_cpu) };
    let a = Args {
        rounds: p.opt_value_from_str("--rounds").map_err(e)?.unwrap_or(3),
        secs: p.opt_value_from_str("--secs").map_err(e)?.unwrap_or(1.0),
        msize: p.opt_value_from_str("--msize").map_err(e)?.unwrap_or(MSIZE_DEFAULT),
        bin: p.opt_value_from_str("--bin").map_err(e)?.unwrap_or_else(harness::default_bin),
        base: p.opt_value_from_str("--base").map_err(e)?,
        only: p.opt_value_from_str("--only").map_err(e)?,
        rows: rows
            .unwrap_or_else(|| "lookup,list,lslr,statpath,cat,floor".into())
            .split(',')
            .map(str::to_string)
            .collect(),
        cpu,
    };
    harness::finish(p)?;
    if a.rounds == 0 || !(a.secs > 0.0 && a.secs <= 600.0) {
        return Err("--rounds must be at least 1, --secs in (0, 600]".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    harness::main("ops", USAGE, args, run)
}

/// A server under test: its process, its socket, and how to reach the tree.
struct Server {
    name: &'static str,
    pid: u32,
    sock: PathBuf,
    aname: String,
    /// The names from the attach to the tree.
    to_tree: [&'static str; 3],
    child: Option<Child>,
    _daemon: Option<harness::Daemon>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run(a: &Args) -> io::Result<()> {
    if let Some(cpu) = a.cpu {
        pin(cpu)?;
    }
    let s = harness::Scratch::new("ops")?;
    let home = s.dir.join("home");
    let bytes = build_tree(&home.join(".claude/projects/tree"))?;
    println!("ops: {}", harness::machine());
    match a.cpu {
        Some(cpu) => {
            println!("pinned: the bench, both servers and their threads on CPU {cpu} (a one-vCPU guest's shape)")
        }
        None => println!("not pinned"),
    }
    println!(
        "tree: {DIRS} dirs of {FILES_PER_DIR} files, {:.1} MB; msize asked {}; best of {} rounds of >= {} s",
        bytes as f64 / 1e6,
        a.msize,
        a.rounds,
        a.secs
    );
    let mut servers = Vec::new();
    if a.only.as_deref() != Some("diod") {
        servers.push(nineagents("9agents", &a.bin, &s, &home)?);
        if let Some(base) = &a.base {
            servers.push(nineagents("base", base, &s, &home)?);
        }
    }
    if a.only.as_deref() != Some("9agents") {
        match diod(&s, &home) {
            Ok(d) => servers.push(d),
            Err(e) => println!("diod: not measured: {e}"),
        }
    }
    let mut clients = Vec::new();
    for srv in &servers {
        clients.push(Session::open(srv, a.msize)?);
    }
    for (srv, c) in servers.iter().zip(&clients) {
        println!("{}: pid {}, msize {}", srv.name, srv.pid, c.client.msize());
    }
    let (first, diod_at) = (servers.first().map(|s| s.name), servers.iter().position(|s| s.name == "diod"));
    let ratio_head = match (first, diod_at) {
        (Some("9agents"), Some(_)) => "9agents/diod",
        _ => "",
    };
    let mut head = format!("\n{:<14}", "row");
    for srv in &servers {
        head += &format!(" {:>26}", format!("{} ops/s cpu-us sw", srv.name));
    }
    println!("{head} {ratio_head:>13}");
    for row in &a.rows {
        let work = Work::parse(row).ok_or_else(|| io::Error::other(format!("unknown row {row}")))?;
        let mut best: Vec<Option<Round>> = vec![None; servers.len()];
        for _ in 0..a.rounds {
            for (i, (srv, c)) in servers.iter().zip(clients.iter_mut()).enumerate() {
                let r = c.round(srv, work, a.secs, bytes)?;
                if best[i].as_ref().is_none_or(|b| r.ops_s() > b.ops_s()) {
                    best[i] = Some(r);
                }
            }
        }
        let mut line = format!("{:<14}", work.label());
        for r in best.iter().flatten() {
            line +=
                &format!(" {:>26}", format!("{:.0} {:.1} {:.1}", r.ops_s(), r.cpu_us_per_op(), r.switches_per_op()));
        }
        if let (Some(Some(x)), Some(Some(y)), false) = (best.first(), diod_at.map(|i| &best[i]), ratio_head.is_empty())
        {
            line += &format!(" {:>13}", format!("{:.2}x", x.ops_s() / y.ops_s()));
        }
        println!("{line}");
    }
    for srv in &mut servers {
        if let Some(d) = srv._daemon.take() {
            d.stop()?;
        }
    }
    Ok(())
}

/// Write the tree; returns its bytes.
fn build_tree(tree: &Path) -> io::Result<u64> {
    let mut bytes = 0;
    for d in 0..DIRS {
        let dir = tree.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES_PER_DIR {
            let k = d * FILES_PER_DIR + f;
            let size = FILE_SIZES[k % FILE_SIZES.len()];
            let data: Vec<u8> = (0..size).map(|i| (i * 31 + k) as u8).collect();
            std::fs::write(dir.join(format!("f{f:03}")), &data)?;
            bytes += size as u64;
        }
    }
    Ok(bytes)
}

fn nineagents(name: &'static str, bin: &Path, s: &harness::Scratch, home: &Path) -> io::Result<Server> {
    let proc = s.fixture_proc()?;
    let root = format!("claude={}", home.join(".claude").display());
    let proc = proc.to_str().expect("a UTF-8 scratch path");
    let d = harness::Daemon::spawn(bin, s, &["--root", root.as_str(), "--proc", proc])?;
    Ok(Server {
        name,
        pid: d.pid,
        sock: d.sock.clone(),
        aname: String::new(),
        to_tree: ["claude", "projects", "tree"],
        child: None,
        _daemon: Some(d),
    })
}

/// diod as bench/diod/init.sh starts it, exporting the scratch home.
fn diod(s: &harness::Scratch, home: &Path) -> io::Result<Server> {
    if !Path::new(DIOD).exists() {
        return Err(io::Error::other(format!("{DIOD} is not installed (apt-get install diod)")));
    }
    let sock = s.dir.join("diod.sock");
    let log = std::fs::File::create(s.dir.join("diod.log"))?;
    let child = Command::new(DIOD)
        .args(["-f", "-n", "-c", "/dev/null", "-L", "stderr", "-o", "ro", "-e"])
        .arg(home)
        .arg("-l")
        .arg(&sock)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?;
    let deadline = Instant::now() + harness::SPAWN_DEADLINE;
    while UnixStream::connect(&sock).is_err() {
        if Instant::now() > deadline {
            return Err(io::Error::other("diod made no socket"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Server {
        name: "diod",
        pid: child.id(),
        sock,
        aname: home.display().to_string(),
        to_tree: [".claude", "projects", "tree"],
        child: Some(child),
        _daemon: None,
    })
}

#[derive(Clone, Copy)]
enum Work {
    Lookup,
    List,
    LsLr,
    StatPath,
    Cat,
    Floor,
}

impl Work {
    fn parse(s: &str) -> Option<Work> {
        Some(match s {
            "lookup" => Work::Lookup,
            "list" => Work::List,
            "lslr" => Work::LsLr,
            "statpath" => Work::StatPath,
            "cat" => Work::Cat,
            "floor" => Work::Floor,
            _ => return None,
        })
    }

    fn label(self) -> &'static str {
        match self {
            Work::Lookup => "lookup+stat",
            Work::List => "list dir",
            Work::LsLr => "ls -lR dir",
            Work::StatPath => "stat path",
            Work::Cat => "cat file",
            Work::Floor => "floor",
        }
    }
}

#[derive(Clone)]
struct Round {
    ops: u64,
    secs: f64,
    cpu: f64,
    switches: u64,
}

impl Round {
    fn ops_s(&self) -> f64 {
        self.ops as f64 / self.secs
    }
    fn cpu_us_per_op(&self) -> f64 {
        self.cpu / self.ops.max(1) as f64 * 1e6
    }
    fn switches_per_op(&self) -> f64 {
        self.switches as f64 / self.ops.max(1) as f64
    }
}

struct Session {
    client: Client,
    /// The names from the attach to the tree.
    to_tree: [&'static str; 3],
}

fn bad(why: String) -> io::Error {
    io::Error::other(why)
}

impl Session {
    fn open(srv: &Server, msize: u32) -> io::Result<Session> {
        let conn = Conn::Unix(UnixStream::connect(&srv.sock)?);
        let config =
            Config { dialect: nineagents::proto::Dialect::L, msize, uname: "root".into(), aname: srv.aname.clone() };
        let client = Client::handshake(conn, &config)?;
        let mut s = Session { client, to_tree: srv.to_tree };
        let root = s.client.root();
        s.walk(root, FID_TREE, &srv.to_tree)?;
        Ok(s)
    }

    /// One request, its reply checked not to be an error.
    fn call(&mut self, msg: &Tmsg<'_>) -> io::Result<Rmsg<'_>> {
        match self.client.call(msg)? {
            Rmsg::Lerror { ecode } => Err(bad(format!("{msg:?}: Rlerror {ecode}"))),
            r => Ok(r),
        }
    }

    fn walk(&mut self, fid: u32, newfid: u32, names: &[&str]) -> io::Result<()> {
        let names: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
        let names = WalkNames::new(&names).expect("few names");
        match self.call(&Tmsg::Walk { fid, newfid, names })? {
            Rmsg::Walk { qids } if qids.len() == names.len() => Ok(()),
            r => Err(bad(format!("walk {names:?}: {r:?}"))),
        }
    }

    fn getattr(&mut self, fid: u32, mask: u64) -> io::Result<u64> {
        match self.call(&Tmsg::Getattr { fid, mask })? {
            Rmsg::Getattr(g) => Ok(g.size),
            r => Err(bad(format!("getattr: {r:?}"))),
        }
    }

    fn clunk(&mut self, fid: u32) -> io::Result<()> {
        self.call(&Tmsg::Clunk { fid }).map(|_| ())
    }

    fn lookup(&mut self, dir: u32, fid: u32, name: &str) -> io::Result<u64> {
        self.walk(dir, fid, &[name])?;
        self.getattr(fid, GETATTR_BASIC)
    }

    /// One op of `work` on entry `k` (a file, or for `List` a directory).
    fn one(&mut self, work: Work, k: usize) -> io::Result<u64> {
        let io = self.client.msize() - IOHDRSZ;
        match work {
            Work::Lookup => {
                let _ = self.lookup(FID_DIR, FID_A, &format!("f{:03}", k % FILES_PER_DIR))?;
                let size = self.getattr(FID_A, GETATTR_ALL)?;
                self.clunk(FID_A)?;
                Ok(size)
            }
            Work::List => {
                self.lookup(FID_TREE, FID_A, &format!("d{:02}", k % DIRS))?;
                self.call(&Tmsg::Lopen { fid: FID_A, flags: DOTL_RDONLY | DOTL_DIRECTORY })?;
                let (mut offset, mut names) = (0, 0);
                loop {
                    let Rmsg::Readdir { data } = self.call(&Tmsg::Readdir { fid: FID_A, offset, count: io })? else {
                        return Err(bad("readdir: not an Rreaddir".into()));
                    };
                    let mut last = None;
                    for d in decode_dirents(data) {
                        let d = d.map_err(|e| bad(format!("dirent: {e:?}")))?;
                        (last, names) = (Some(d.offset), names + 1);
                    }
                    match last {
                        Some(o) => offset = o,
                        None => break,
                    }
                }
                self.clunk(FID_A)?;
                // diod lists `.` and `..`; 9agents does not.
                if names != FILES_PER_DIR && names != FILES_PER_DIR + 2 {
                    return Err(bad(format!("listed {names} names")));
                }
                Ok(0)
            }
            Work::LsLr => self.ls_lr(k),
            Work::StatPath => {
                let (d, f) = (format!("d{:02}", k / FILES_PER_DIR), format!("f{:03}", k % FILES_PER_DIR));
                let tree = self.to_tree;
                let names = [tree[0], tree[1], tree[2], d.as_str(), f.as_str()];
                let mut from = self.client.root();
                for (i, name) in names.iter().enumerate() {
                    self.lookup(from, FID_PATH + i as u32, name)?;
                    from = FID_PATH + i as u32;
                }
                let size = self.getattr(from, GETATTR_ALL)?;
                for i in (0..names.len()).rev() {
                    self.clunk(FID_PATH + i as u32)?;
                }
                Ok(size)
            }
            Work::Cat => {
                let size = self.lookup(FID_DIR, FID_A, &format!("f{:03}", k % FILES_PER_DIR))?;
                self.walk(FID_A, FID_B, &[])?;
                self.call(&Tmsg::Lopen { fid: FID_B, flags: DOTL_RDONLY })?;
                let mut offset = 0u64;
                loop {
                    let Rmsg::Read { data } = self.call(&Tmsg::Read { fid: FID_B, offset, count: io })? else {
                        return Err(bad("read: not an Rread".into()));
                    };
                    if data.is_empty() {
                        break;
                    }
                    offset += data.len() as u64;
                }
                self.clunk(FID_B)?;
                self.clunk(FID_A)?;
                if offset != size {
                    return Err(bad(format!("read {offset} bytes of {size}")));
                }
                Ok(offset)
            }
            Work::Floor => match self.client.call(&Tmsg::Clunk { fid: FID_UNKNOWN })? {
                Rmsg::Lerror { .. } => Ok(0),
                r => Err(bad(format!("clunk of an unknown fid: {r:?}"))),
            },
        }
    }

    /// `ls -lR`'s messages for directory `d`, as the guest's kernel sent
    /// them: the listing, then each entry's lstat while it is open.
    fn ls_lr(&mut self, d: usize) -> io::Result<u64> {
        let io = self.client.msize() - IOHDRSZ;
        self.lookup(FID_TREE, FID_DIR, &format!("d{d:02}"))?;
        self.walk(FID_DIR, FID_A, &[])?;
        self.call(&Tmsg::Lopen { fid: FID_A, flags: DOTL_RDONLY | DOTL_DIRECTORY })?;
        self.getattr(FID_DIR, GETATTR_ALL)?;
        let (mut offset, mut names) = (0, Vec::new());
        loop {
            let Rmsg::Readdir { data } = self.call(&Tmsg::Readdir { fid: FID_A, offset, count: io })? else {
                return Err(bad("readdir: not an Rreaddir".into()));
            };
            let mut last = None;
            for d in decode_dirents(data) {
                let d = d.map_err(|e| bad(format!("dirent: {e:?}")))?;
                if d.name != b"." && d.name != b".." {
                    names.push(String::from_utf8_lossy(d.name).into_owned());
                }
                last = Some(d.offset);
            }
            match last {
                Some(o) => offset = o,
                None => break,
            }
        }
        if names.len() != FILES_PER_DIR {
            return Err(bad(format!("listed {} names", names.len())));
        }
        let mut bytes = 0;
        for name in &names {
            self.lookup(FID_DIR, FID_B, name)?;
            bytes += self.getattr(FID_B, GETATTR_ALL)?;
            self.clunk(FID_B)?;
        }
        self.call(&Tmsg::Readdir { fid: FID_A, offset, count: io })?;
        self.clunk(FID_A)?;
        self.clunk(FID_DIR)?;
        Ok(bytes)
    }

    /// Whole passes over the tree until `secs` have gone by.
    fn round(&mut self, srv: &Server, work: Work, secs: f64, tree_bytes: u64) -> io::Result<Round> {
        let (cpu0, sw0, t0) = (cpu_secs(srv.pid), switches(srv.pid), Instant::now());
        let mut ops = 0;
        while t0.elapsed().as_secs_f64() < secs {
            let mut read = 0;
            for d in 0..DIRS {
                if let Work::Lookup | Work::Cat = work {
                    self.walk(FID_TREE, FID_DIR, &[&format!("d{d:02}")])?;
                }
                match work {
                    Work::List => (read, ops) = (read + self.one(work, d)?, ops + 1),
                    // An op is an entry: the directory and each of its files.
                    Work::LsLr => (read, ops) = (read + self.one(work, d)?, ops + 1 + FILES_PER_DIR as u64),
                    Work::StatPath => {
                        for f in 0..FILES_PER_DIR {
                            read += self.one(work, d * FILES_PER_DIR + f)?;
                            ops += 1;
                        }
                    }
                    _ => {
                        for f in 0..FILES_PER_DIR {
                            read += self.one(work, f)?;
                            ops += 1;
                        }
                    }
                }
                if let Work::Lookup | Work::Cat = work {
                    self.clunk(FID_DIR)?;
                }
            }
            if let Work::Cat | Work::LsLr | Work::StatPath = work {
                if read != tree_bytes {
                    return Err(bad(format!("{}: a pass read {read} bytes of {tree_bytes}", srv.name)));
                }
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let sw = switches(srv.pid).saturating_sub(sw0);
        Ok(Round { ops, secs, cpu: cpu_secs(srv.pid) - cpu0, switches: sw })
    }
}

/// Context switches of the threads `pid` has now (a thread gone takes its
/// count with it: the ring's workers live for seconds once started).
fn switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    let mut n = 0;
    for t in tasks.flatten() {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in status.lines() {
            if let Some(v) =
                l.strip_prefix("voluntary_ctxt_switches:").or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                n += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    n
}

/// utime + stime of every thread of `pid`, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = after.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // Fields after the command: state is not a number, so utime and stime
    // (stat's 14th and 15th) are the 11th and 12th numbers here.
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The last CPU this process may run on.
fn last_cpu() -> Option<usize> {
    // SAFETY: cpu_set_t is plain old data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a cpu_set_t of the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads the set within its size.
    (0..libc::CPU_SETSIZE as usize).rev().find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
}

/// Run this process, and so every child it starts, on `cpu` only: on one
/// CPU a server's hand-offs between threads (diod's, the ring's workers)
/// cost what they cost in the diod bench's one-vCPU guest, instead of
/// running beside the client for free.
fn pin(cpu: usize) -> io::Result<()> {
    // SAFETY: as in `last_cpu`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes within the set; sched_setaffinity reads it.
    let rc = unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(io::Error::other(format!("pinning to CPU {cpu}: {}", io::Error::last_os_error())));
    }
    Ok(())
}
