//! `9agents --stdio`: one 9P session on standard input and output, what
//! ssh gives a remote command (`ssh HOST 9agents --stdio`, which the
//! client's `ssh!HOST` address runs).
//!
//! When the host already has a daemon posted under `--name` (`agents`),
//! the session is relayed to it, so a remote reader shares that daemon's
//! indexes and watches. Otherwise a daemon of its own is started for the
//! session (`--no-post`, on a socket in a private directory, with the
//! other arguments given: `--root`, `--demo`, …), and stopped when the
//! session ends. Either way the bytes are copied as they come, both ways;
//! the end of input ends the session (the socket's write side is shut, the
//! daemon hangs up, the copy back ends) and the process exits.
//!
//! Not the daemon's loop: a relay of two copies, a thread each.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon of its own may take to answer on its socket.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// Bytes one read of either side copies.
const COPY_BYTES: usize = 64 << 10;

/// Run the session; the exit status.
pub fn run(args: Vec<std::ffi::OsString>) -> i32 {
    match session(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("9agents --stdio: {e}");
            1
        }
    }
}

fn session(args: Vec<std::ffi::OsString>) -> io::Result<()> {
    let rest: Vec<std::ffi::OsString> = args.into_iter().filter(|a| a != "--stdio").collect();
    let name = rest.windows(2).find(|w| w[0] == "--name").and_then(|w| w[1].to_str()).unwrap_or("agents").to_owned();
    if let Some(sock) = crate::post::post_path(&name).ok().and_then(|p| UnixStream::connect(p).ok()) {
        return relay(sock);
    }
    let own = Own::start(&rest)?;
    let result = relay(own.connect()?);
    drop(own);
    result
}

/// A daemon started for this session alone, stopped with it.
struct Own {
    child: Child,
    dir: PathBuf,
}

impl Own {
    fn start(args: &[std::ffi::OsString]) -> io::Result<Own> {
        let base = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = base.join(format!("9agents-stdio-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let sock = dir.join("sock");
        // Its own name is not posted: `--name` (which only says what to
        // relay to) is left out.
        let mut keep = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--name" {
                it.next();
            } else {
                keep.push(a.clone());
            }
        }
        let child = Command::new(std::env::current_exe()?)
            .arg("--no-post")
            .arg("--unix")
            .arg(&sock)
            .args(keep)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        Ok(Own { child, dir })
    }

    /// Its socket, once it answers (or why not).
    fn connect(&self) -> io::Result<UnixStream> {
        let sock = self.dir.join("sock");
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            match UnixStream::connect(&sock) {
                Ok(s) => return Ok(s),
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(io::Error::new(e.kind(), format!("its own daemon at {}: {e}", sock.display()))),
            }
        }
    }
}

impl Drop for Own {
    fn drop(&mut self) {
        // SIGTERM: the daemon stops, unlinking its socket.
        let _ =
            rustix::process::kill_process(rustix::process::Pid::from_child(&self.child), rustix::process::Signal::TERM);
        let _ = self.child.wait();
        let _ = remove(&self.dir);
    }
}

fn remove(dir: &Path) -> io::Result<()> {
    std::fs::remove_dir_all(dir)
}

/// Copy standard input to `sock` and `sock` to standard output until the
/// daemon hangs up (after the input ended, or on its own).
fn relay(sock: UnixStream) -> io::Result<()> {
    let mut up = sock.try_clone()?;
    std::thread::spawn(move || {
        let mut buf = vec![0u8; COPY_BYTES];
        let mut stdin = io::stdin().lock();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if up.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = up.shutdown(Shutdown::Write);
    });
    let mut down = sock;
    let mut buf = vec![0u8; COPY_BYTES];
    let mut stdout = io::stdout().lock();
    loop {
        let n = match down.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Each reply as it comes: a client waits on it.
        stdout.write_all(&buf[..n])?;
        stdout.flush()?;
    }
}
