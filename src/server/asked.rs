//! The requests a connection was asked and has not answered, by tag. Every
//! reply passes `answered` (`Conn::reply` and the Rread and Rreaddir
//! encoded in place or whole: the one point a request is answered,
//! synchronous or parked), which in a debug build asserts that its tag
//! was asked and is not answered yet: lib9p's one `respond()` for every
//! request. A flushed request is `forgotten` (its answer is never sent),
//! and a Tversion forgets them all. A release build keeps nothing.

#[derive(Default, Debug)]
pub(crate) struct Asked {
    /// Requests outstanding, by tag: more than one where a client reused a
    /// tag still in flight (each is answered: the second `Duplicate tag`).
    #[cfg(debug_assertions)]
    open: std::collections::HashMap<u16, u32>,
}

impl Asked {
    /// A request arrived on `tag`.
    pub(crate) fn asked(&mut self, _tag: u16) {
        #[cfg(debug_assertions)]
        {
            *self.open.entry(_tag).or_default() += 1;
        }
    }

    /// The request on `tag` is answered now.
    pub(crate) fn answered(&mut self, _tag: u16) {
        #[cfg(debug_assertions)]
        self.close(_tag, "answered");
    }

    /// The request on `tag` was flushed: it is never answered.
    pub(crate) fn forgotten(&mut self, _tag: u16) {
        #[cfg(debug_assertions)]
        self.close(_tag, "forgotten");
    }

    /// A Tversion: everything outstanding is forgotten, but for `_tag`
    /// (the Tversion's own, answered by its Rversion).
    pub(crate) fn restarted(&mut self, _tag: u16) {
        #[cfg(debug_assertions)]
        {
            self.open.clear();
            self.open.insert(_tag, 1);
        }
    }

    #[cfg(debug_assertions)]
    fn close(&mut self, tag: u16, how: &str) {
        match self.open.get_mut(&tag) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.open.remove(&tag);
            }
            None => panic!("tag {tag} {how}, but no request on it is outstanding: a request answered twice"),
        }
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_once_a_tag_reused_in_flight_twice() {
        let mut a = Asked::default();
        a.asked(1);
        a.asked(1);
        a.answered(1);
        a.answered(1);
        a.asked(2);
        a.forgotten(2);
        a.asked(3);
        a.restarted(0xFFFF);
        a.answered(0xFFFF);
    }

    #[test]
    #[should_panic(expected = "answered twice")]
    fn a_second_answer_fails_loudly() {
        let mut a = Asked::default();
        a.asked(7);
        a.answered(7);
        a.answered(7);
    }

    #[test]
    #[should_panic(expected = "answered twice")]
    fn an_answer_to_a_flushed_request_fails_loudly() {
        let mut a = Asked::default();
        a.asked(7);
        a.forgotten(7);
        a.answered(7);
    }
}
