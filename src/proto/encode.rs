//! Encoding: a message appended to a caller's buffer.

use super::{Dialect, Rmsg, Stat, Tmsg};

/// Append one request, size field included.
pub fn encode_t(out: &mut Vec<u8>, tag: u16, msg: &Tmsg<'_>, dialect: Dialect) {
    let _ = (out, tag, msg, dialect);
    todo!()
}

/// Append one reply, size field included.
pub fn encode_r(out: &mut Vec<u8>, tag: u16, msg: &Rmsg<'_>, dialect: Dialect) {
    let _ = (out, tag, msg, dialect);
    todo!()
}

/// Append one stat entry as a directory read carries it (size[2] first).
pub fn encode_stat(out: &mut Vec<u8>, stat: &Stat<'_>, dialect: Dialect) {
    let _ = (out, stat, dialect);
    todo!()
}

/// The bytes `encode_stat` appends for `stat`.
pub fn stat_size(stat: &Stat<'_>, dialect: Dialect) -> usize {
    let _ = (stat, dialect);
    todo!()
}

/// Begin an Rread whose data the caller appends directly (so file bytes
/// are read straight into the reply): writes size[4] type[1] tag[2]
/// count[4] with placeholders and returns the message's start offset.
pub fn rread_begin(out: &mut Vec<u8>, tag: u16) -> usize {
    let _ = (out, tag);
    todo!()
}

/// Finish the Rread begun at `start`: patches size and count from what
/// was appended since.
pub fn rread_finish(out: &mut [u8], start: usize) {
    let _ = (out, start);
    todo!()
}
