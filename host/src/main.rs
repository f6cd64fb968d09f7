//! `receta`: runs a Spin application (`spin.toml`, manifest v2) on a small Wasmtime host with
//! Spin's semantics. See `receta up --help`.

mod app;
mod bindings;
mod cli;
mod compose;
mod cron;
mod engine;
mod manifest;
mod migrations;
mod outbound;
mod router;
mod server;
mod sqlite;
mod state;
mod variables;
mod verify;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("receta: {e:#}");
            return ExitCode::from(2);
        }
    };
    let options = match command {
        cli::Command::Help => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        cli::Command::Up(options) => options,
        cli::Command::Verify { text, keys } => {
            return match verify::run(&text, &keys) {
                Ok(v) => {
                    println!(
                        "VALID: prescription {} is sealed by this service (key {}, {}).",
                        v.signature, v.kid, v.status
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("INVALID: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("receta")
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("receta: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(up(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("receta: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn up(options: cli::UpOptions) -> Result<()> {
    let started = std::time::Instant::now();
    // Loading compiles components: keep it off the async workers.
    let load_options = options.clone();
    let app = tokio::task::spawn_blocking(move || app::App::load(&load_options))
        .await
        .context("the loader panicked")??;
    let app = Arc::new(app);
    let stop_ticker = Arc::new(AtomicBool::new(false));
    engine::start_epoch_ticker(app.engine.clone(), stop_ticker.clone())?;

    let (listener, local) = server::bind(options.listen).await?;
    announce(&app, local, started).context("cannot write to stdout")?;

    let result = server::serve(app, listener, local, shutdown_signal()).await;
    stop_ticker.store(true, Ordering::Relaxed);
    result
}

/// `spin up`'s banner, printed once everything is ready (tests wait for the `Serving` line).
fn announce(
    app: &app::App,
    local: std::net::SocketAddr,
    started: std::time::Instant,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "Serving http://{local}")?;
    writeln!(out, "Available Routes:")?;
    for route in app.router.routes() {
        let (path, wildcard) = match route.based.strip_suffix("/...") {
            Some(prefix) => (prefix, " (wildcard)"),
            None => (route.based.as_str(), ""),
        };
        let path = if path.is_empty() { "/" } else { path };
        writeln!(out, "  {}: http://{local}{path}{wildcard}", route.component)?;
    }
    out.flush()?;
    let application = &app.manifest.application;
    eprintln!(
        "receta: {} {} ready in {} ms: {} (state dir {})",
        application.name,
        application.version.as_deref().unwrap_or(""),
        started.elapsed().as_millis(),
        app.manifest.path.display(),
        app.state_dir.display()
    );
    if let Some(description) = &application.description {
        eprintln!("receta: {description}");
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            eprintln!("receta: cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
