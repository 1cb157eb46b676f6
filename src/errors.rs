//! The one table of error texts, each with the errno it stands for.
//!
//! 9P2000 errors are text (error(5)); 9P2000.u sends the errno beside the
//! text; 9P2000.L will send only the errno. A Linux mount speaking plain
//! 9P2000 maps a text back to an errno by an exact match of the whole string
//! against `net/9p/error.c` (anything else is ESERVERFAULT), and plan9port's
//! 9pfuse by the first of its own phrases the text holds, case-insensitive
//! (anything else is ERANGE). So every text here is one of Linux's strings
//! (`file does not exist`, `Bad file descriptor`, `Invalid argument`,
//! `Read-only file system`, …), chosen so 9pfuse maps it to the same errno;
//! where 9pfuse has no phrase for the errno at all (ENAMETOOLONG, EMFILE,
//! ENFILE, ENOSYS, ENOBUFS, EFBIG, EOPNOTSUPP, ESPIPE) Linux's string stands
//! alone. Several refusals therefore share a text: the words say the errno,
//! not which check refused. Where the dialect carries the errno beside the
//! text (9P2000.u), a refusal that shares its text says which it was after
//! it (`Error::reason`: `Operation not permitted: this harness has no
//! resume form`); Linux reads the errno, 9pfuse still finds its phrase,
//! and the built-in client, which speaks .u, prints it. A refused move
//! logs its reason too. The unit tests carry both tables and hold every
//! entry, and every reason, to them.

/// Every refusal the daemon makes. The text and errno live only in
/// `Error::entry`, so a test can walk the whole table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    NotFound,
    NotDir,
    IsDir,
    UnknownFid,
    FidInUse,
    FidOpen,
    FidNotOpen,
    WalkOpenFid,
    BadOffset,
    ReadOnly,
    NoAuth,
    BadAfid,
    BadAname,
    BadName,
    NameTooLong,
    TooManyNames,
    TooManyFids,
    DupTag,
    MsizeTooSmall,
    Malformed,
    UnknownType,
    NotRegular,
    DirTooLarge,
    TooManyOpenFiles,
    IllegalName,
    NoSession,
    NoCwd,
    NoResumeForm,
    NothingToResume,
    NameTaken,
    MoveBusy,
    MoveNotGone,
    MoveSpawn,
    MoveNoPost,
    ChatTooLong,
    ChatsBusy,
    ChatLineTooLong,
    InflateTooLarge,
    NoMemory,
    PermissionDenied,
    NotALink,
    NoAttribute,
    NoAuthFile,
    TooManyWatches,
    TooManyWaits,
    ReadTooSmall,
    MovesOff,
    BadQuery,
    Io,
}

impl Error {
    /// The one table: text and errno. Every text is a string of Linux's
    /// `net/9p/error.c` that it maps to this errno, and one 9pfuse maps to
    /// it too, except where 9pfuse has no entry for the errno at all (noted
    /// per row; the unit tests below hold the table to both).
    pub fn entry(self) -> (&'static str, u32) {
        use Error::*;
        const EBADF: (&str, u32) = ("Bad file descriptor", libc::EBADF as u32);
        const EINVAL: (&str, u32) = ("Invalid argument", libc::EINVAL as u32);
        const EPERM: (&str, u32) = ("Operation not permitted", libc::EPERM as u32);
        const EIO: (&str, u32) = ("i/o error", libc::EIO as u32);
        // 9pfuse has no ENOBUFS.
        const ENOBUFS: (&str, u32) = ("No buffer space available", libc::ENOBUFS as u32);
        match self {
            NotFound => ("file does not exist", libc::ENOENT as u32),
            NotDir => ("not a directory", libc::ENOTDIR as u32),
            IsDir => ("Is a directory", libc::EISDIR as u32),
            // Linux's `fid unknown or out of range`, `fid already in use` and
            // `bad use of fid` are EBADF there, but ERANGE, EBUSY and ERANGE
            // in 9pfuse (its " fid " needs a space on both sides).
            UnknownFid | FidInUse | FidOpen | FidNotOpen | WalkOpenFid | BadAfid => EBADF,
            // 9pfuse has no ESPIPE: it reads `Illegal seek` as EINVAL (what
            // getdents answers a bad offset), where Linux's other ESPIPE text,
            // `bad offset in directory read`, would read as ENOTDIR.
            BadOffset => ("Illegal seek", libc::ESPIPE as u32),
            // ReadTooSmall: a `wait` read too small for the next change's
            // line, as inotify(7) answers a read too small for its next event.
            BadName | TooManyNames | DupTag | MsizeTooSmall | NotRegular | IllegalName | ReadTooSmall => EINVAL,
            ReadOnly | MovesOff => ("Read-only file system", libc::EROFS as u32),
            // 9pfuse has no EOPNOTSUPP.
            NoAuth => ("Operation not supported", libc::EOPNOTSUPP as u32),
            BadAname => ("No such file or directory", libc::ENOENT as u32),
            // 9pfuse has no ENAMETOOLONG: its `too long` is E2BIG.
            NameTooLong => ("File name too long", libc::ENAMETOOLONG as u32),
            // 9pfuse has no EMFILE.
            TooManyFids => ("Too many open files", libc::EMFILE as u32),
            Malformed => ("protocol botch", libc::EPROTO as u32),
            // 9pfuse has no ENOSYS.
            UnknownType => ("Function not implemented", libc::ENOSYS as u32),
            NoSession | NoCwd | NoResumeForm | NothingToResume => EPERM,
            NameTaken => ("File exists", libc::EEXIST as u32),
            MoveBusy => ("Device or resource busy", libc::EBUSY as u32),
            MoveNotGone | MoveSpawn | MoveNoPost | Io => EIO,
            ChatTooLong | DirTooLarge => ENOBUFS,
            ChatsBusy => ("Resource temporarily unavailable", libc::EAGAIN as u32),
            // 9pfuse has no EFBIG.
            ChatLineTooLong | InflateTooLarge => ("File too large", libc::EFBIG as u32),
            // 9pfuse has no ENFILE.
            TooManyOpenFiles => ("Too many open files in system", libc::ENFILE as u32),
            NoMemory => ("Cannot allocate memory", libc::ENOMEM as u32),
            // readlink(2) of a file that is not a link.
            NotALink => EINVAL,
            // A search's query that does not parse (its read says why).
            BadQuery => EINVAL,
            // 9pfuse has no ENODATA: getxattr(2)'s "no such attribute".
            NoAttribute => ("No data available", libc::ENODATA as u32),
            // An .L Tauth: no authentication file to open.
            NoAuthFile => ("No such file or directory", libc::ENOENT as u32),
            // Past --max-watches, as inotify says past its own limit.
            TooManyWatches => ("No space left on device", libc::ENOSPC as u32),
            // Past --max-waits: read again later.
            TooManyWaits => ("Resource temporarily unavailable", libc::EAGAIN as u32),
            PermissionDenied => ("Permission denied", libc::EACCES as u32),
        }
    }

    /// Why, in words, where the errno's text does not say it: the refusals
    /// that share a text (the four EPERM moves, every limit) each have
    /// their own. 9P2000.u carries it after the text (`Conn::error`: Linux
    /// reads the errno beside it, 9pfuse still finds its phrase), and a
    /// refused move logs it. No phrase of a client's table is in one, so
    /// the text still maps to its errno.
    pub fn reason(self) -> Option<&'static str> {
        use Error::*;
        Some(match self {
            IllegalName => "a zmx session name is 1 to 64 bytes of A-Z a-z 0-9 . _ -",
            NoSession => "no session resolved for this agent",
            NoCwd => "the agent's cwd is unknown",
            NoResumeForm => "this harness has no resume form",
            NothingToResume => "nothing to resume: the agent has no session id",
            NameTaken => "a live zmx session holds that name",
            MoveBusy => "a move of this agent is already in progress",
            MoveNotGone => "the agent did not exit after SIGTERM and SIGKILL",
            MoveSpawn => "zmx could not be started",
            MoveNoPost => "zmx did not post the session before the deadline",
            MovesOff => "moves are off: the daemon runs without --allow-move",
            DirTooLarge => "more entries than a listing takes (--max-dir-entries)",
            ChatTooLong => "more messages than a chat takes (--max-chat-messages)",
            ChatsBusy => "too many chat refreshes wait for a slot (--max-chats)",
            ChatLineTooLong => "a transcript line longer than 256 MiB",
            InflateTooLarge => "decoded transcripts past --max-inflated",
            TooManyWatches => "as many agents watched as --max-watches",
            TooManyWaits => "as many reads of wait parked as --max-waits",
            ReadTooSmall => "the next line of wait does not fit the count",
            TooManyNames => "a walk of more than 16 names",
            MsizeTooSmall => "an msize smaller than the daemon takes",
            BadQuery => "a search query that does not parse: the next read says why",
            _ => return None,
        })
    }

    /// The text an Rerror carries in `dialect`: in 9P2000.u the reason
    /// follows the errno's text (Linux reads the errno beside it); plain
    /// 9P2000 clients map the text itself, so there it is the text alone.
    pub fn text_in(self, dialect: crate::proto::Dialect) -> std::borrow::Cow<'static, str> {
        match (dialect, self.reason()) {
            (crate::proto::Dialect::P2000u, Some(why)) => format!("{}: {why}", self.text()).into(),
            _ => self.text().into(),
        }
    }

    /// The error a failed open, stat or read on disk answers, by its errno:
    /// absence is not-found, and everything else is itself — out of fds is
    /// never "file does not exist".
    pub(crate) fn from_errno(errno: i32) -> Error {
        use Error::*;
        match errno {
            libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EXDEV => NotFound,
            libc::EISDIR => IsDir,
            libc::EMFILE => TooManyFids,
            libc::ENFILE => TooManyOpenFiles,
            libc::ENOMEM => NoMemory,
            libc::EACCES | libc::EPERM => PermissionDenied,
            _ => Io,
        }
    }

    pub fn text(self) -> &'static str {
        self.entry().0
    }

    pub fn errno(self) -> u32 {
        self.entry().1
    }
}

#[cfg(test)]
mod tests {
    use super::Error::{self, *};

    const ALL: &[Error] = &[
        NotFound,
        NotDir,
        IsDir,
        UnknownFid,
        FidInUse,
        FidOpen,
        FidNotOpen,
        WalkOpenFid,
        BadOffset,
        ReadOnly,
        NoAuth,
        BadAfid,
        BadAname,
        BadName,
        NameTooLong,
        TooManyNames,
        TooManyFids,
        DupTag,
        MsizeTooSmall,
        Malformed,
        UnknownType,
        NotRegular,
        DirTooLarge,
        TooManyOpenFiles,
        IllegalName,
        NoSession,
        NoCwd,
        NoResumeForm,
        NothingToResume,
        NameTaken,
        MoveBusy,
        MoveNotGone,
        MoveSpawn,
        MoveNoPost,
        ChatTooLong,
        ChatsBusy,
        ChatLineTooLong,
        InflateTooLarge,
        NoMemory,
        PermissionDenied,
        NotALink,
        NoAttribute,
        NoAuthFile,
        TooManyWatches,
        TooManyWaits,
        ReadTooSmall,
        MovesOff,
        BadQuery,
        Io,
    ];

    use libc::*;

    /// Linux's `net/9p/error.c`, `errmap[]` (torvalds/linux), copied whole:
    /// a plain 9P2000 mount maps an Rerror's text to an errno by an exact,
    /// case-sensitive match of the whole string against this table, and
    /// answers ESERVERFAULT for anything else.
    const LINUX_ERRMAP: &[(&str, i32)] = &[
        ("Operation not permitted", EPERM),
        ("wstat prohibited", EPERM),
        ("No such file or directory", ENOENT),
        ("directory entry not found", ENOENT),
        ("file not found", ENOENT),
        ("Interrupted system call", EINTR),
        ("Input/output error", EIO),
        ("No such device or address", ENXIO),
        ("Argument list too long", E2BIG),
        ("Bad file descriptor", EBADF),
        ("Resource temporarily unavailable", EAGAIN),
        ("Cannot allocate memory", ENOMEM),
        ("Permission denied", EACCES),
        ("Bad address", EFAULT),
        ("Block device required", ENOTBLK),
        ("Device or resource busy", EBUSY),
        ("File exists", EEXIST),
        ("Invalid cross-device link", EXDEV),
        ("No such device", ENODEV),
        ("Not a directory", ENOTDIR),
        ("Is a directory", EISDIR),
        ("Invalid argument", EINVAL),
        ("Too many open files in system", ENFILE),
        ("Too many open files", EMFILE),
        ("Text file busy", ETXTBSY),
        ("File too large", EFBIG),
        ("No space left on device", ENOSPC),
        ("Illegal seek", ESPIPE),
        ("Read-only file system", EROFS),
        ("Too many links", EMLINK),
        ("Broken pipe", EPIPE),
        ("Numerical argument out of domain", EDOM),
        ("Numerical result out of range", ERANGE),
        ("Resource deadlock avoided", EDEADLK),
        ("File name too long", ENAMETOOLONG),
        ("No locks available", ENOLCK),
        ("Function not implemented", ENOSYS),
        ("Directory not empty", ENOTEMPTY),
        ("Too many levels of symbolic links", ELOOP),
        ("No message of desired type", ENOMSG),
        ("Identifier removed", EIDRM),
        ("No data available", ENODATA),
        ("Machine is not on the network", ENONET),
        ("Package not installed", ENOPKG),
        ("Object is remote", EREMOTE),
        ("Link has been severed", ENOLINK),
        ("Communication error on send", ECOMM),
        ("Protocol error", EPROTO),
        ("Bad message", EBADMSG),
        ("File descriptor in bad state", EBADFD),
        ("Streams pipe error", ESTRPIPE),
        ("Too many users", EUSERS),
        ("Socket operation on non-socket", ENOTSOCK),
        ("Message too long", EMSGSIZE),
        ("Protocol not available", ENOPROTOOPT),
        ("Protocol not supported", EPROTONOSUPPORT),
        ("Socket type not supported", ESOCKTNOSUPPORT),
        ("Operation not supported", EOPNOTSUPP),
        ("Protocol family not supported", EPFNOSUPPORT),
        ("Network is down", ENETDOWN),
        ("Network is unreachable", ENETUNREACH),
        ("Network dropped connection on reset", ENETRESET),
        ("Software caused connection abort", ECONNABORTED),
        ("Connection reset by peer", ECONNRESET),
        ("No buffer space available", ENOBUFS),
        ("Transport endpoint is already connected", EISCONN),
        ("Transport endpoint is not connected", ENOTCONN),
        ("Cannot send after transport endpoint shutdown", ESHUTDOWN),
        ("Connection timed out", ETIMEDOUT),
        ("Connection refused", ECONNREFUSED),
        ("Host is down", EHOSTDOWN),
        ("No route to host", EHOSTUNREACH),
        ("Operation already in progress", EALREADY),
        ("Operation now in progress", EINPROGRESS),
        ("Is a named type file", EISNAM),
        ("Remote I/O error", EREMOTEIO),
        ("Disk quota exceeded", EDQUOT),
        // errors from fossil, vacfs, and u9fs
        ("fid unknown or out of range", EBADF),
        ("permission denied", EACCES),
        ("file does not exist", ENOENT),
        ("authentication failed", ECONNREFUSED),
        ("bad offset in directory read", ESPIPE),
        ("bad use of fid", EBADF),
        ("wstat can't convert between files and directories", EPERM),
        ("directory is not empty", ENOTEMPTY),
        ("file exists", EEXIST),
        ("file already exists", EEXIST),
        ("file or directory already exists", EEXIST),
        ("fid already in use", EBADF),
        ("file in use", ETXTBSY),
        ("i/o error", EIO),
        ("file already open for I/O", ETXTBSY),
        ("illegal mode", EINVAL),
        ("illegal name", ENAMETOOLONG),
        ("not a directory", ENOTDIR),
        ("not a member of proposed group", EPERM),
        ("not owner", EACCES),
        ("only owner can change group in wstat", EACCES),
        ("read only file system", EROFS),
        ("no access to special file", EPERM),
        ("i/o count too large", EIO),
        ("unknown group", EINVAL),
        ("unknown user", EINVAL),
        ("bogus wstat buffer", EPROTO),
        ("exclusive use file already open", EAGAIN),
        ("corrupted directory entry", EIO),
        ("corrupted file entry", EIO),
        ("corrupted block label", EIO),
        ("corrupted meta data", EIO),
        ("illegal offset", EINVAL),
        ("illegal path element", ENOENT),
        ("root of file system is corrupted", EIO),
        ("corrupted super block", EIO),
        ("protocol botch", EPROTO),
        ("file system is full", ENOSPC),
        ("file is in use", EAGAIN),
        ("directory entry is not allocated", ENOENT),
        ("file is read only", EROFS),
        ("file has been removed", EIDRM),
        ("only support truncation to zero length", EPERM),
        ("cannot remove root", EPERM),
        ("file too big", EFBIG),
        ("venti i/o error", EIO),
        // these are not errors
        ("u9fs rhostsauth: no authentication required", 0),
        ("u9fs authnone: no authentication required", 0),
    ];

    /// plan9port's `src/cmd/9pfuse/errstr.c`, `errortab[]` (9fans/plan9port),
    /// copied whole and in order: 9pfuse answers the errno of the first
    /// entry that is a case-insensitive substring of the text, and ERANGE
    /// when none is ("who knows - be blatantly wrong").
    const NINEPFUSE_ERRORTAB: &[(&str, i32)] = &[
        ("permitted", EPERM),
        ("permission", EACCES),
        ("access", EACCES),
        ("exists", EEXIST),
        ("exist", ENOENT),
        ("no such", ENOENT),
        ("not found", ENOENT),
        ("input/output", EIO),
        ("timeout", ETIMEDOUT),
        ("timed out", ETIMEDOUT),
        ("i/o", EIO),
        ("too long", E2BIG),
        ("interrupt", EINTR),
        ("no such", ENODEV),
        ("bad file", EBADF),
        (" fid ", EBADF),
        ("temporar", EAGAIN),
        ("memory", ENOMEM),
        ("is a directory", EISDIR),
        ("directory", ENOTDIR),
        ("argument", EINVAL),
        ("pipe", EPIPE),
        ("in use", EBUSY),
        ("busy", EBUSY),
        ("illegal", EINVAL),
        ("read-only", EROFS),
        ("read only", EROFS),
        ("proto", EPROTO),
        ("entry", ENOENT),
    ];

    fn linux_errno(text: &str) -> Option<i32> {
        LINUX_ERRMAP.iter().find(|(t, _)| *t == text).map(|&(_, e)| e)
    }

    fn ninepfuse_errno(text: &str) -> i32 {
        let lower = text.to_lowercase();
        NINEPFUSE_ERRORTAB.iter().find(|(t, _)| lower.contains(t)).map_or(ERANGE, |&(_, e)| e)
    }

    /// The errnos 9pfuse's table has no entry for (or none Linux's table
    /// shares a string with): the text is Linux's exact string, and 9pfuse
    /// makes of it the errno beside it.
    const NINEPFUSE_EXCEPTIONS: &[(Error, i32, &str)] = &[
        (
            BadOffset,
            EINVAL,
            "9pfuse has no ESPIPE; of Linux's two ESPIPE texts, `Illegal seek` is EINVAL there \
            (what getdents answers a bad offset), `bad offset in directory read` would be ENOTDIR, which is false",
        ),
        (NoAuth, ERANGE, "9pfuse has no EOPNOTSUPP"),
        (NameTooLong, E2BIG, "9pfuse has no ENAMETOOLONG: its `too long` is E2BIG"),
        (TooManyFids, ERANGE, "9pfuse has no EMFILE"),
        (UnknownType, ERANGE, "9pfuse has no ENOSYS"),
        (DirTooLarge, ERANGE, "9pfuse has no ENOBUFS"),
        (TooManyOpenFiles, ERANGE, "9pfuse has no ENFILE"),
        (ChatTooLong, ERANGE, "9pfuse has no ENOBUFS"),
        (ChatLineTooLong, ERANGE, "9pfuse has no EFBIG"),
        (InflateTooLarge, ERANGE, "9pfuse has no EFBIG"),
        (NoAttribute, ERANGE, "9pfuse has no ENODATA (and speaks no .L, where this error is sent)"),
        (TooManyWatches, ERANGE, "9pfuse has no ENOSPC"),
    ];

    #[test]
    fn every_text_is_one_linux_maps_exactly_to_its_errno() {
        for e in ALL {
            let (text, errno) = e.entry();
            assert_eq!(linux_errno(text), Some(errno as i32), "{e:?}: {text:?}");
        }
    }

    #[test]
    fn every_text_is_one_9pfuse_maps_to_its_errno_or_a_documented_exception() {
        for e in ALL {
            let (text, errno) = e.entry();
            let got = ninepfuse_errno(text);
            match NINEPFUSE_EXCEPTIONS.iter().find(|(x, _, _)| x == e) {
                None => assert_eq!(got, errno as i32, "{e:?}: {text:?}"),
                Some(&(_, expected, why)) => {
                    assert_ne!(got, errno as i32, "{e:?} is listed as an exception but 9pfuse maps it");
                    assert_eq!(got, expected, "{e:?}: {text:?} ({why})");
                    let both = LINUX_ERRMAP.iter().find(|&&(l, x)| x == errno as i32 && ninepfuse_errno(l) == x);
                    assert_eq!(both, None, "{e:?}: a Linux text both tables map to its errno exists");
                }
            }
        }
    }

    /// Issue 21, defect 6: in 9P2000.u the text says why, and still maps
    /// to its errno for 9pfuse (which reads the text, not the errno).
    #[test]
    fn a_reason_in_9p2000u_keeps_the_text_and_its_9pfuse_errno() {
        use crate::proto::Dialect;
        for e in ALL {
            let plain = e.text_in(Dialect::P2000);
            assert_eq!(plain, e.text(), "{e:?}: plain 9P2000 is Linux's string alone");
            let u = e.text_in(Dialect::P2000u);
            assert!(u.starts_with(e.text()), "{e:?}: {u}");
            assert_eq!(ninepfuse_errno(&u), ninepfuse_errno(e.text()), "{e:?}: {u:?}");
        }
        for e in [NoSession, NoCwd, NoResumeForm, NothingToResume, MovesOff] {
            assert!(e.text_in(Dialect::P2000u).len() > e.text().len(), "{e:?} says why");
        }
    }

    #[test]
    fn the_read_only_refusal_is_erofs_read_only_file_system() {
        assert_eq!(ReadOnly.entry(), ("Read-only file system", EROFS as u32));
    }
}
