//! Processes judged: what each process's command line said it is (an
//! agent of which harness, or none), kept so a rescan reads the command
//! lines of the processes it has not seen, not of every process on the
//! machine. With 200 agents among 3,200 processes every rescan read 3,200
//! command lines: a listing of `/active` took 34–96 ms and a parked read
//! of `/active/wait`, which rescans every second, kept the idle daemon at
//! 4–9% of a CPU (issue 21, defect 8).
//!
//! A process is known by its pid and the inode of its `<proc>/<pid>`
//! directory, as the listing of `<proc>` reports it: procfs makes a new
//! inode for a new process, so a reused pid is judged again, and an inode
//! the kernel dropped from its cache and made again costs one more read,
//! never a wrong verdict. (An entry procfs could not make an inode for is
//! listed with inode 1: no verdict stands by that.) One thing keeps a process's identity and changes
//! what it is: an exec (`sh -c 'exec claude'`, an `env node` shebang). So
//! a verdict is trusted for a while, then judged again, the while doubling
//! each time the verdict stands, from `REJUDGE_FIRST` to `REJUDGE_MAX`: a
//! process that became an agent by exec shows within about as long again
//! as it ran before the exec (at most `REJUDGE_MAX`), and a machine of
//! old processes costs a few command lines a second. Each while is
//! stretched by up to a quarter, by pid (`stretch`), so the processes one
//! scan judged together are not all judged again in one later scan.
//!
//! Only verdicts are kept here. An agent's `stat` is still read every scan
//! (whether it became a zombie, its starttime), and its session resolved
//! once (`Agents::resolved`).

use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::harness::Harness;

/// How long a first verdict is trusted.
pub(crate) const REJUDGE_FIRST: Duration = Duration::from_secs(1);
/// The longest a verdict is trusted before the command line is read again.
pub(crate) const REJUDGE_MAX: Duration = Duration::from_secs(64);
const _: () = assert!(REJUDGE_FIRST.as_nanos() <= REJUDGE_MAX.as_nanos(), "the while doubles up to the most");

/// Verdicts a scan may trust: pid → (its `<proc>` entry's inode, the
/// harness its command line named, if any).
pub(crate) type Known = HashMap<u32, (u64, Option<Harness>)>;

struct Verdict {
    ino: u64,
    harness: Option<Harness>,
    /// Trusted until then; then read again.
    due: Instant,
    /// How long it was trusted last: doubled each time it stands.
    every: Duration,
}

/// Every process's last verdict. Bounded by the process table: a pid not
/// in a scan's listing goes (`keep_only`).
#[derive(Default)]
pub(crate) struct Judged {
    map: HashMap<u32, Verdict>,
}

impl Judged {
    /// The verdicts a scan starting at `now` may take without a read.
    pub(crate) fn trusted(&self, now: Instant) -> Rc<Known> {
        Rc::new(self.map.iter().filter(|(_, v)| v.due > now).map(|(&pid, v)| (pid, (v.ino, v.harness))).collect())
    }

    /// The command line of process `pid` (its entry's inode `ino`) was
    /// read at `now`, and named `harness`.
    pub(crate) fn judge(&mut self, pid: u32, ino: u64, harness: Option<Harness>, now: Instant) {
        let every = match self.map.get(&pid) {
            Some(v) if v.ino == ino && v.harness == harness => (v.every * 2).min(REJUDGE_MAX),
            _ => REJUDGE_FIRST,
        };
        self.map.insert(pid, Verdict { ino, harness, due: now + stretch(every, pid), every });
    }

    /// The scan listed only `pids`: the rest are gone.
    pub(crate) fn keep_only(&mut self, pids: &std::collections::HashSet<u32>) {
        self.map.retain(|pid, _| pids.contains(pid));
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// `every`, longer by up to a quarter, the same for a pid each time.
fn stretch(every: Duration, pid: u32) -> Duration {
    every + every / 4 * (pid % 64) / 64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_verdict_is_trusted_for_a_while_that_doubles_while_it_stands() {
        let t0 = Instant::now();
        let mut j = Judged::default();
        // (Pid 64: its whiles are not stretched.)
        j.judge(64, 70, None, t0);
        assert_eq!(j.trusted(t0).get(&64), Some(&(70, None)));
        assert!(j.trusted(t0 + REJUDGE_FIRST).get(&64).is_none(), "due again after the first while");
        let mut at = t0 + REJUDGE_FIRST;
        let mut whiles = Vec::new();
        for _ in 0..10 {
            j.judge(64, 70, None, at);
            let every =
                (1..=REJUDGE_MAX.as_secs()).map(Duration::from_secs).find(|d| j.trusted(at + *d).get(&64).is_none());
            whiles.push(every.unwrap().as_secs());
            at += every.unwrap();
        }
        assert_eq!(whiles, [2, 4, 8, 16, 32, 64, 64, 64, 64, 64]);
    }

    #[test]
    fn a_new_verdict_or_a_new_process_on_the_pid_starts_over() {
        let t0 = Instant::now();
        let mut j = Judged::default();
        j.judge(64, 70, None, t0);
        j.judge(64, 70, None, t0 + S);
        // The shell exec'd into an agent: trusted for the first while only.
        j.judge(64, 70, Some(Harness::Claude), t0 + 3 * S);
        assert_eq!(j.trusted(t0 + 3 * S).get(&64), Some(&(70, Some(Harness::Claude))));
        assert!(j.trusted(t0 + 4 * S).get(&64).is_none());
        // Another process on the pid.
        j.judge(64, 71, Some(Harness::Claude), t0 + 4 * S);
        assert!(j.trusted(t0 + 5 * S).get(&64).is_none());
    }

    #[test]
    fn the_processes_judged_together_are_judged_again_apart() {
        let t0 = Instant::now();
        let mut j = Judged::default();
        for pid in 0..1000 {
            j.judge(pid, 1, None, t0);
            j.judge(pid, 1, None, t0);
        }
        // Their while is 2 s, stretched to at most 2.5 s: at 2.25 s about
        // half are due.
        let trusted = j.trusted(t0 + Duration::from_millis(2250)).len();
        assert!((400..600).contains(&trusted), "{trusted} of 1000 still trusted");
        assert!(j.trusted(t0 + Duration::from_millis(2500)).is_empty());
    }

    #[test]
    fn a_pid_no_longer_listed_is_forgotten() {
        let t0 = Instant::now();
        let mut j = Judged::default();
        for pid in 0..100 {
            j.judge(pid, 1, None, t0);
        }
        j.keep_only(&(0..10).collect());
        assert_eq!(j.len(), 10);
    }
}
