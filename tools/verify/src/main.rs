//! `receta-verify <QR text or URL | receipt.json> --keys <keys.json>`: checks a prescription's
//! seal, or a saved dispense receipt, offline (docs/verification.md). Exit status: 0 valid,
//! 1 not valid, 2 a usage error.

mod seal;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
receta-verify: checks a Receta seal offline

USAGE:
    receta-verify <QR TEXT OR URL | RECEIPT.JSON> --keys <KEYS.JSON>

A prescription's QR text (or its email link), or a dispense receipt (the body of
GET /api/v2/pharmacy/receipts/<digest>/ saved to a file), checked against the keys of
/.well-known/receta-keys.json saved to a file. Prints VALID or INVALID with the reason; exits 1
when it does not verify.
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Check { text: String, keys: PathBuf },
    Help,
}

fn main() -> ExitCode {
    let (text, keys) = match parse(std::env::args().skip(1)) {
        Ok(Command::Check { text, keys }) => (text, keys),
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("receta-verify: {e:#}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match seal::run(&text, &keys) {
        Ok(v) => {
            println!(
                "VALID: {} is sealed by this service (key {}, {}).",
                v.subject, v.kid, v.status
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("INVALID: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `<text> --keys <file>`, the flag before or after the text.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Command> {
    let (mut text, mut keys) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(Command::Help),
            "--keys" => keys = Some(PathBuf::from(args.next().context("--keys needs a file")?)),
            _ if arg.starts_with("--keys=") => keys = Some(PathBuf::from(&arg[7..])),
            _ if text.is_none() => text = Some(arg),
            _ => bail!("unexpected argument {arg:?}"),
        }
    }
    Ok(Command::Check {
        text: text.context("the QR text or URL, or a receipt file, is missing")?,
        keys: keys.context("--keys <keys.json> is missing")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_text_and_the_keys_come_in_any_order() {
        let want = Command::Check {
            text: "https://x/rx/ab#k.s".into(),
            keys: PathBuf::from("k.json"),
        };
        for line in [
            ["https://x/rx/ab#k.s", "--keys", "k.json"],
            ["--keys", "k.json", "https://x/rx/ab#k.s"],
        ] {
            assert_eq!(parse(args(&line)).unwrap(), want);
        }
        assert_eq!(
            parse(args(&["--keys=k.json", "https://x/rx/ab#k.s"])).unwrap(),
            want
        );
    }

    #[test]
    fn a_missing_part_is_a_usage_error() {
        assert!(parse(args(&["x"])).is_err(), "no keys");
        assert!(parse(args(&["--keys", "k.json"])).is_err(), "no text");
        assert!(parse(args(&[])).is_err());
        assert!(
            parse(args(&["a", "b", "--keys", "k"])).is_err(),
            "two texts"
        );
        assert_eq!(parse(args(&["--help"])).unwrap(), Command::Help);
    }
}
