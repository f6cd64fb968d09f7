//! `hello`: the trivial HTTP component of `cargo xtask bench`. Every request is answered
//! `200 hello` (text/plain). It imports nothing from Spin (no SQLite, no variables), only what
//! `wasi:http/proxy` and Rust's standard library need, so the same `.wasm` runs under the
//! project's host (`tests/fixtures/bench/spin.toml`) and under `wasmtime serve -S cli`:
//! the difference between the two is the hosts' own cost.

use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

#[http_component]
fn handle(_req: Request) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body("hello")
        .build()
}
