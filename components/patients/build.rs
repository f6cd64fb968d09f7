//! The patients component starts with 2 MiB of linear memory, not the 1 MiB of every other
//! (`.cargo/config.toml`): libphonenumber's metadata (the `phonenumber` crate, for `phone_e164`)
//! is 1.4 MiB of data segment. The later `--initial-memory` wins.

fn main() {
    if std::env::var("TARGET").is_ok_and(|t| t.starts_with("wasm32")) {
        println!("cargo:rustc-link-arg=--initial-memory=2097152");
    }
}
