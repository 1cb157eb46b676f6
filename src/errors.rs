//! The one table of error texts, each with the errno it stands for.
//!
//! 9P2000 errors are text (error(5)); 9P2000.u sends the errno beside the
//! text; 9P2000.L will send only the errno. A Linux mount speaking plain
//! 9P2000 maps a text back to an errno by exact match against
//! `net/9p/error.c`, and plan9port's 9pfuse and 9ns by case-insensitive
//! substring. So every text here either is one of Linux's exact strings
//! (`file does not exist`, `not a directory`, `Is a directory`,
//! `fid unknown or out of range`, `bad offset in directory read`, …) or
//! says why in our own words while keeping the phrase that carries its errno
//! ("not permitted" for EPERM, "invalid" for EINVAL, "no such" for ENOENT)
//! and avoiding the ones that would retarget it ("permission" and "denied"
//! are EACCES, "read-only" is EROFS, a bare "fid" is EBADF).

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
    DirReadTooSmall,
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
    Io,
}

impl Error {
    /// The one table: text and errno.
    pub fn entry(self) -> (&'static str, u32) {
        use Error::*;
        match self {
            NotFound => ("file does not exist", libc::ENOENT as u32),
            NotDir => ("not a directory", libc::ENOTDIR as u32),
            IsDir => ("Is a directory", libc::EISDIR as u32),
            UnknownFid => ("fid unknown or out of range", libc::EBADF as u32),
            FidInUse => ("fid already in use", libc::EBADF as u32),
            FidOpen => ("bad use of fid: it is already open", libc::EBADF as u32),
            FidNotOpen => ("bad use of fid: it is not open for reading", libc::EBADF as u32),
            WalkOpenFid => ("bad use of fid: an open fid cannot walk itself", libc::EBADF as u32),
            BadOffset => ("bad offset in directory read", libc::ESPIPE as u32),
            DirReadTooSmall => ("invalid count: too small for one directory entry", libc::EINVAL as u32),
            ReadOnly => ("9agents serves a view, not a store: writing is not permitted", libc::EPERM as u32),
            NoAuth => ("authentication is not required here: Operation not supported", libc::EOPNOTSUPP as u32),
            BadAfid => ("bad use of fid: attach takes afid NOFID, there is no authentication", libc::EBADF as u32),
            BadAname => ("no such tree: 9agents serves only the empty aname", libc::ENOENT as u32),
            BadName => ("invalid name: empty, '.', or holding '/' or NUL", libc::EINVAL as u32),
            NameTooLong => ("File name too long", libc::ENAMETOOLONG as u32),
            TooManyNames => ("invalid walk: more than 16 names", libc::EINVAL as u32),
            TooManyFids => ("Too many open files", libc::EMFILE as u32),
            DupTag => ("invalid tag: already in use by a request in flight", libc::EINVAL as u32),
            MsizeTooSmall => ("invalid msize: 9agents needs at least 4096", libc::EINVAL as u32),
            Malformed => ("protocol botch", libc::EPROTO as u32),
            UnknownType => ("Function not implemented", libc::ENOSYS as u32),
            NotRegular => ("invalid read: not a regular file", libc::EINVAL as u32),
            IllegalName => ("invalid zmx session name: 1 to 64 bytes of A-Z a-z 0-9 . _ -", libc::EINVAL as u32),
            NoSession => ("no session resolved for this agent: a move is not permitted", libc::EPERM as u32),
            NoCwd => ("the agent's cwd is unknown: a move is not permitted", libc::EPERM as u32),
            NoResumeForm => ("this harness has no resume form: a move is not permitted", libc::EPERM as u32),
            NothingToResume => {
                ("nothing to resume: the agent has no session id, a move is not permitted", libc::EPERM as u32)
            }
            NameTaken => ("zmx session exists: a live session holds that name", libc::EEXIST as u32),
            MoveBusy => ("a move of this agent is already in progress: Device or resource busy", libc::EBUSY as u32),
            MoveNotGone => ("i/o error: the agent did not exit after SIGTERM and SIGKILL", libc::EIO as u32),
            MoveSpawn => ("i/o error: zmx could not be started", libc::EIO as u32),
            MoveNoPost => ("i/o error: zmx did not post the session before the deadline", libc::EIO as u32),
            ChatTooLong => (
                "chat has more messages than --max-chat-messages allows: No buffer space available",
                libc::ENOBUFS as u32,
            ),
            ChatsBusy => {
                ("every --max-chats index is busy indexing: Resource temporarily unavailable", libc::EAGAIN as u32)
            }
            ChatLineTooLong => (
                "chat has a record longer than 256 MiB, past which it is not indexed: File too large",
                libc::EFBIG as u32,
            ),
            TooManyOpenFiles => ("Too many open files in system", libc::ENFILE as u32),
            DirTooLarge => (
                "directory too large to list whole: raise --max-dir-entries; No buffer space available",
                libc::ENOBUFS as u32,
            ),
            Io => ("i/o error", libc::EIO as u32),
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
        DirReadTooSmall,
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
        Io,
    ];

    /// The phrases that retarget an errno when a client maps text by
    /// substring (9ns, 9pfuse): none may appear in a text of another errno.
    #[test]
    fn no_text_carries_a_phrase_of_another_errno() {
        for e in ALL {
            let (text, errno) = e.entry();
            let lower = text.to_lowercase();
            if errno != libc::EACCES as u32 {
                assert!(!lower.contains("permission") && !lower.contains("denied"), "{text}");
            }
            if errno != libc::EBADF as u32 {
                assert!(!lower.contains("fid"), "{text}");
            }
            if errno != libc::EROFS as u32 {
                assert!(!lower.contains("read-only") && !lower.contains("read only"), "{text}");
            }
        }
    }

    #[test]
    fn the_read_only_refusal_says_not_permitted_and_is_eperm() {
        assert_eq!(ReadOnly.text(), "9agents serves a view, not a store: writing is not permitted");
        assert_eq!(ReadOnly.errno(), libc::EPERM as u32);
    }

    #[test]
    fn every_text_is_distinct() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.text(), b.text());
            }
        }
    }
}
