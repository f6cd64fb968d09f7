//! `receta-verify <QR text or URL | receipt.json> --keys <keys.json>`: checks a prescription's
//! seal, or a saved dispense receipt, offline (docs/verification.md).
//! `receta-verify constancia <document> --reply <reply.tsr> --ca <ca.pem>`: checks a saved NOM-151
//! constancia against the saved document.
//! `receta-verify efirma <document> --p7s <signature.p7s> --ca <ca.pem>`: checks the prescriber's
//! e.firma signature against the saved document. Exit status: 0 valid, 1 not valid, 2 a usage
//! error.

mod constancia;
mod efirma;
mod seal;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
receta-verify: checks a Receta seal offline

USAGE:
    receta-verify <QR TEXT OR URL | RECEIPT.JSON> --keys <KEYS.JSON>
    receta-verify constancia <DOCUMENT> --reply <REPLY.TSR> --ca <CA.PEM>
    receta-verify efirma <DOCUMENT> --p7s <SIGNATURE.P7S> --ca <CA.PEM>

The first form: a prescription's QR text (or its email link), or a dispense receipt (the body of
GET /api/v2/pharmacy/receipts/<digest>/ saved to a file), checked against the keys of
/.well-known/receta-keys.json saved to a file.

The second: a NOM-151 constancia (GET .../constancia/ saved to a file) checked against the document
it stamps (GET /api/v2/rx-endpoint/<signature>/document/, or the receipt saved as above) and the
timestamp authority's CA certificates (PEM).

The third: the prescriber's e.firma signature (GET /api/v2/rx-endpoint/<signature>/efirma.p7s saved
to a file) checked against the document (as above) and the e.firma authority's certificates (PEM:
SAT's, in production).

Prints VALID or INVALID with the reason; exits 1 when it does not verify.
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Check {
        text: String,
        keys: PathBuf,
    },
    Constancia {
        document: PathBuf,
        reply: PathBuf,
        ca: PathBuf,
    },
    Efirma {
        document: PathBuf,
        p7s: PathBuf,
        ca: PathBuf,
    },
    Help,
}

fn main() -> ExitCode {
    let (text, keys) = match parse(std::env::args().skip(1)) {
        Ok(Command::Check { text, keys }) => (text, keys),
        Ok(Command::Constancia {
            document,
            reply,
            ca,
        }) => {
            return match constancia::run(&document, &reply, &ca) {
                Ok(s) => {
                    println!(
                        "VALID: constancia NOM-151 of {}: timestamped by {} at {}, chaining to {}.",
                        s.digest,
                        s.tsa,
                        s.gen_time,
                        ca.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("INVALID: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
        Ok(Command::Efirma { document, p7s, ca }) => {
            return match efirma::run(&document, &p7s, &ca) {
                Ok(s) => {
                    println!(
                        "VALID: signed with the e.firma of {}, RFC {}, certificate {}, at {}, \
                         chaining to {}.",
                        s.name,
                        s.rfc,
                        s.serial,
                        s.signed_at,
                        ca.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("INVALID: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
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

/// `<text> --keys <file>`, the flag before or after the text; or `constancia <document> --reply
/// <file> --ca <file>`; or `efirma <document> --p7s <file> --ca <file>`.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Command> {
    let mut args = args.into_iter().peekable();
    match args.peek().map(String::as_str) {
        Some("constancia") => {
            args.next();
            let (document, reply, ca) = parse_detached(args, "--reply")?;
            return Ok(Command::Constancia {
                document,
                reply,
                ca,
            });
        }
        Some("efirma") => {
            args.next();
            let (document, p7s, ca) = parse_detached(args, "--p7s")?;
            return Ok(Command::Efirma { document, p7s, ca });
        }
        _ => {}
    }
    let (mut text, mut keys) = (None, None);
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

/// `<document> <flag> <file> --ca <file>`, in any order: the document, the detached proof (a
/// timestamp reply, a CMS signature) and the authority's certificates.
fn parse_detached(
    mut args: impl Iterator<Item = String>,
    flag: &str,
) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let (mut document, mut proof, mut ca) = (None, None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ca" => ca = Some(PathBuf::from(args.next().context("--ca needs a file")?)),
            _ if arg == flag => {
                proof = Some(PathBuf::from(
                    args.next()
                        .with_context(|| format!("{flag} needs a file"))?,
                ))
            }
            _ if document.is_none() && !arg.starts_with("--") => {
                document = Some(PathBuf::from(arg))
            }
            _ => bail!("unexpected argument {arg:?}"),
        }
    }
    Ok((
        document.context("the document file is missing")?,
        proof.with_context(|| format!("{flag} <file> is missing"))?,
        ca.context("--ca <ca.pem> is missing")?,
    ))
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

    #[test]
    fn a_constancia_needs_its_document_reply_and_ca() {
        let line = [
            "constancia",
            "--ca",
            "ca.pem",
            "doc.json",
            "--reply",
            "r.tsr",
        ];
        assert_eq!(
            parse(args(&line)).unwrap(),
            Command::Constancia {
                document: PathBuf::from("doc.json"),
                reply: PathBuf::from("r.tsr"),
                ca: PathBuf::from("ca.pem"),
            }
        );
        assert!(parse(args(&["constancia", "doc.json", "--reply", "r"])).is_err());
        assert_eq!(
            parse(args(&[
                "efirma", "doc.json", "--p7s", "s.p7s", "--ca", "c.pem"
            ]))
            .unwrap(),
            Command::Efirma {
                document: PathBuf::from("doc.json"),
                p7s: PathBuf::from("s.p7s"),
                ca: PathBuf::from("c.pem"),
            }
        );
        assert!(parse(args(&["efirma", "doc.json", "--reply", "r", "--ca", "c"])).is_err());
        assert!(parse(args(&["constancia", "--reply", "r", "--ca", "c"])).is_err());
    }
}
