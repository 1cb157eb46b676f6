//! Loud limits that must not be loud without end: refusals logged at a
//! bounded rate. A connect flood past `--max-conns` or a client hammering
//! a cap gets its refusal on the wire every time, but the log gets at most
//! `REFUSALS_PER_SEC_MAX` lines a second and then one line saying how many
//! it left out — a flood must not fill the disk with WARN lines.

use std::time::{Duration, Instant};

/// Refusal lines logged per second at most.
pub(crate) const REFUSALS_PER_SEC_MAX: u32 = 5;
const WINDOW: Duration = Duration::from_secs(1);

pub(crate) struct RateLog {
    window_start: Instant,
    logged: u32,
    suppressed: u64,
}

impl Default for RateLog {
    fn default() -> Self {
        RateLog { window_start: Instant::now(), logged: 0, suppressed: 0 }
    }
}

impl RateLog {
    /// Log a refusal at warn level, unless this second's lines are spent.
    pub(crate) fn warn(&mut self, what: std::fmt::Arguments<'_>) {
        if self.admit(Instant::now()) {
            log::warn!("{what}");
        }
    }

    /// Whether a line may be logged at `now`; starting a new window first
    /// reports what the last one left out.
    fn admit(&mut self, now: Instant) -> bool {
        if now.duration_since(self.window_start) >= WINDOW {
            if self.suppressed > 0 {
                log::warn!("{} more refusal(s) not logged in the last second(s)", self.suppressed);
            }
            self.window_start = now;
            self.logged = 0;
            self.suppressed = 0;
        }
        if self.logged < REFUSALS_PER_SEC_MAX {
            self.logged += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_logs_a_few_lines_a_second_and_counts_the_rest() {
        let mut r = RateLog::default();
        let t0 = r.window_start;
        let admitted = (0..1000).filter(|_| r.admit(t0)).count();
        assert_eq!(admitted, REFUSALS_PER_SEC_MAX as usize);
        assert_eq!(r.suppressed, 1000 - REFUSALS_PER_SEC_MAX as u64);
        assert!(r.admit(t0 + WINDOW), "a new second logs again");
        assert_eq!(r.suppressed, 0);
    }
}
