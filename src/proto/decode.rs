//! Decoding: a whole message's bytes to a borrowed message.

use super::{Dialect, Rmsg, Stat, Tmsg};

/// Why a frame's size field is refused: the connection is closed, since
/// after a bad size nothing that follows can be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// size[4] under the 7 bytes of a header.
    TooSmall(u32),
    /// size[4] over the negotiated msize.
    TooLarge(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The message ends before a field it declares.
    Truncated,
    /// Bytes left over after the last field.
    Trailing,
    /// A type number that is not a message of this dialect.
    UnknownType(u8),
    /// An R-message where a T-message was expected, or the reverse.
    WrongDirection(u8),
    /// A Twalk with more than MAXWELEM names, or an Rwalk with more qids.
    TooManyNames(u16),
}

/// A message that is framed but cannot be decoded. `tag` is known whenever
/// the header itself was whole, so the server can answer Rerror on that tag
/// rather than drop the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    pub tag: Option<u16>,
}

/// The length of the message at the front of `buf`: `Ok(None)` while fewer
/// than 4 bytes are there, `Ok(Some(size))` once size[4] is readable and
/// acceptable (the whole message may not have arrived yet), `Err` when the
/// size is under the header's 7 bytes or over `msize`.
pub fn frame_size(buf: &[u8], msize: u32) -> Result<Option<usize>, FrameError> {
    let _ = (buf, msize);
    todo!()
}

/// Decode one whole request. `buf` is exactly one message, size field
/// included (its size field is not re-checked against `buf.len()` beyond
/// consistency: a mismatch is `Truncated` or `Trailing`).
pub fn decode_t(buf: &[u8], dialect: Dialect) -> Result<(u16, Tmsg<'_>), DecodeError> {
    let _ = (buf, dialect);
    todo!()
}

/// Decode one whole reply, the mirror of `decode_t`.
pub fn decode_r(buf: &[u8], dialect: Dialect) -> Result<(u16, Rmsg<'_>), DecodeError> {
    let _ = (buf, dialect);
    todo!()
}

/// Decode one stat entry at the front of `buf` (as a directory read returns
/// them, size[2] first), returning it and the bytes it took.
pub fn decode_stat(buf: &[u8], dialect: Dialect) -> Result<(Stat<'_>, usize), DecodeError> {
    let _ = (buf, dialect);
    todo!()
}
