//! Transcript bytes read in place: a read-only mapping of part of a file,
//! its pages brought in by a kernel worker (the ring's madvise,
//! `MADV_POPULATE_READ`) so the loop never waits on the disk, and its bytes
//! read only inside `Mapped::read`, under the one guard that lets the file
//! shrink beneath the mapping without killing the daemon.
//!
//! Why a mapping and not a read: a read copies every byte once, on a
//! kernel worker's CPU, into a buffer the loop then indexes; a mapping of
//! the page cache costs no copy, and the indexer reads the cached pages
//! themselves. Interleaved runs put a first index of the 228 MB rollout at
//! 102 ms against 120 ms with reads, and a whole home's usage at 0.68–0.82x
//! of the in-process indexer against 0.54–0.69x (bench/README, "Mapped
//! windows and deferred task work", and home.rs).
//!
//! A file mapping read past the file's end raises SIGBUS. Transcripts only
//! grow, but a user may truncate one while the loop indexes it. While the
//! loop reads a mapping, its thread records that mapping's range; a SIGBUS
//! at an address inside it has an anonymous page of zeros mapped over the
//! faulting page, so the read goes on (and sees zeros), and `read` reports
//! the mapping `Torn`: its reader starts over from the file as it is now.
//! A SIGBUS anywhere else is not ours: the handler puts back the default
//! action and raises it again, so the process dies as it would have
//! without the guard (a fault's and a `kill -BUS`'s alike).
//!
//! The mapped bytes are handed out as `&[u8]`, though the file's writer may
//! change them meanwhile (an in-place rewrite of omp's title line): the
//! indexer treats its input as untrusted bytes whatever they are, and its
//! reader checks the file's ends afterwards, as it does after a read.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Part of a file, mapped read-only: `len` bytes from `offset`.
pub(crate) struct Mapped {
    map: memmap2::Mmap,
    offset: u64,
}

/// The file shrank under a mapping while it was read: what the read saw
/// past the new end was zeros, not the file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Torn;

thread_local! {
    /// The range `read` is reading on this thread, or (0, 0). Atomics, and
    /// fences around the read, because the signal handler writes them
    /// between two instructions of the thread's own code.
    static READING: [AtomicUsize; 2] = const { [AtomicUsize::new(0), AtomicUsize::new(0)] };
    /// A fault inside `READING` was mended with zeros.
    static TORN: AtomicBool = const { AtomicBool::new(false) };
}

static GUARD: Once = Once::new();
static PAGE: AtomicUsize = AtomicUsize::new(4096);

impl Mapped {
    /// Map `len` (> 0) bytes of `fd` from `offset`. The pages are not
    /// brought in: that is the ring's `Sub::Populate`.
    pub(crate) fn new(fd: RawFd, offset: u64, len: usize) -> io::Result<Mapped> {
        install_guard();
        // SAFETY: a read-only mapping of an fd the caller holds open; its
        // bytes are only read, through `read`, under the guard above.
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map(fd)? };
        Ok(Mapped { map, offset })
    }

    /// Where in the file it starts.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The whole pages it covers, for madvise: (page-aligned address, length).
    pub(crate) fn pages(&self) -> (*const u8, usize) {
        let at = self.map.as_ptr() as usize;
        let start = at & !(PAGE.load(Ordering::Relaxed) - 1);
        (start as *const u8, self.map.len() + (at - start))
    }

    /// Run `f` on the mapped bytes, under the guard: `Torn` when the file
    /// shrank beneath them meanwhile (what `f` computed is dropped).
    pub(crate) fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R, Torn> {
        struct Reading;
        impl Drop for Reading {
            fn drop(&mut self) {
                compiler_fence(Ordering::SeqCst);
                reading((0, 0));
            }
        }
        let at = self.map.as_ptr() as usize;
        TORN.with(|t| t.store(false, Ordering::Relaxed));
        reading((at, at + self.map.len()));
        compiler_fence(Ordering::SeqCst);
        let guard = Reading;
        let out = f(&self.map);
        drop(guard);
        match TORN.with(|t| t.swap(false, Ordering::Relaxed)) {
            true => Err(Torn),
            false => Ok(out),
        }
    }
}

fn reading((start, end): (usize, usize)) {
    READING.with(|r| {
        r[0].store(start, Ordering::Relaxed);
        r[1].store(end, Ordering::Relaxed);
    });
}

/// Install the SIGBUS handler, once per process.
fn install_guard() {
    GUARD.call_once(|| {
        // SAFETY: sysconf and sigaction with a zeroed, filled-in sigaction
        // whose handler only reads thread-locals and makes async-signal-safe
        // calls (mmap, sigaction).
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) != 0 {
                log::warn!("mapped: no SIGBUS guard: {}", io::Error::last_os_error());
            }
        }
    });
}

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (start, end) = READING.with(|r| (r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed)));
    if addr >= start && addr < end {
        let page = addr & !(PAGE.load(Ordering::Relaxed) - 1);
        // SAFETY: the page lies inside a mapping this thread is reading;
        // replacing it with zeros is what makes the faulting read go on.
        let p = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                PAGE.load(Ordering::Relaxed),
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            TORN.with(|t| t.store(true, Ordering::Relaxed));
            return;
        }
    }
    // Not ours (or not mendable): the default action, raised again (it is
    // blocked while this handler runs, so it lands on return).
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask; sigaction
    // and raise are async-signal-safe.
    unsafe {
        let sa: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        libc::raise(libc::SIGBUS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// A scratch file holding `bytes`, in a directory of the test's own
    /// (`name`), which the test removes.
    fn file(name: &str, bytes: &[u8]) -> (std::path::PathBuf, std::fs::File) {
        let dir = std::env::temp_dir().join(format!("9agents-mapped-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("transcript");
        std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        (dir, f)
    }

    #[test]
    fn a_mapping_reads_the_bytes_from_its_offset() {
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let (dir, f) = file("offset", &bytes);
        let m = Mapped::new(f.as_raw_fd(), 5000, 12_000).unwrap();
        assert_eq!((m.offset(), m.len()), (5000, 12_000));
        assert_eq!(m.read(|b| b.to_vec()), Ok(bytes[5000..17_000].to_vec()));
        let (addr, len) = m.pages();
        assert_eq!(addr as usize % PAGE.load(Ordering::Relaxed), 0);
        assert!(len >= 12_000 && addr as usize + len == m.map.as_ptr() as usize + 12_000);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_cut_short_under_a_read_is_torn_and_the_process_lives() {
        let page = PAGE.load(Ordering::Relaxed).max(4096);
        let bytes = vec![b'x'; page * 4];
        let (dir, f) = file("cut", &bytes);
        let m = Mapped::new(f.as_raw_fd(), 0, bytes.len()).unwrap();
        std::fs::OpenOptions::new().write(true).open(dir.join("transcript")).unwrap().set_len(page as u64).unwrap();
        let seen = m.read(|b| b.iter().filter(|&&c| c == b'x').count());
        assert_eq!(seen, Err(Torn));
        // The guard is off again, and the next read of what is still
        // there is whole.
        assert_eq!(READING.with(|r| r[1].load(Ordering::Relaxed)), 0);
        assert_eq!(m.read(|b| b[..page].iter().all(|&c| c == b'x')), Ok(true));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
