//! `client`: a small blocking 9P2000 / 9P2000.u client, and the `ls`, `cat`,
//! `stat` and `write` subcommands built on it.
//!
//! The binary is a client of its own tree so a user needs nothing else to
//! look at it, and the integration tests and the bench load generator drive
//! the server through this same code. A client asks and then waits for the
//! answer, so the shape is plain blocking I/O on one socket: no loop, no
//! threads. `send`/`recv` are there for the callers that do want several
//! requests in flight (pipelining, Tflush tests); everything else is one
//! round trip per call.
//!
//! Errors keep the server's words: an Rerror comes back as an `io::Error`
//! whose text is exactly the server's `ename` and whose kind comes from the
//! errno 9P2000.u sends beside it. `ServerError::of` recovers both.
//!
//! ```no_run
//! use nineagents::client::Client;
//! let mut c = Client::dial("agents")?; // the posted name, or unix!/path, tcp!host!port
//! let fid = c.walk("/README")?;
//! c.open(fid, nineagents::proto::OREAD)?;
//! let text = c.read_all(fid)?;
//! c.clunk(fid)?;
//! # Ok::<(), std::io::Error>(())
//! ```

mod addr;
mod cli;
mod format;
mod hosts;
mod multi;
mod run;
#[cfg(test)]
mod tests;
mod top;

use std::fmt;
use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use crate::proto::{self, Dialect, Qid, Rmsg, Stat, Tmsg, WalkNames, IOHDRSZ, MAXWELEM, NOFID, NONUNAME, NOTAG};

pub use addr::Addr;
pub use run::run;

/// The msize a client asks for: the server's default cap (SPEC §3), so one
/// read of a large transcript moves a MiB per round trip. A server may
/// answer less; the client then uses the server's figure.
pub const MSIZE_ASK: u32 = 1 << 20;
/// The least msize the client accepts from Rversion. Below it a stat with
/// ordinary names no longer fits one Rstat, and at `IOHDRSZ` or less a read
/// could carry no data at all and `read_all` would never end.
pub const MSIZE_MIN: u32 = 256;
const _: () = assert!(MSIZE_MIN > IOHDRSZ && MSIZE_ASK >= MSIZE_MIN);

/// How to greet a server: what `dial` does by default, spelled out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The dialect to ask for. Asking for 9P2000.u accepts a server that
    /// answers plain 9P2000; asking for 9P2000 insists on it.
    pub dialect: Dialect,
    /// The msize to ask for.
    pub msize: u32,
    /// Tattach's uname.
    pub uname: String,
    /// Tattach's aname: which tree of the server to attach to.
    pub aname: String,
}

impl Default for Config {
    /// 9P2000.u, `MSIZE_ASK`, uname from `$USER` (then `$LOGNAME`, then
    /// `none`), the default tree.
    fn default() -> Config {
        let user = ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()));
        Config {
            dialect: Dialect::P2000u,
            msize: MSIZE_ASK,
            uname: user.unwrap_or_else(|| "none".into()),
            aname: String::new(),
        }
    }
}

/// The socket under a client: a posted name and `unix!` are Unix sockets,
/// `tcp!` is TCP. Public so a test can hand `Client::handshake` one end of a
/// socketpair.
#[derive(Debug)]
pub enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => read_when_readable(s, buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

/// A blocking read of a Unix socket that sleeps in `poll(POLLIN)`, never
/// in the read itself. A reader asleep in `read` is on the socket's one
/// wait queue with a wake function that takes every wake-up, and each time
/// the server reads a request off the connection the kernel wakes that
/// queue for the send space it freed (`unix_write_space`): a wake-up for
/// nothing, whose cost (an inter-processor interrupt on a VM) the server's
/// loop pays on every request. A poll's sleeper is woken only for what it
/// polls. Costs the client a `recv` that finds nothing and a `poll` when
/// the reply is not there yet (bench/README.md, home.rs, "the second
/// pass").
fn read_when_readable(s: &UnixStream, buf: &mut [u8]) -> io::Result<usize> {
    use rustix::event::{poll, PollFd, PollFlags};
    use rustix::io::Errno;
    use rustix::net::{recv, RecvFlags};
    loop {
        match recv(s, &mut *buf, RecvFlags::DONTWAIT) {
            Ok((n, _)) => return Ok(n),
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let mut fds = [PollFd::new(s, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An Rerror, as the error of the call that got it: the server's text
/// exactly, and in 9P2000.u the errno it sent beside it (`None` in plain
/// 9P2000, or when the server sent 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerError {
    pub text: String,
    pub errno: Option<u32>,
}

impl ServerError {
    /// The server's error inside an `io::Error` a client call returned;
    /// `None` when the failure was the client's own or the connection's.
    pub fn of(err: &io::Error) -> Option<&ServerError> {
        err.get_ref()?.downcast_ref()
    }

    fn into_io(self) -> io::Error {
        let kind = match self.errno {
            Some(errno) => io::Error::from_raw_os_error(errno as i32).kind(),
            None => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for ServerError {}

/// A stat that owns its strings, as `stat` and `read_dir` return it. 9P
/// strings are UTF-8 (intro(5)); a server that sends other bytes gets them
/// replaced with U+FFFD rather than refused. In 9P2000 the last four fields
/// are empty / `NONUNAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedStat {
    pub ty: u16,
    pub dev: u32,
    pub qid: Qid,
    pub mode: u32,
    pub atime: u32,
    pub mtime: u32,
    pub length: u64,
    pub name: String,
    pub uid: String,
    pub gid: String,
    pub muid: String,
    pub extension: String,
    pub n_uid: u32,
    pub n_gid: u32,
    pub n_muid: u32,
}

impl OwnedStat {
    pub fn is_dir(&self) -> bool {
        self.mode & proto::DMDIR != 0
    }
}

impl From<&Stat<'_>> for OwnedStat {
    fn from(s: &Stat<'_>) -> OwnedStat {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        OwnedStat {
            ty: s.ty,
            dev: s.dev,
            qid: s.qid,
            mode: s.mode,
            atime: s.atime,
            mtime: s.mtime,
            length: s.length,
            name: text(s.name),
            uid: text(s.uid),
            gid: text(s.gid),
            muid: text(s.muid),
            extension: text(s.extension),
            n_uid: s.n_uid,
            n_gid: s.n_gid,
            n_muid: s.n_muid,
        }
    }
}

/// A reply that owns its bytes, so it outlives the next call. It holds a
/// frame that decoded when it arrived; `msg` decodes it again, which costs
/// nothing but a walk over the header (strings and data are borrowed).
#[derive(Clone, Debug)]
pub struct Reply {
    frame: Vec<u8>,
    dialect: Dialect,
}

impl Reply {
    pub fn tag(&self) -> u16 {
        u16::from_le_bytes([self.frame[5], self.frame[6]])
    }

    pub fn msg(&self) -> Rmsg<'_> {
        let (_, msg) =
            proto::decode_r(&self.frame, self.dialect).expect("a Reply holds a frame that decoded on arrival");
        msg
    }

    /// The reply as the error a client call would return for it, if it is
    /// an Rerror.
    pub fn error(&self) -> Option<io::Error> {
        match self.msg() {
            Rmsg::Error { ename, errno } => Some(server_error(ename, errno, self.dialect)),
            _ => None,
        }
    }

    /// The whole frame, size field included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.frame
    }
}

/// Fids this client hands out. A clunked fid goes back on the free list, so
/// a long-lived client (the bench) reuses numbers instead of running the
/// counter into `NOFID`.
#[derive(Debug, Default)]
struct Fids {
    next: u32,
    free: Vec<u32>,
}

impl Fids {
    fn take(&mut self) -> io::Result<u32> {
        if let Some(fid) = self.free.pop() {
            return Ok(fid);
        }
        if self.next == NOFID {
            return Err(io::Error::other("out of fids: every fid number but NOFID is in use"));
        }
        self.next += 1;
        Ok(self.next - 1)
    }

    fn give(&mut self, fid: u32) {
        self.free.push(fid);
    }
}

/// One connection to a 9P server, versioned and attached.
pub struct Client {
    conn: BufReader<Conn>,
    dialect: Dialect,
    msize: u32,
    root: u32,
    fids: Fids,
    next_tag: u16,
    /// The request being sent; reused so a call allocates nothing.
    out: Vec<u8>,
    /// The last reply received; reused likewise (`rpc` takes it away).
    frame: Vec<u8>,
}

impl Client {
    /// Dial `addr` (see `Addr::parse`), negotiate 9P2000.u at `MSIZE_ASK`
    /// and attach as `$USER` to the default tree.
    pub fn dial(addr: &str) -> io::Result<Client> {
        Client::dial_with(addr, &Config::default())
    }

    /// Dial `addr` and greet the server as `config` says.
    pub fn dial_with(addr: &str, config: &Config) -> io::Result<Client> {
        let conn = Addr::parse(addr)?.connect()?;
        Client::handshake(conn, config)
    }

    /// Tversion and Tattach over an already connected socket.
    pub fn handshake(conn: Conn, config: &Config) -> io::Result<Client> {
        let mut client = Client {
            conn: BufReader::new(conn),
            dialect: config.dialect,
            msize: config.msize.max(MSIZE_MIN),
            root: NOFID,
            fids: Fids::default(),
            next_tag: 0,
            out: Vec::new(),
            frame: Vec::new(),
        };
        client.version(config.dialect)?;
        client.attach(&config.uname, &config.aname)?;
        Ok(client)
    }

    /// The dialect the server agreed to.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The msize the server agreed to.
    pub fn msize(&self) -> u32 {
        self.msize
    }

    /// The most data one Tread may ask for or one Twrite may carry.
    pub fn io_max(&self) -> u32 {
        self.msize - IOHDRSZ
    }

    /// The attached fid: the root of the tree.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// A fid number no other call of this client is using, for requests
    /// built by hand with `rpc`. `clunk` (or `release_fid`) gives it back.
    pub fn alloc_fid(&mut self) -> io::Result<u32> {
        self.fids.take()
    }

    /// Give back a fid from `alloc_fid` that the server never made (a walk
    /// that failed), so it is reused.
    pub fn release_fid(&mut self, fid: u32) {
        self.fids.give(fid);
    }

    fn version(&mut self, asked: Dialect) -> io::Result<()> {
        let msize = self.msize;
        self.send_tagged(NOTAG, &Tmsg::Version { msize, version: asked.version().as_bytes() })?;
        let (got_msize, got) = match self.answer(NOTAG)? {
            Rmsg::Version { msize, version } => {
                let spoken = [asked, Dialect::P2000].into_iter().find(|d| d.version().as_bytes() == version);
                (msize, spoken.ok_or_else(|| String::from_utf8_lossy(version).into_owned()))
            }
            other => return Err(unexpected("Rversion", &other)),
        };
        self.dialect = got.map_err(|v| invalid(format!("server answered version {v:?} to {:?}", asked.version())))?;
        if !(MSIZE_MIN..=msize).contains(&got_msize) {
            return Err(invalid(format!(
                "server answered msize {got_msize} (asked {msize}, least usable {MSIZE_MIN})"
            )));
        }
        self.msize = got_msize;
        Ok(())
    }

    fn attach(&mut self, uname: &str, aname: &str) -> io::Result<()> {
        let fid = self.fids.take()?;
        let n_uname = match self.dialect {
            Dialect::P2000 => NONUNAME,
            Dialect::P2000u | Dialect::L => rustix::process::getuid().as_raw(),
        };
        let msg = Tmsg::Attach { fid, afid: NOFID, uname: uname.as_bytes(), aname: aname.as_bytes(), n_uname };
        match self.call(&msg)? {
            Rmsg::Attach { .. } => {}
            other => return Err(unexpected("Rattach", &other)),
        }
        self.root = fid;
        Ok(())
    }

    /// One round trip, answered in place: the reply borrows the client's
    /// receive buffer, so this allocates nothing. An Rerror is the error.
    pub fn call(&mut self, msg: &Tmsg<'_>) -> io::Result<Rmsg<'_>> {
        let tag = self.send(msg)?;
        self.answer(tag)
    }

    /// One round trip, with a reply that outlives the next call. An Rerror
    /// is the error, as in `call`.
    pub fn rpc(&mut self, msg: &Tmsg<'_>) -> io::Result<Reply> {
        self.call(msg)?;
        Ok(Reply { frame: std::mem::take(&mut self.frame), dialect: self.dialect })
    }

    /// Send one request without waiting, on a fresh tag, and return that
    /// tag. For callers keeping several requests in flight; pair with `recv`.
    pub fn send(&mut self, msg: &Tmsg<'_>) -> io::Result<u16> {
        let tag = self.next_tag;
        self.next_tag = if tag + 1 == NOTAG { 0 } else { tag + 1 };
        self.send_tagged(tag, msg)?;
        Ok(tag)
    }

    /// Receive the next reply, whatever its tag. An Rerror here is a reply
    /// like any other (see `Reply::error`), not a failure.
    pub fn recv(&mut self) -> io::Result<Reply> {
        self.read_frame()?;
        self.decode()?;
        Ok(Reply { frame: std::mem::take(&mut self.frame), dialect: self.dialect })
    }

    fn send_tagged(&mut self, tag: u16, msg: &Tmsg<'_>) -> io::Result<()> {
        self.out.clear();
        proto::encode_t(&mut self.out, tag, msg, self.dialect);
        if self.out.len() > self.msize as usize {
            let why = format!("request of {} bytes exceeds msize {}", self.out.len(), self.msize);
            return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        }
        self.conn.get_mut().write_all(&self.out)
    }

    /// Receive the reply to `tag` and turn an Rerror into the error.
    fn answer(&mut self, tag: u16) -> io::Result<Rmsg<'_>> {
        self.read_frame()?;
        let dialect = self.dialect;
        match self.decode()? {
            (got, _) if got != tag => Err(invalid(format!("reply on tag {got}, expected tag {tag}"))),
            (_, Rmsg::Error { ename, errno }) => Err(server_error(ename, errno, dialect)),
            (_, reply) => Ok(reply),
        }
    }

    /// Read one whole message into `frame`, its size checked against msize
    /// before anything past the size field is read.
    fn read_frame(&mut self) -> io::Result<()> {
        let mut size_field = [0u8; 4];
        self.conn.read_exact(&mut size_field).map_err(hung_up)?;
        let size = match proto::frame_size(&size_field, self.msize) {
            Ok(Some(size)) => size,
            Ok(None) => unreachable!("frame_size has its 4 bytes"),
            Err(e) => return Err(invalid(format!("unframeable reply: {e:?}"))),
        };
        self.frame.clear();
        self.frame.extend_from_slice(&size_field);
        (&mut self.conn).take(size as u64 - 4).read_to_end(&mut self.frame)?;
        if self.frame.len() != size {
            return Err(hung_up(io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(())
    }

    fn decode(&self) -> io::Result<(u16, Rmsg<'_>)> {
        proto::decode_r(&self.frame, self.dialect).map_err(|e| invalid(format!("undecodable reply: {:?}", e.kind)))
    }
}

impl fmt::Debug for Client {
    /// The negotiated state, not the buffers (a reply buffer can be a MiB).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("dialect", &self.dialect)
            .field("msize", &self.msize)
            .field("root", &self.root)
            .field("fids_free", &self.fids.free.len())
            .finish_non_exhaustive()
    }
}

/// The file operations, one round trip each unless said otherwise.
impl Client {
    /// Walk from the root to `path` (`/`-separated, leading `/` optional,
    /// `.` and empty elements skipped) and return the new fid. `/` or `""`
    /// clones the root. Long paths go out as several Twalks of at most
    /// `MAXWELEM` names.
    pub fn walk(&mut self, path: &str) -> io::Result<u32> {
        self.walk_from(self.root, path)
    }

    /// Walk from `fid` to `path`, as `walk` does from the root.
    pub fn walk_from(&mut self, fid: u32, path: &str) -> io::Result<u32> {
        let names: Vec<&[u8]> = path.split('/').filter(|n| !n.is_empty() && *n != ".").map(str::as_bytes).collect();
        let newfid = self.fids.take()?;
        let mut chunks = names.chunks(MAXWELEM);
        if let Err(e) = self.walk_once(fid, newfid, chunks.next().unwrap_or(&[])) {
            self.fids.give(newfid);
            return Err(e);
        }
        for chunk in chunks {
            if let Err(e) = self.walk_once(newfid, newfid, chunk) {
                let _ = self.clunk(newfid); // the walk's error is the one worth reporting
                return Err(e);
            }
        }
        Ok(newfid)
    }

    /// One Twalk. A short Rwalk means `names[n]` failed for a reason the
    /// server does not say (walk(5)); it is reported as Plan 9 does.
    fn walk_once(&mut self, fid: u32, newfid: u32, names: &[&[u8]]) -> io::Result<()> {
        let wnames = WalkNames::new(names).expect("walk_from chunks names to MAXWELEM");
        let walked = match self.call(&Tmsg::Walk { fid, newfid, names: wnames })? {
            Rmsg::Walk { qids } => qids.len(),
            other => return Err(unexpected("Rwalk", &other)),
        };
        match walked.cmp(&names.len()) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Greater => Err(invalid(format!("Rwalk of {walked} qids for {} names", names.len()))),
            std::cmp::Ordering::Less => {
                let name = String::from_utf8_lossy(names[walked]);
                Err(io::Error::new(io::ErrorKind::NotFound, format!("'{name}' file does not exist")))
            }
        }
    }

    /// Open `fid` with `mode` (`proto::OREAD`, ...): its qid and iounit.
    pub fn open(&mut self, fid: u32, mode: u8) -> io::Result<(Qid, u32)> {
        match self.call(&Tmsg::Open { fid, mode })? {
            Rmsg::Open { qid, iounit } => Ok((qid, iounit)),
            other => Err(unexpected("Ropen", &other)),
        }
    }

    /// One Tread at `offset` for as much as `buf` holds (at most `io_max`),
    /// copied into `buf`: the count, 0 at the end.
    pub fn read_at(&mut self, fid: u32, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let count = buf.len().min(self.io_max() as usize);
        let data = match self.call(&Tmsg::Read { fid, offset, count: count as u32 })? {
            Rmsg::Read { data } => data,
            other => return Err(unexpected("Rread", &other)),
        };
        if data.len() > count {
            return Err(invalid(format!("Rread of {} bytes for a count of {count}", data.len())));
        }
        buf[..data.len()].copy_from_slice(data);
        Ok(data.len())
    }

    /// Read an open file from offset 0 to its end, `io_max` at a time.
    pub fn read_all(&mut self, fid: u32) -> io::Result<Vec<u8>> {
        let mut all = Vec::new();
        let count = self.io_max();
        loop {
            let offset = all.len() as u64;
            match self.call(&Tmsg::Read { fid, offset, count })? {
                Rmsg::Read { data: [] } => return Ok(all),
                Rmsg::Read { data } => all.extend_from_slice(data),
                other => return Err(unexpected("Rread", &other)),
            }
        }
    }

    /// Read an open directory to its end: every entry, in the server's order.
    pub fn read_dir(&mut self, fid: u32) -> io::Result<Vec<OwnedStat>> {
        let mut entries = Vec::new();
        let mut offset = 0u64;
        let (count, dialect) = (self.io_max(), self.dialect);
        loop {
            let data = match self.call(&Tmsg::Read { fid, offset, count })? {
                Rmsg::Read { data } => data,
                other => return Err(unexpected("Rread", &other)),
            };
            if data.is_empty() {
                return Ok(entries);
            }
            offset += data.len() as u64;
            decode_entries(data, dialect, &mut entries)?;
        }
    }

    /// Tstat of `fid`.
    pub fn stat(&mut self, fid: u32) -> io::Result<OwnedStat> {
        match self.call(&Tmsg::Stat { fid })? {
            Rmsg::Stat { stat } => Ok(OwnedStat::from(&stat)),
            other => Err(unexpected("Rstat", &other)),
        }
    }

    /// One Twrite at `offset` of as much of `data` as fits (`io_max`): the
    /// count the server took, which may be short, as with write(2).
    pub fn write(&mut self, fid: u32, offset: u64, data: &[u8]) -> io::Result<usize> {
        let sent = data.len().min(self.io_max() as usize);
        let count = match self.call(&Tmsg::Write { fid, offset, data: &data[..sent] })? {
            Rmsg::Write { count } => count as usize,
            other => return Err(unexpected("Rwrite", &other)),
        };
        if count > sent {
            return Err(invalid(format!("Rwrite of {count} bytes for {sent} sent")));
        }
        Ok(count)
    }

    /// Tclunk. The fid is gone whatever the answer (clunk(5)), so its number
    /// is reused either way.
    pub fn clunk(&mut self, fid: u32) -> io::Result<()> {
        let result = match self.call(&Tmsg::Clunk { fid }) {
            Ok(Rmsg::Clunk) => Ok(()),
            Ok(other) => Err(unexpected("Rclunk", &other)),
            Err(e) => Err(e),
        };
        self.fids.give(fid);
        result
    }
}

fn decode_entries(mut data: &[u8], dialect: Dialect, entries: &mut Vec<OwnedStat>) -> io::Result<()> {
    while !data.is_empty() {
        let (stat, used) = proto::decode_stat(data, dialect)
            .map_err(|e| invalid(format!("undecodable directory entry: {:?}", e.kind)))?;
        entries.push(OwnedStat::from(&stat));
        data = &data[used..];
    }
    Ok(())
}

fn server_error(ename: &[u8], errno: u32, dialect: Dialect) -> io::Error {
    let errno = match dialect {
        Dialect::P2000u if errno != 0 => Some(errno),
        _ => None,
    };
    ServerError { text: String::from_utf8_lossy(ename).into_owned(), errno }.into_io()
}

fn invalid(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("9P protocol error: {why}"))
}

fn hung_up(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(e.kind(), "server hung up"),
        _ => e,
    }
}

fn unexpected(wanted: &str, got: &Rmsg<'_>) -> io::Error {
    let got = match got {
        Rmsg::Version { .. } => "Rversion",
        Rmsg::Auth { .. } => "Rauth",
        Rmsg::Attach { .. } => "Rattach",
        Rmsg::Error { .. } => "Rerror",
        Rmsg::Flush => "Rflush",
        Rmsg::Walk { .. } => "Rwalk",
        Rmsg::Open { .. } => "Ropen",
        Rmsg::Create { .. } => "Rcreate",
        Rmsg::Read { .. } => "Rread",
        Rmsg::Write { .. } => "Rwrite",
        Rmsg::Clunk => "Rclunk",
        Rmsg::Remove => "Rremove",
        Rmsg::Stat { .. } => "Rstat",
        Rmsg::Wstat => "Rwstat",
        Rmsg::Lerror { .. } => "Rlerror",
        Rmsg::Statfs(_) => "Rstatfs",
        Rmsg::Lopen { .. } => "Rlopen",
        Rmsg::Lcreate { .. } => "Rlcreate",
        Rmsg::Symlink { .. } => "Rsymlink",
        Rmsg::Mknod { .. } => "Rmknod",
        Rmsg::Rename => "Rrename",
        Rmsg::Readlink { .. } => "Rreadlink",
        Rmsg::Getattr(_) => "Rgetattr",
        Rmsg::Setattr => "Rsetattr",
        Rmsg::Xattrwalk { .. } => "Rxattrwalk",
        Rmsg::Xattrcreate => "Rxattrcreate",
        Rmsg::Readdir { .. } => "Rreaddir",
        Rmsg::Fsync => "Rfsync",
        Rmsg::Lock { .. } => "Rlock",
        Rmsg::Getlock { .. } => "Rgetlock",
        Rmsg::Link => "Rlink",
        Rmsg::Mkdir { .. } => "Rmkdir",
        Rmsg::Renameat => "Rrenameat",
        Rmsg::Unlinkat => "Runlinkat",
    };
    invalid(format!("expected {wanted}, got {got}"))
}
