//! The host's side of the guest's `remote/forward` check (README, "A
//! remote machine"): a daemon posted in the scratch runtime directory,
//! serving `--demo`; an sshd of the test's own (`tests/sshd`); and the
//! forward README shows, `ssh -N -o StreamLocalBindUnlink=yes -L
//! <local socket>:<remote post socket> HOST`. qemu connects a virtio
//! serial port to the forwarded socket, and in the guest the kernel mounts
//! the port (`trans=fd`): v9fs, virtio, qemu, the forwarded socket, ssh,
//! sshd, the daemon. (The guest has no network to dial the host's sshd
//! with, so the forward runs on the host.)

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::common::{poll, Daemon, Scratch, START_DEADLINE};
use crate::sshd::{tools, Sshd};

/// The port's name, as the guest's `/sys/class/virtio-ports/*/name` says.
pub(crate) const PORT_NAME: &str = "org.9agents.forward";

pub(crate) struct Forward {
    ssh: Child,
    _sshd: Sshd,
    _daemon: Daemon,
    sock: PathBuf,
}

impl Drop for Forward {
    fn drop(&mut self) {
        let _ = self.ssh.kill();
        let _ = self.ssh.wait();
    }
}

/// The forward, up; `None` where this machine has no sshd (the test says
/// so; on CI, where `.ci/run` installs it, it fails instead).
pub(crate) fn start(s: &Arc<Scratch>) -> Option<Forward> {
    tools()?;
    // The guest opens the port a while after qemu connects it: the
    // daemon waits for its Tversion that long.
    let daemon = Daemon::posted(s, &["--demo", "--version-deadline", "3600000"]);
    let sshd = Sshd::start(s);
    let sock = s.root.join("forward.sock");
    let log = std::fs::File::create(s.root.join("forward.log")).unwrap();
    let ssh = Command::new(sshd.bin.join("ssh"))
        .args(["-N", "-o", "StreamLocalBindUnlink=yes", "-o", "ExitOnForwardFailure=yes", "-L"])
        .arg(format!("{}:{}", sock.display(), s.post_path("agents").display()))
        .arg("remote1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut f = Forward { ssh, _sshd: sshd, _daemon: daemon, sock };
    let up = poll(START_DEADLINE, || f.sock.exists().then_some(()));
    assert!(
        up.is_some() && f.ssh.try_wait().unwrap().is_none(),
        "ssh -L never made {}: {}",
        f.sock.display(),
        std::fs::read_to_string(s.root.join("forward.log")).unwrap_or_default()
    );
    Some(f)
}

impl Forward {
    /// qemu's arguments for the port: a virtio serial device whose port
    /// `PORT_NAME` is a client of the forwarded socket.
    pub(crate) fn qemu_args(&self) -> Vec<String> {
        vec![
            "-device".into(),
            "virtio-serial-pci,id=vser".into(),
            "-chardev".into(),
            format!("socket,id=forward,path={}", self.sock.display()),
            "-device".into(),
            format!("virtserialport,bus=vser.0,chardev=forward,name={PORT_NAME}"),
        ]
    }
}
