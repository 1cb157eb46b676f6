//! Dial strings, in plan9port's spelling so an address works the same here
//! and with `9p -a`: `unix!/path/to/socket`, `tcp!host!port` (the port a
//! number or `9fs`; `tcp!host` means port 564, `net!` is taken as `tcp!`),
//! or a bare name, which is a service posted in the post directory
//! (`agents` is `post::post_path("agents")`).
//!
//! Parsing is pure and tested alone; only `connect` touches the network.

use std::fmt;
use std::io;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use super::Conn;

/// The 9fs port (IANA-registered for 9P), which `tcp!host` means.
pub(super) const PORT_9FS: u16 = 564;

/// Where a client dials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// A posted service, by name.
    Posted(String),
    /// A Unix socket at a path.
    Unix(PathBuf),
    Tcp {
        host: String,
        port: u16,
    },
    /// A host reached through ssh: `ssh HOST 9agents --stdio`.
    Ssh(String),
}

/// The remote command an `ssh!` address runs, unless `$NINEAGENTS_REMOTE`
/// names another (a binary off the remote `PATH`).
const REMOTE_DEFAULT: &str = "9agents";

impl Addr {
    /// Parse a dial string. Errors are `InvalidInput` and say which form
    /// was expected.
    pub fn parse(s: &str) -> io::Result<Addr> {
        let bad = |why: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad address {s:?}: {why}")));
        let Some((net, rest)) = s.split_once('!') else {
            if s.is_empty() || s.contains('/') {
                return bad("a posted name is one path element; use unix!PATH for a socket path");
            }
            return Ok(Addr::Posted(s.to_owned()));
        };
        match net {
            "unix" if rest.is_empty() => bad("unix! needs a socket path"),
            "unix" => Ok(Addr::Unix(PathBuf::from(rest))),
            "tcp" | "net" => {
                let (host, port) = rest.split_once('!').unwrap_or((rest, "9fs"));
                let Some(port) = parse_port(port) else {
                    return bad("the port is a number or 9fs");
                };
                if host.is_empty() {
                    return bad("tcp! needs a host");
                }
                Ok(Addr::Tcp { host: host.to_owned(), port })
            }
            // (A host that begins with `-` would be one of ssh's options.)
            "ssh" if rest.is_empty() || rest.starts_with('-') || rest.contains(char::is_whitespace) => {
                bad("ssh! needs a host, as ssh takes it")
            }
            "ssh" => Ok(Addr::Ssh(rest.to_owned())),
            _ => bad("expected unix!PATH, tcp!HOST!PORT, ssh!HOST or a posted name"),
        }
    }

    /// Connect, plain blocking. TCP gets `TCP_NODELAY`: 9P is small
    /// requests each waiting on its reply, the case Nagle's delay hurts.
    pub fn connect(&self) -> io::Result<Conn> {
        let context = |e: io::Error| io::Error::new(e.kind(), format!("dial {self}: {e}"));
        match self {
            Addr::Posted(name) => {
                let path = crate::post::post_path(name)?;
                let conn = UnixStream::connect(&path);
                conn.map(Conn::Unix).map_err(|e| io::Error::new(e.kind(), format!("dial {}: {e}", path.display())))
            }
            Addr::Unix(path) => UnixStream::connect(path).map(Conn::Unix).map_err(context),
            Addr::Tcp { host, port } => {
                let stream = TcpStream::connect((host.as_str(), *port)).map_err(context)?;
                stream.set_nodelay(true)?;
                Ok(Conn::Tcp(stream))
            }
            Addr::Ssh(host) => ssh(host).map(Conn::Unix).map_err(context),
        }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Posted(name) => f.write_str(name),
            Addr::Unix(path) => write!(f, "unix!{}", path.display()),
            Addr::Tcp { host, port } => write!(f, "tcp!{host}!{port}"),
            Addr::Ssh(host) => write!(f, "ssh!{host}"),
        }
    }
}

/// `ssh -T HOST 9agents --stdio`, its standard input and output one end of
/// a socket pair: the other end, which the client speaks 9P on. ssh's own
/// complaints (a host it cannot reach, a key refused) go to our standard
/// error; when the socket is closed, ssh's input ends and so does the
/// remote session. ssh itself is left to exit then (not waited for: the
/// client exits soon after).
fn ssh(host: &str) -> io::Result<UnixStream> {
    let (ours, theirs) = UnixStream::pair()?;
    let remote = std::env::var("NINEAGENTS_REMOTE").unwrap_or_else(|_| REMOTE_DEFAULT.to_owned());
    let out = std::os::fd::OwnedFd::from(theirs.try_clone()?);
    std::process::Command::new("ssh")
        .args(["-T", "-o", "BatchMode=yes", "--", host, &remote, "--stdio"])
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(std::process::Stdio::from(out))
        .spawn()?;
    Ok(ours)
}

fn parse_port(port: &str) -> Option<u16> {
    match port {
        "9fs" => Some(PORT_9FS),
        _ => port.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_a_posted_service() {
        assert_eq!(Addr::parse("agents").unwrap(), Addr::Posted("agents".into()));
    }

    #[test]
    fn unix_bang_is_a_socket_path() {
        assert_eq!(
            Addr::parse("unix!/run/user/1000/9p/agents").unwrap(),
            Addr::Unix("/run/user/1000/9p/agents".into())
        );
    }

    #[test]
    fn tcp_bang_host_bang_port() {
        let want = Addr::Tcp { host: "127.0.0.1".into(), port: 5640 };
        assert_eq!(Addr::parse("tcp!127.0.0.1!5640").unwrap(), want);
    }

    #[test]
    fn tcp_without_a_port_and_the_9fs_service_mean_564() {
        let want = Addr::Tcp { host: "localhost".into(), port: 564 };
        assert_eq!(Addr::parse("tcp!localhost").unwrap(), want);
        assert_eq!(Addr::parse("tcp!localhost!9fs").unwrap(), want);
        assert_eq!(Addr::parse("net!localhost!564").unwrap(), want);
    }

    #[test]
    fn ssh_bang_is_a_host_as_ssh_takes_it_never_one_of_its_options() {
        assert_eq!(Addr::parse("ssh!dev-box").unwrap(), Addr::Ssh("dev-box".into()));
        assert_eq!(Addr::parse("ssh!me@10.0.0.2").unwrap(), Addr::Ssh("me@10.0.0.2".into()));
        for bad in ["ssh!", "ssh!-oProxyCommand=sh", "ssh!a b"] {
            assert_eq!(Addr::parse(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert_eq!(Addr::parse("ssh!dev-box").unwrap().to_string(), "ssh!dev-box");
    }

    #[test]
    fn ipv6_hosts_keep_their_colons() {
        assert_eq!(Addr::parse("tcp!::1!564").unwrap(), Addr::Tcp { host: "::1".into(), port: 564 });
    }

    #[test]
    fn malformed_addresses_are_refused_as_invalid_input() {
        for bad in ["", "a/b", "unix!", "tcp!!564", "tcp!host!http", "tcp!host!70000", "udp!host!564"] {
            assert_eq!(Addr::parse(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn an_address_prints_back_in_dial_string_form() {
        for s in ["agents", "unix!/tmp/s", "tcp!example.org!564"] {
            assert_eq!(Addr::parse(s).unwrap().to_string(), s);
        }
    }
}
