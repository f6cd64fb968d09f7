//! The app's measured rows as data: a scenario is a row's name, what `wrk` sends, and what its
//! rate is compared with. `measure` runs a list of them in order, one loop; a later scenario may
//! compare itself with an earlier one by its key (the same list at 1,000 and at 50,000).

use std::collections::HashMap;
use std::path::Path;

use super::harness::{Measure, load_rows};
use super::procs::Server;
use super::report::{Row, Target};
use super::scripts::{self, Req};
use super::settings::Settings;
use super::wrk;
use crate::project::Result;

/// What `wrk` sends.
pub enum Load {
    /// The same GET every time, with these headers.
    Path(&'static str, &'static [(&'static str, &'static str)]),
    /// Requests rotated by a generated script (different medics, patients, signatures).
    Rotated(Vec<Req>),
}

/// What a row's rate is compared with (a ratio column, and a target when `want` is set).
#[derive(Clone, Copy)]
pub enum Compare {
    /// The `hello` component through `receta`, same connections.
    Hello { want: Option<f64> },
    /// Raw durable SQLite transactions per second.
    RawSqlite { want: Option<f64> },
    /// The Django peer's row of key `of` (`None`: the scenario's own), same connections (the "×
    /// peer" column); a target of at least `want` times it at `conns` connections when given.
    Peer {
        of: Option<&'static str>,
        want: Option<f64>,
        conns: u32,
    },
    /// An earlier scenario of this run, by key, same connections.
    Row {
        key: &'static str,
        label: &'static str,
        want: Option<f64>,
    },
}

/// One measured row (one line per connection count in the table).
pub struct Scenario {
    /// The wrk script's name, what later rows call this one, and the peer's row it compares with.
    pub key: &'static str,
    pub name: String,
    pub load: Load,
    pub compare: Vec<Compare>,
}

impl Scenario {
    pub fn new(key: &'static str, name: impl Into<String>, load: Load) -> Scenario {
        Scenario {
            key,
            name: name.into(),
            load,
            compare: Vec::new(),
        }
    }

    /// Compared with `hello`; a target of at least `want` of it when given.
    pub fn vs_hello(self, want: Option<f64>) -> Scenario {
        self.compare(Compare::Hello { want })
    }

    /// Compared with raw SQLite; a target of at least `want` of it when given.
    pub fn vs_sqlite(self, want: Option<f64>) -> Scenario {
        self.compare(Compare::RawSqlite { want })
    }

    /// Compared with the earlier scenario `key`, as `label` ("of the same at 1,000").
    pub fn vs_row(self, key: &'static str, label: &'static str, want: Option<f64>) -> Scenario {
        self.compare(Compare::Row { key, label, want })
    }

    /// Compared with the Django peer's row of the same key ("× peer"); a target of at least
    /// `want` times it at 2 connections when given.
    pub fn vs_peer(self, want: Option<f64>) -> Scenario {
        self.compare(Compare::Peer {
            of: None,
            want,
            conns: PEER_TARGET_CONNS,
        })
    }

    /// Compared with the Django peer's row `of` ("× peer"); a target of at least `want` times it
    /// at `conns` connections when given.
    pub fn vs_peer_row(self, of: &'static str, want: Option<f64>, conns: u32) -> Scenario {
        self.compare(Compare::Peer {
            of: Some(of),
            want,
            conns,
        })
    }

    fn compare(mut self, compare: Compare) -> Scenario {
        self.compare.push(compare);
        self
    }
}

/// What the comparisons need from outside the app's rows.
pub struct Baselines<'a> {
    pub hello: &'a [(u32, f64)],
    pub sqlite_tps: f64,
    /// The Django peer's rates, by the key of the app scenario they compare with.
    pub peer: &'a HashMap<&'static str, Vec<(u32, f64)>>,
    /// The peer's summed RSS after its rows, MiB.
    pub peer_rss_mib: Option<f64>,
}

/// The connection count at which the × peer targets hold (the "at 2 connections").
const PEER_TARGET_CONNS: u32 = 2;

/// Rates measured so far, by scenario key and connection count.
#[derive(Default)]
pub struct Measured(HashMap<&'static str, Vec<(u32, f64)>>);

impl Measured {
    /// The rows already measured in `other`, to compare later rows with.
    pub fn with_rows_of(other: &Measured) -> Measured {
        Measured(other.0.clone())
    }

    fn at(&self, key: &str, conns: u32) -> Option<f64> {
        at(self.0.get(key)?, conns)
    }
}

pub fn at(list: &[(u32, f64)], conns: u32) -> Option<f64> {
    list.iter().find(|(c, _)| *c == conns).map(|(_, v)| *v)
}

/// Measures `scenarios` in order against `server`, appending their rows.
pub fn measure(
    settings: &Settings,
    server: &Server,
    scripts_dir: &Path,
    baselines: &Baselines,
    scenarios: Vec<Scenario>,
    measured: &mut Measured,
    rows: &mut Vec<Row>,
) -> Result {
    for s in scenarios.into_iter().filter(|s| settings.measures(s.key)) {
        let (path, headers, script) = match &s.load {
            Load::Path(path, headers) => (*path, *headers, None),
            Load::Rotated(reqs) => (
                "/",
                &[][..],
                Some(scripts::write(scripts_dir, s.key, reqs)?),
            ),
        };
        let result = load_rows(
            settings,
            server,
            &Measure {
                name: &s.name,
                path,
                headers,
                script: script.as_deref(),
            },
            &settings.conns,
            |c, run: &wrk::Run, row: &mut Row| {
                for compare in &s.compare {
                    compare_row(*compare, s.key, c, run, baselines, measured, row);
                }
            },
            rows,
        )?;
        measured.0.insert(s.key, result);
    }
    Ok(())
}

/// Adds one comparison's ratio (and target) to `row`, measured at `c` connections.
fn compare_row(
    compare: Compare,
    key: &str,
    c: u32,
    run: &wrk::Run,
    baselines: &Baselines,
    measured: &Measured,
    row: &mut Row,
) {
    let (base, label, want) = match compare {
        Compare::Peer { of, want, conns } => {
            let peer_key = of.unwrap_or(key);
            let Some(peer) = baselines.peer.get(peer_key).and_then(|p| at(p, c)) else {
                return;
            };
            let ratio = run.rps / peer;
            row.vs_peer = Some(ratio);
            if let Some(want) = want.filter(|_| c == conns) {
                let text = match conns {
                    PEER_TARGET_CONNS => format!("≥ {}× the peer", trim(want)),
                    _ => format!("≥ {}× the peer at {conns} conns", trim(want)),
                };
                row.targets.push(Target {
                    text,
                    met: ratio >= want,
                });
            }
            return;
        }
        Compare::Hello { want } => (
            at(baselines.hello, c),
            "of `hello`".to_string(),
            want.map(|w| (w, format!("≥ {:.0}% of `hello`", w * 100.0))),
        ),
        Compare::RawSqlite { want } => (
            Some(baselines.sqlite_tps),
            "of raw SQLite tx/s".to_string(),
            want.map(|w| (w, format!("≥ {:.0}% of raw SQLite", w * 100.0))),
        ),
        Compare::Row { key, label, want } => (
            measured.at(key, c),
            label.to_string(),
            want.map(|w| (w, format!("≥ {:.0}% {label}", w * 100.0))),
        ),
    };
    let Some(base) = base.filter(|b| *b > 0.0) else {
        return;
    };
    let ratio = run.rps / base;
    row.ratios.push((ratio, label));
    if let Some((want, text)) = want {
        row.targets.push(Target {
            text,
            met: ratio >= want,
        });
    }
}

/// `10` for 10.0, `1.5` for 1.5.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
