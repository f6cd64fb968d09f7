//! `receta`: runs a Spin application (`spin.toml`, manifest v2) on a small Wasmtime host with
//! Spin's semantics. See `receta up --help`; the host itself is the library (`lib.rs`).

/// See `mimalloc` in Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::watch;

use receta_host::runtime::engine;
use receta_host::trigger::{Inflight, cron, http};
use receta_host::{app, cli};

/// How long shutdown waits for in-flight requests beyond their own time limit.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

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
        cli::Command::Up(options) => *options,
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
    engine::start_epoch_ticker(app.runner.engine.clone(), stop_ticker.clone())?;

    let (listener, local) = http::bind(options.listen).await?;
    announce(&app, local, started).context("cannot write to stdout")?;

    let inflight = Arc::new(Inflight::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    cron::start(&app.cron, &stop_rx, &inflight);
    http::serve(
        app.http.clone(),
        listener,
        local,
        shutdown_signal(),
        &stop_rx,
        &inflight,
    )
    .await;

    eprintln!("receta: shutting down: finishing in-flight requests");
    let _ = stop_tx.send(true);
    let bound = app.runner.timeout + SHUTDOWN_GRACE;
    if tokio::time::timeout(bound, inflight.wait_idle())
        .await
        .is_err()
    {
        eprintln!(
            "receta: some requests were still running after {} ms; exiting anyway",
            bound.as_millis()
        );
    }
    stop_ticker.store(true, Ordering::Relaxed);
    Ok(())
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
    for route in app.http.router.routes() {
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
