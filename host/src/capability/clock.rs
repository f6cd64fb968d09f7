//! The wall clock components read (`wasi:clocks/wall-clock`): the system's, or, for tests only,
//! the system's moved by `RECETA_CLOCK_OFFSET_SECONDS` (a signed number of seconds, read once at
//! start). Time-dependent rules (a prescription's validity, the interval between fills) are then
//! tested by restarting the host later in time instead of sleeping. Real Spin has no such knob:
//! the tests that use it are skipped there (xtask `SKIPPED_ON_SPIN`). Monotonic time is untouched.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use wasmtime_wasi::HostWallClock;

/// The variable that moves the components' wall clock.
pub const OFFSET_VAR: &str = "RECETA_CLOCK_OFFSET_SECONDS";

/// The offset in seconds, if one is set (and not 0).
pub fn offset() -> Option<i64> {
    static OFFSET: OnceLock<Option<i64>> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let value = std::env::var(OFFSET_VAR).ok()?;
        match value.trim().parse::<i64>() {
            Ok(0) => None,
            Ok(secs) => {
                eprintln!(
                    "receta: {OFFSET_VAR}={secs}: components see the wall clock moved by {secs} s \
                     (for tests only)"
                );
                Some(secs)
            }
            Err(_) => {
                eprintln!("receta: ignoring {OFFSET_VAR}={value:?}: not a whole number of seconds");
                None
            }
        }
    })
}

/// The system clock moved by a fixed number of seconds.
pub struct ShiftedWallClock(pub i64);

impl HostWallClock for ShiftedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let shift = Duration::from_secs(self.0.unsigned_abs());
        if self.0 >= 0 {
            now + shift
        } else {
            now.saturating_sub(shift)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_the_clock_both_ways() {
        let real = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap();
        let later = ShiftedWallClock(86_400).now();
        let earlier = ShiftedWallClock(-86_400).now();
        assert!(later >= real + Duration::from_secs(86_399));
        assert!(earlier <= real - Duration::from_secs(86_399));
    }
}
