//! An sshd of a test's own (Debian's openssh-server): on a loopback port,
//! with its own host key, its own authorized key and a scratch config,
//! whose sessions see the scratch home and runtime directory (`SetEnv`),
//! never the real ones; and the client config and `ssh` wrapper that reach
//! it. Shared by `tests/ssh.rs` and the kernel test's forward.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;

use crate::common::*;

/// A running sshd of the test's own, whose sessions see `s`'s home, and
/// the client config that reaches it as host `name`.
pub(crate) struct Sshd {
    child: Child,
    /// The directory holding the `ssh` wrapper the client finds first.
    pub bin: PathBuf,
    pub dir: PathBuf,
    /// Its `Host` block of the client's config.
    host: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sshd and ssh-keygen this machine has, or `None` (the test says it
/// skipped; on CI, where `.ci/run` installs them, it fails instead).
pub(crate) fn tools() -> Option<()> {
    let have = Path::new("/usr/sbin/sshd").exists() && which("ssh-keygen") && which("ssh");
    // sshd's privilege separation wants its empty directory, root's.
    let privsep = Path::new("/run/sshd").is_dir()
        || (rustix::process::geteuid().is_root() && std::fs::create_dir_all("/run/sshd").is_ok());
    if have && privsep {
        return Some(());
    }
    assert!(std::env::var_os("CI").is_none(), "CI has no sshd (apt install openssh-server) or no /run/sshd");
    eprintln!("ssh: skipped: no sshd, ssh-keygen or /run/sshd here (apt install openssh-server, as root)");
    None
}

fn which(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

impl Sshd {
    pub(crate) fn start(s: &Arc<Scratch>) -> Sshd {
        let sshd = Sshd::start_as(s, "remote1");
        sshd.client_config(&[&sshd]);
        sshd
    }

    /// An sshd reached as `name`; its client config written by
    /// `client_config`.
    pub(crate) fn start_as(s: &Arc<Scratch>, name: &str) -> Sshd {
        let dir = s.root.join("ssh");
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for key in ["host_key", "user_key"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .status()
                .unwrap();
            assert!(st.success(), "ssh-keygen");
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let port = free_tcp_port();
        let bin_dir = Path::new(BIN).parent().unwrap();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
        let d = dir.display();
        let sshd_config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile none\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\n\
             PermitRootLogin yes\nSetEnv HOME={} XDG_RUNTIME_DIR={} PATH={}:/usr/bin:/bin\n",
            s.home.display(),
            s.runtime.display(),
            bin_dir.display()
        );
        std::fs::write(dir.join("sshd_config"), sshd_config).unwrap();
        let host = format!(
            "Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User {}\n  IdentityFile {d}/user_key\n  \
             IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            user.trim()
        );
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let up = poll(START_DEADLINE, || std::net::TcpStream::connect(("127.0.0.1", port)).ok());
        assert!(up.is_some(), "sshd never listened: {}", std::fs::read_to_string(dir.join("sshd.log")).unwrap());
        Sshd { child, bin, dir, host }
    }

    /// The client's config (every sshd of `all`, and a host nobody listens
    /// for: `nowhere`) and the `ssh` that reads it, in this one's `bin`.
    pub(crate) fn client_config(&self, all: &[&Sshd]) {
        let d = self.dir.display();
        let mut cfg: String = all.iter().map(|s| s.host.as_str()).collect();
        cfg.push_str(&format!(
            "Host nowhere\n  HostName 127.0.0.1\n  Port {}\n  ConnectTimeout 5\n  LogLevel ERROR\n",
            free_tcp_port()
        ));
        std::fs::write(self.dir.join("ssh_config"), cfg).unwrap();
        let wrapper = format!("#!/bin/sh\nexec /usr/bin/ssh -F {d}/ssh_config \"$@\"\n");
        std::fs::write(self.bin.join("ssh"), wrapper).unwrap();
        std::fs::set_permissions(self.bin.join("ssh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }

    /// `9agents ARGS` on this machine, its `ssh` the wrapper.
    pub(crate) fn client(&self, s: &Arc<Scratch>, args: &[&str]) -> Output {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let out = s.command().env("PATH", path).args(args).stdin(Stdio::null()).output().unwrap();
        if !out.status.success() {
            eprintln!("sshd log:\n{}", std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default());
        }
        out
    }
}
