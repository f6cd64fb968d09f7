//! `receta-bench`: the native helpers `cargo xtask bench` drives (`xtask/src/bench.rs`). Each prints
//! its result on stdout as `key=value` pairs, one line, for the xtask to parse.
//!
//! - `hyper-hello --listen ADDR`: the HTTP stack's own limit, a hyper "hello" server built like the
//!   host's (tokio multi-thread, hyper HTTP/1.1 keep-alive, TCP_NODELAY, a task per connection);
//!   prints `Serving http://ADDR` when ready.
//! - `sqlite-tps --db FILE --seconds S`: durable SQLite transactions per second with the host's
//!   pragmas, one small INSERT per `BEGIN IMMEDIATE … COMMIT`.
//! - `pdf-native --renders N`: rxpdf's sample prescription rendered natively, median of N.
//! - `seed-catalog …` / `seed-rx …` / `seed-pharmacy …`: realistic data created through the API
//!   (see `seed.rs`).
//! - `explain --db FILE`: `EXPLAIN QUERY PLAN` of the list and search statements.
//! - `efirma …`: the prescriber's e.firma activations and plain creates, timed (`efirma.rs`).

mod args;
mod client;
mod efirma;
mod explain;
mod hello;
mod pdf;
mod seed;
mod sqlite_tps;

use std::process::ExitCode;

use anyhow::bail;

use args::Flags;

const USAGE: &str = "usage: receta-bench <hyper-hello --listen ADDR | sqlite-tps --db FILE --seconds S | \
pdf-native --renders N | seed-catalog … | seed-rx … | seed-pharmacy … | explain --db FILE | efirma …>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = Flags::parse(&args[1..]).and_then(|flags| match command.as_str() {
        "hyper-hello" => hello::run(&flags),
        "sqlite-tps" => sqlite_tps::run(&flags),
        "pdf-native" => pdf::run(&flags),
        "seed-catalog" => seed::catalog(&flags),
        "seed-rx" => seed::prescriptions(&flags),
        "seed-pharmacy" => seed::pharmacy(&flags),
        "explain" => explain::run(&flags),
        "efirma" => efirma::run(&flags),
        other => bail!("unknown command {other:?}\n{USAGE}"),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("receta-bench {command}: {e:#}");
            ExitCode::FAILURE
        }
    }
}
