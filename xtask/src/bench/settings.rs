//! How long and how often the bench measures (`RECETA_BENCH_*`).

use crate::project::Result;

/// How long and how often.
pub struct Settings {
    pub seconds: u32,
    pub warmup_seconds: u32,
    pub runs: u32,
    pub conns: Vec<u32>,
    pub prescriptions: usize,
    /// `RECETA_BENCH_ONLY` (scenario keys, comma-separated): the scenarios measured, in the app
    /// and libSQL stages (`spin-libsql-rx-detail`, …); empty, all of them.
    pub only: Vec<String>,
}

impl Settings {
    pub fn from_env() -> Result<Settings> {
        let num = |name: &str, default: u64| -> Result<u64> {
            match std::env::var(name) {
                Ok(v) => v
                    .parse()
                    .map_err(|_| format!("{name}: not a number: {v:?}")),
                Err(_) => Ok(default),
            }
        };
        let conns = match std::env::var("RECETA_BENCH_CONNS") {
            Ok(v) => v
                .split(',')
                .map(|c| {
                    c.trim()
                        .parse()
                        .map_err(|_| format!("RECETA_BENCH_CONNS: {v:?}"))
                })
                .collect::<Result<Vec<u32>>>()?,
            Err(_) => vec![2, 8],
        };
        Ok(Settings {
            seconds: num("RECETA_BENCH_SECONDS", 5)? as u32,
            warmup_seconds: 2,
            runs: num("RECETA_BENCH_RUNS", 3)?.max(1) as u32,
            conns,
            prescriptions: num("RECETA_BENCH_PRESCRIPTIONS", 50_000)? as usize,
            only: std::env::var("RECETA_BENCH_ONLY")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(String::from)
                .collect(),
        })
    }

    /// Whether the scenario `key` is measured (`RECETA_BENCH_ONLY`).
    pub fn measures(&self, key: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|k| k == key)
    }
}
