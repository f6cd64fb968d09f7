//! When a failed delivery is tried again: Standard Webhooks' retry schedule, with jitter.

use std::time::Duration;

/// The wait after the 1st, 2nd, … 9th failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h,
/// 24 h. The 10th attempt is the last: when it fails, the delivery is dead.
pub const SCHEDULE_SECS: [u64; 9] = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400];
/// Attempts in all, the first included.
pub const MAX_ATTEMPTS: u32 = SCHEDULE_SECS.len() as u32 + 1;
/// Jitter: each wait is stretched or shrunk by up to this fraction, so that deliveries that failed
/// together (a receiver down) do not all come back at the same instant.
pub const JITTER: f64 = 0.1;

/// The wait after failed attempt `attempt` (1 for the first), or `None` when it was the last.
/// `scale` multiplies the schedule (1 in production; tests shorten it with `outbox_retry_scale`);
/// `unit` is a uniform random number in `[0, 1)`.
pub fn delay_after(attempt: u32, scale: f64, unit: f64) -> Option<Duration> {
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    let base = *SCHEDULE_SECS.get(usize::try_from(attempt.checked_sub(1)?).ok()?)?;
    let jitter = 1.0 + JITTER * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
    Some(Duration::from_secs_f64(base as f64 * scale * jitter))
}

/// `outbox_retry_scale` (the variable's text): a positive finite number, 1 otherwise.
pub fn scale(variable: Option<&str>) -> f64 {
    variable
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x > 0.0)
        .unwrap_or(1.0)
}

/// A uniform random number in `[0, 1)`.
pub fn unit_random() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the host provides randomness");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_standard_webhooks_schedule() {
        let secs = |n| delay_after(n, 1.0, 0.5).unwrap().as_secs_f64().round() as u64;
        assert_eq!(secs(1), 5);
        assert_eq!(secs(2), 300);
        assert_eq!(secs(9), 86_400);
        assert_eq!(delay_after(10, 1.0, 0.5), None);
        assert_eq!(delay_after(0, 1.0, 0.5), None);
        assert_eq!(MAX_ATTEMPTS, 10);
    }

    #[test]
    fn jitter_stays_within_ten_percent_and_scale_applies() {
        let low = delay_after(2, 1.0, 0.0).unwrap().as_secs_f64();
        let high = delay_after(2, 1.0, 0.999_999).unwrap().as_secs_f64();
        assert!((269.9..=270.1).contains(&low), "{low}");
        assert!((329.9..=330.0).contains(&high), "{high}");
        let scaled = delay_after(1, 0.001, 0.5).unwrap();
        assert_eq!(scaled, Duration::from_millis(5));
        assert_eq!(
            (scale(None), scale(Some("-1")), scale(Some("0.01"))),
            (1.0, 1.0, 0.01)
        );
        for _ in 0..100 {
            let u = unit_random();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
