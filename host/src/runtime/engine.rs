//! The Wasmtime engine (pooling allocator, epoch interruption), the linker with every host
//! interface, and the compiled-code cache.
//!
//! Compiling a component takes ~0.5 s or more, so compiled code is cached on disk, keyed by the
//! SHA-256 of what determines the (composed) component (the main component's and dependencies'
//! bytes, their names and the composition version; composing is deterministic, so this stands
//! for the composed bytes and a hit skips composing too) and the engine's compatibility hash,
//! under `$RECETA_CACHE_DIR`, else `$XDG_CACHE_HOME/receta`, else `~/.cache/receta`.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::capability::{keyvalue, sqlite, variables};
use crate::runtime::store::HostState;

/// How often the epoch advances; a running guest yields to the scheduler at every tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Component instances one store may hold: the trigger component and up to 7 dependencies.
pub const COMPONENT_INSTANCES_PER_STORE: u32 = 8;
/// Fiber stacks one request may hold at once: its component's, and, linked lazily, the one of the
/// dependency it is calling (dependencies call no further). With one stack per request, 50
/// concurrent requests that call a dependency ran out of the pool's stacks (a 500 each, "maximum
/// concurrent limit … for fibers reached") while the instance budget still admitted them.
pub const STACKS_PER_STORE: u32 = 2;

/// Limits applied to every instance.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Linear memory per memory, in bytes.
    pub memory_bytes: usize,
    /// Instances alive at once (concurrent requests).
    pub max_instances: u32,
}

/// Converts a `wasmtime::Result` into an `anyhow::Result`, so `.context` applies.
pub trait WasmtimeResultExt<T> {
    /// `anyhow` view of the error.
    fn anyhow(self) -> Result<T>;
}

impl<T> WasmtimeResultExt<T> for wasmtime::Result<T> {
    fn anyhow(self) -> Result<T> {
        self.map_err(anyhow::Error::from)
    }
}

/// Builds the engine: components, async, epoch interruption, pooling allocator.
pub fn new_engine(limits: Limits) -> Result<Engine> {
    let mut pool = PoolingAllocationConfig::new();
    // A request's store holds its component and, linked lazily, each dependency it calls.
    pool.total_component_instances(limits.max_instances * COMPONENT_INSTANCES_PER_STORE)
        // A composed component has several core instances (and tables) per component.
        .total_core_instances(limits.max_instances * 32)
        // A composed component has one memory per dependency.
        .total_memories(limits.max_instances * 8)
        .total_tables(limits.max_instances * 32)
        .total_stacks(limits.max_instances * STACKS_PER_STORE)
        .max_core_instances_per_component(64)
        .max_memories_per_component(16)
        .max_tables_per_component(64)
        .max_memory_size(limits.memory_bytes)
        // Let freed slots keep a little of their memory resident for the next request.
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(1 << 16)
        // Reset only the pages a request dirtied (Linux 6.7+ PAGEMAP_SCAN; elsewhere the
        // default): without it every freed memory slot is `memset` up to `keep_resident` and the
        // rest `madvise`d, which was a third of the CPU time of a trivial request
        // (`cargo xtask bench`: 200 -> 130 us of CPU per request, RSS 53 -> 16 MiB).
        .pagemap_scan(wasmtime::Enabled::Auto);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        // WASIp3 (`wasi:http/handler@0.3.0-rc-2026-03-15`, as Spin 4.0.2 serves it).
        .wasm_component_model_async(true)
        .epoch_interruption(true)
        .parallel_compilation(true)
        .cranelift_opt_level(wasmtime::OptLevel::Speed)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    // `perf` names guest functions from /tmp/perf-<pid>.map (host/README.md, `RECETA_PERF_MAP`).
    if std::env::var_os("RECETA_PERF_MAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config)
        .anyhow()
        .context("cannot create the Wasmtime engine (pooling allocator: is there enough virtual address space?)")
}

/// Starts the thread that advances the engine's epoch every [`EPOCH_TICK`] until `stop` is set.
pub fn start_epoch_ticker(engine: Engine, stop: Arc<AtomicBool>) -> Result<()> {
    std::thread::Builder::new()
        .name("receta-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
        .context("cannot start the epoch thread")?;
    Ok(())
}

/// The linker with WASI 0.2 and 0.3 (`wasi:cli` etc.), `wasi:http` 0.2 and 0.3, Spin SQLite, WASI
/// key-value and Spin variables.
pub fn new_linker(engine: &Engine) -> Result<Linker<HostState>> {
    let mut linker: Linker<HostState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .anyhow()
        .context("cannot add WASI to the linker")?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
        .anyhow()
        .context("cannot add wasi:http to the linker")?;
    wasmtime_wasi::p3::add_to_linker(&mut linker)
        .anyhow()
        .context("cannot add WASI 0.3 to the linker")?;
    wasmtime_wasi_http::p3::add_to_linker(&mut linker)
        .anyhow()
        .context("cannot add wasi:http 0.3 to the linker")?;
    sqlite::add_to_linker(&mut linker, |state| &mut state.sqlite)?;
    keyvalue::add_to_linker(&mut linker, |state| &mut state.key_value)?;
    variables::add_to_linker(&mut linker, |state| &mut state.variables)?;
    Ok(linker)
}

/// Where compiled components are cached.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("RECETA_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("receta"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|home| PathBuf::from(home).join(".cache").join("receta"))
}

/// How a component was obtained, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Loaded from the compiled-code cache.
    Cached,
    /// Compiled now (and stored in the cache when there is one).
    Compiled,
}

/// Loads a component's compiled code from the cache, keyed by `identity` (the bytes that fully
/// determine the component, see `compose::Sources::identity`), or else builds it with
/// `produce` (which composes), compiles it and stores it.
pub fn load_component(
    engine: &Engine,
    id: &str,
    identity: &[u8; 32],
    produce: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<(Component, Provenance, Duration)> {
    let started = Instant::now();
    let Some(dir) = cache_dir() else {
        let bytes = produce()?;
        let component = Component::new(engine, &bytes)
            .anyhow()
            .with_context(|| format!("cannot compile component {id:?}"));
        drop(bytes);
        release_freed_memory();
        return Ok((component?, Provenance::Compiled, started.elapsed()));
    };
    let path = dir
        .join(cache_key(engine, identity))
        .with_extension("cwasm");
    if path.is_file() {
        match map_cached(engine, &path) {
            Ok(component) => {
                mark_used(&path);
                return Ok((component, Provenance::Cached, started.elapsed()));
            }
            Err(e) => eprintln!(
                "receta: ignoring unusable cache entry {}: {e:#}",
                path.display()
            ),
        }
    }
    let bytes = produce()?;
    let compiled = engine
        .precompile_component(&bytes)
        .anyhow()
        .with_context(|| format!("cannot compile component {id:?}"))?;
    drop(bytes);
    let component = keep_compiled(engine, id, &path, &dir, compiled);
    release_freed_memory();
    Ok((component?, Provenance::Compiled, started.elapsed()))
}

/// Stores `compiled` in the cache and maps it from there; else (the cache cannot be written or
/// the entry mapped) loads it from the bytes.
fn keep_compiled(
    engine: &Engine,
    id: &str,
    path: &Path,
    dir: &Path,
    compiled: Vec<u8>,
) -> Result<Component> {
    match store_atomically(path, &compiled) {
        Ok(()) => {
            prune(dir, CACHE_MAX_BYTES);
            // Mapped from the file it was just stored in, the code is file pages the kernel may
            // drop and read again, instead of ~40 MiB of the heap.
            match map_cached(engine, path) {
                Ok(component) => return Ok(component),
                Err(e) => eprintln!(
                    "receta: cannot map the cache entry just stored {}: {e:#}",
                    path.display()
                ),
            }
        }
        Err(e) => eprintln!(
            "receta: cannot write the compiled-code cache {}: {e:#}",
            path.display()
        ),
    }
    // SAFETY: `compiled` was produced just now by `precompile_component` of this very engine.
    unsafe { Component::deserialize(engine, &compiled) }
        .anyhow()
        .with_context(|| format!("cannot load compiled component {id:?}"))
}

/// Hands the memory a compilation freed back to the OS: mimalloc keeps a thread's freed pages
/// until that thread allocates again, and the compiler's threads (Rayon's, this one) then sit idle
/// for the process's life. Measured: RssAnon after a start that compiled the app 104 MiB, after a
/// start from the cache 31 MiB.
fn release_freed_memory() {
    fn collect() {
        // SAFETY: `mi_collect` has no preconditions; it only frees pages that hold no live block.
        unsafe { libmimalloc_sys::mi_collect(true) }
    }
    rayon::broadcast(|_| collect());
    collect();
}

/// Maps a cache entry's compiled code from its file.
fn map_cached(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: a cache entry is written only by `store_atomically`, with the bytes of
    // `Engine::precompile_component` of an engine with the same compatibility hash (it is part of
    // the file name), and is only ever replaced atomically by rename; Wasmtime also checks the
    // header on load.
    unsafe { Component::deserialize_file(engine, path) }
}

fn cache_key(engine: &Engine, identity: &[u8; 32]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let hex: String = identity.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}", hasher.finish())
}

/// Size above which the least recently used cache entries are deleted.
const CACHE_MAX_BYTES: u64 = 1 << 30;

/// Records a cache hit in the entry's modification time (the LRU order of [`prune`]).
fn mark_used(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Deletes the least recently used `.cwasm` entries until the cache holds at most `max_bytes`.
/// Best effort: another process may be reading an entry (an open or mapped file survives its
/// deletion), or deleting the same ones.
fn prune(dir: &Path, max_bytes: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0)); // most recently used first
    let mut total = 0u64;
    for (_, len, path) in files {
        total += len;
        if total > max_bytes {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn store_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("cache path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_the_most_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        for (name, age) in [("a", 3), ("b", 2), ("c", 1)] {
            let path = dir.path().join(format!("{name}.cwasm"));
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            file.set_modified(old - Duration::from_secs(age)).unwrap();
        }
        mark_used(&dir.path().join("a.cwasm"));
        std::fs::write(dir.path().join("notes.txt"), [0u8; 1000]).unwrap();
        prune(dir.path(), 250);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["a.cwasm", "c.cwasm", "notes.txt"]);
    }
}
