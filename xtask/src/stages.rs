//! The stages of a long command, timed: `cargo xtask test` prints, at its end (passed or failed),
//! each stage it ran with its wall time and the total, so where the test command's time goes is
//! measured on every run rather than guessed (issue 89).

use std::time::{Duration, Instant};

use crate::project::Result;

/// The stages run so far, in order, each with its time and whether it passed.
pub struct Stages {
    started: Instant,
    rows: Vec<(String, Duration, bool)>,
}

impl Stages {
    pub fn new() -> Stages {
        Stages {
            started: Instant::now(),
            rows: Vec::new(),
        }
    }

    /// Runs `stage`, recording its time under `name`.
    pub fn run<T>(&mut self, name: &str, stage: impl FnOnce() -> Result<T>) -> Result<T> {
        let started = Instant::now();
        let result = stage();
        self.rows
            .push((name.to_string(), started.elapsed(), result.is_ok()));
        result
    }

    /// The table: one line a stage, `failed` on the one that stopped the run, and the total.
    pub fn table(&self) -> String {
        let width = self.rows.iter().map(|(n, ..)| n.len()).max().unwrap_or(5);
        let mut out = String::from("xtask: where the time went, stage by stage:\n");
        for (name, took, ok) in &self.rows {
            let mark = if *ok { "" } else { "  failed" };
            out.push_str(&format!("  {name:<width$}  {}{mark}\n", clock(*took)));
        }
        let total = clock(self.started.elapsed());
        out.push_str(&format!("  {:<width$}  {total}\n", "total"));
        out
    }
}

/// `m:ss`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_each_stage_and_marks_the_failed_one() {
        let mut stages = Stages::new();
        stages.run("unit tests", || Ok(())).unwrap();
        assert!(
            stages
                .run("black-box", || Err::<(), _>("boom".into()))
                .is_err()
        );
        let table = stages.table();
        assert!(table.contains("  unit tests  0:00\n"), "{table}");
        assert!(table.contains("  black-box   0:00  failed\n"), "{table}");
        assert!(table.contains("  total       0:0"), "{table}");
        assert_eq!(clock(Duration::from_secs(754)), "12:34");
    }
}
