//! 9P2000.L, the dialect Linux mounts with by default and diod's tools
//! speak: every message a Linux client sends gets a correct answer — the
//! read side served, the write side refused with the errno a read-only
//! file system gives, in Rlerror.

mod common;

use std::os::unix::fs::MetadataExt;

use common::*;
use nineagents::proto::*;

const FILE: &str = "/claude/projects/-src-app/a.jsonl";
const A: &[u8] = b"{\"type\":\"user\",\"message\":\"hello\"}\n";

fn world() -> (std::sync::Arc<Scratch>, Daemon) {
    let s = Scratch::new();
    s.home_file(".claude/projects/-src-app/a.jsonl", A);
    for i in 0..40 {
        s.home_file(&format!(".claude/projects/-src-app/n{i:02}.jsonl"), b"x\n");
    }
    let d = Daemon::start_in(&s, &["--proc", &s.empty_proc()]);
    (s, d)
}

/// The errno of an Rlerror.
fn lerror(r: &Reply) -> u32 {
    match r.msg() {
        Rmsg::Lerror { ecode } => ecode,
        other => panic!("expected Rlerror, got {other:?}"),
    }
}

fn lopen(c: &mut Conn, fid: u32, flags: u32) -> Reply {
    c.rpc(&Tmsg::Lopen { fid, flags })
}

fn getattr(c: &mut Conn, fid: u32) -> Getattr {
    match c.rpc(&Tmsg::Getattr { fid, mask: GETATTR_ALL }).msg() {
        Rmsg::Getattr(a) => a,
        other => panic!("Tgetattr: {other:?}"),
    }
}

/// Every name of a directory, read with Treaddir `count` bytes at a time,
/// each read going on from the last entry's cookie.
fn readdir_all(c: &mut Conn, fid: u32, count: u32) -> Vec<(String, u64, u8)> {
    let (mut out, mut offset) = (Vec::new(), 0);
    loop {
        let r = c.rpc(&Tmsg::Readdir { fid, offset, count });
        let Rmsg::Readdir { data } = r.msg() else { panic!("Treaddir: {:?}", r.msg()) };
        if data.is_empty() {
            return out;
        }
        for e in decode_dirents(data) {
            let e = e.expect("whole entries");
            out.push((String::from_utf8_lossy(e.name).into_owned(), e.offset, e.ty));
            offset = e.offset;
        }
    }
}

#[test]
fn a_file_opens_with_linux_flags_and_reads_its_bytes() {
    let (_s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path(FILE, 1);
    let r = lopen(&mut c, 1, DOTL_RDONLY | DOTL_LARGEFILE | DOTL_NOFOLLOW | DOTL_CLOEXEC);
    let Rmsg::Lopen { qid, iounit } = r.msg() else { panic!("Tlopen: {:?}", r.msg()) };
    assert_eq!((qid.ty, iounit), (QTFILE, SESSION_MSIZE - IOHDRSZ));
    assert_eq!(c.read_ok(1, 0, 4096), A);
}

/// At Linux's default msize (128 KiB), a file smaller than 64 KiB opens
/// with an iounit whose reads fit a 64 KiB Rread (Linux sizes its reply
/// buffers by the iounit, and zeroes them); a larger one with the msize's.
#[test]
fn a_small_file_opens_with_an_iounit_its_reads_fit_in_64_kib() {
    const KERNEL_MSIZE: u32 = 128 * 1024;
    let (s, d) = world();
    s.home_file(".claude/projects/-src-app/big.jsonl", &vec![b'x'; 100_000]);
    let mut c = d.connect();
    c.version(KERNEL_MSIZE, "9P2000.L");
    c.attach_ok(ROOT);
    for (fid, path, iounit) in
        [(1, FILE, 64 * 1024 - 11), (2, "/claude/projects/-src-app/big.jsonl", KERNEL_MSIZE - IOHDRSZ)]
    {
        c.walk_path(path, fid);
        let r = lopen(&mut c, fid, DOTL_RDONLY);
        let Rmsg::Lopen { iounit: got, .. } = r.msg() else { panic!("Tlopen: {:?}", r.msg()) };
        assert_eq!(got, iounit, "{path}");
    }
    assert_eq!(c.read_ok(1, 0, 64 * 1024 - 11), A);
    assert_eq!(c.read_ok(2, 0, KERNEL_MSIZE - IOHDRSZ).len(), 100_000, "a whole 100 kB in one read");
}

#[test]
fn every_open_that_could_change_a_file_answers_read_only_file_system() {
    let (_s, d) = world();
    let mut c = d.session(Dialect::L);
    for (i, flags) in [
        DOTL_WRONLY,
        DOTL_RDWR,
        DOTL_WRONLY | DOTL_TRUNC,
        DOTL_RDONLY | DOTL_TRUNC,
        DOTL_RDONLY | DOTL_CREATE,
        DOTL_WRONLY | DOTL_CREATE,
        DOTL_WRONLY | DOTL_APPEND,
    ]
    .into_iter()
    .enumerate()
    {
        let fid = 10 + i as u32;
        c.walk_path(FILE, fid);
        assert_eq!(lerror(&lopen(&mut c, fid, flags)), libc::EROFS as u32, "flags {flags:o}");
    }
}

#[test]
fn getattr_reports_the_files_real_size_times_and_links_and_read_only_modes() {
    let (s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path(FILE, 1);
    let a = getattr(&mut c, 1);
    let m = std::fs::metadata(s.home.join(".claude/projects/-src-app/a.jsonl")).unwrap();
    assert_eq!(a.valid & GETATTR_BASIC, GETATTR_BASIC);
    assert_eq!(a.mode, libc::S_IFREG | 0o444);
    assert_eq!((a.size, a.nlink, a.blocks), (A.len() as u64, 1, m.blocks()));
    assert_eq!((a.mtime_sec, a.mtime_nsec), (m.mtime() as u64, m.mtime_nsec() as u64));
    assert_eq!((a.uid, a.gid), (m.uid(), m.gid()));
    c.walk_path("/claude/projects", 2);
    let dir = getattr(&mut c, 2);
    assert_eq!(dir.mode, libc::S_IFDIR | 0o555);
    assert_eq!(dir.qid.ty, QTDIR);
    let root = getattr(&mut c, ROOT);
    assert_eq!((root.mode, root.nlink), (libc::S_IFDIR | 0o555, 2));
}

/// The walk's look answers the Tgetattr of Linux's lookup, once: the next
/// Tgetattr looks again and sees the file as it is now.
#[test]
fn a_second_getattr_after_a_walk_sees_the_file_as_it_is_now() {
    let (s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path(FILE, 1);
    let path = s.home.join(".claude/projects/-src-app/a.jsonl");
    std::fs::write(&path, [A, A].concat()).unwrap();
    let _lookup = getattr(&mut c, 1);
    assert_eq!(getattr(&mut c, 1).size, 2 * A.len() as u64, "the second Tgetattr looked afresh");
}

/// An open right after the walk skips its own look, but what it opened is
/// still checked: a file that became a symlink since is not there.
#[test]
fn an_open_right_after_a_walk_still_refuses_what_the_file_became() {
    let (s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path(FILE, 1);
    let path = s.home.join(".claude/projects/-src-app/a.jsonl");
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
    assert_eq!(lerror(&lopen(&mut c, 1, DOTL_RDONLY)), libc::ENOENT as u32);
}

#[test]
fn readdir_lists_every_entry_once_with_cookies_that_stay_valid() {
    let (_s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path("/claude/projects/-src-app", 1);
    lopen(&mut c, 1, DOTL_RDONLY | DOTL_DIRECTORY);
    let small = readdir_all(&mut c, 1, 100);
    let names: Vec<&str> = small.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names.len(), 41);
    assert_eq!(names[0], "a.jsonl");
    assert!(small.iter().all(|(_, _, ty)| *ty == libc::DT_REG));
    // Seeking back to a cookie handed out earlier reads on from there.
    let cookie = small[9].1;
    let r = c.rpc(&Tmsg::Readdir { fid: 1, offset: cookie, count: 4096 });
    let Rmsg::Readdir { data } = r.msg() else { panic!() };
    let first = decode_dirents(data).next().unwrap().unwrap();
    assert_eq!(String::from_utf8_lossy(first.name), small[10].0);
    assert_eq!(readdir_all(&mut c, 1, 8000), small, "one read or many, the same listing");
}

#[test]
fn statfs_readlink_xattrs_locks_and_fsync_answer_as_a_read_only_tree_does() {
    let (_s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path(FILE, 1);
    let Rmsg::Statfs(st) = c.rpc(&Tmsg::Statfs { fid: ROOT }).msg() else { panic!() };
    assert_eq!((st.ty, st.namelen), (0x0102_1997, 255));
    assert_eq!(lerror(&c.rpc(&Tmsg::Readlink { fid: 1 })), libc::EINVAL as u32);
    // No extended attributes: an empty list, and ENODATA for one by name.
    assert_eq!(c.rpc(&Tmsg::Xattrwalk { fid: 1, newfid: 2, name: b"" }).msg(), Rmsg::Xattrwalk { size: 0 });
    assert!(c.read_ok(2, 0, 100).is_empty());
    c.clunk_ok(2);
    let r = c.rpc(&Tmsg::Xattrwalk { fid: 1, newfid: 3, name: b"security.selinux" });
    assert_eq!(lerror(&r), libc::ENODATA as u32);
    lopen(&mut c, 1, DOTL_RDONLY);
    let lock = |ty| Tmsg::Lock { fid: 1, ty, flags: 0, start: 0, length: 0, proc_id: 7, client_id: b"t" };
    assert_eq!(c.rpc(&lock(LOCK_TYPE_RDLCK)).msg(), Rmsg::Lock { status: LOCK_SUCCESS });
    assert_eq!(c.rpc(&lock(LOCK_TYPE_WRLCK)).msg(), Rmsg::Lock { status: LOCK_ERROR });
    assert_eq!(c.rpc(&lock(LOCK_TYPE_UNLCK)).msg(), Rmsg::Lock { status: LOCK_SUCCESS });
    let get = Tmsg::Getlock { fid: 1, ty: LOCK_TYPE_RDLCK, start: 0, length: 0, proc_id: 7, client_id: b"t" };
    let Rmsg::Getlock { ty, .. } = c.rpc(&get).msg() else { panic!() };
    assert_eq!(ty, LOCK_TYPE_UNLCK, "nothing holds a lock a reader would meet");
    assert_eq!(c.rpc(&Tmsg::Fsync { fid: 1, datasync: Some(0) }).msg(), Rmsg::Fsync);
}

#[test]
fn every_change_of_the_tree_answers_read_only_file_system() {
    let (_s, d) = world();
    let mut c = d.session(Dialect::L);
    c.walk_path("/claude/projects/-src-app", 1);
    c.walk_path(FILE, 2);
    let changes = [
        Tmsg::Setattr {
            fid: 2,
            valid: SETATTR_MODE,
            mode: 0o777,
            uid: 0,
            gid: 0,
            size: 0,
            atime_sec: 0,
            atime_nsec: 0,
            mtime_sec: 0,
            mtime_nsec: 0,
        },
        Tmsg::Setattr {
            fid: 2,
            valid: SETATTR_SIZE,
            mode: 0,
            uid: 0,
            gid: 0,
            size: 0,
            atime_sec: 0,
            atime_nsec: 0,
            mtime_sec: 0,
            mtime_nsec: 0,
        },
        Tmsg::Lcreate { fid: 1, name: b"new", flags: DOTL_WRONLY, mode: 0o644, gid: 0 },
        Tmsg::Symlink { fid: 1, name: b"l", symtgt: b"/etc/passwd", gid: 0 },
        Tmsg::Mknod { dfid: 1, name: b"f", mode: libc::S_IFIFO | 0o644, major: 0, minor: 0, gid: 0 },
        Tmsg::Rename { fid: 2, dfid: 1, name: b"b.jsonl" },
        Tmsg::Renameat { olddirfid: 1, oldname: b"a.jsonl", newdirfid: 1, newname: b"b.jsonl" },
        Tmsg::Unlinkat { dirfd: 1, name: b"a.jsonl", flags: 0 },
        Tmsg::Link { dfid: 1, fid: 2, name: b"again" },
        Tmsg::Mkdir { dfid: 1, name: b"d", mode: 0o755, gid: 0 },
        Tmsg::Xattrcreate { fid: 2, name: b"user.x", attr_size: 1, flags: 0 },
    ];
    for m in &changes {
        assert_eq!(lerror(&c.rpc(m)), libc::EROFS as u32, "{m:?}");
    }
    assert_eq!(lerror(&c.rpc(&Tmsg::Remove { fid: 2 })), libc::EROFS as u32);
    assert_eq!(lerror(&c.stat_l(2)), libc::EBADF as u32, "a refused Tremove still clunks its fid");
    c.walk_path(FILE, 30);
    lopen(&mut c, 30, DOTL_RDONLY);
    assert_eq!(c.read_ok(30, 0, 4096), A, "nothing changed");
}

#[test]
fn an_auth_answers_enoent_and_a_9p2000_message_is_refused_in_an_l_session() {
    let (_s, d) = world();
    let mut c = d.connect();
    c.version(SESSION_MSIZE, "9P2000.L");
    assert_eq!(lerror(&c.auth(1)), libc::ENOENT as u32, "diod's tools take ENOENT as: no authentication");
    c.attach_ok(ROOT);
    let tag = c.tag();
    c.send_raw(&encode_in(tag, &Tmsg::Stat { fid: ROOT }, Dialect::P2000));
    let r = c.recv();
    assert_eq!((r.tag(), lerror(&r)), (tag, libc::ENOSYS as u32));
}

/// A message encoded in `dialect` (a 9P2000 message sent into an .L session).
fn encode_in(tag: u16, m: &Tmsg<'_>, dialect: Dialect) -> Vec<u8> {
    let mut out = Vec::new();
    encode_t(&mut out, tag, m, dialect);
    out
}

trait GetattrOf {
    fn stat_l(&mut self, fid: u32) -> Reply;
}

impl GetattrOf for Conn {
    fn stat_l(&mut self, fid: u32) -> Reply {
        self.rpc(&Tmsg::Getattr { fid, mask: GETATTR_BASIC })
    }
}
