//! The test CA and its timestamping unit, made and run with the `openssl` command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// A test certificate authority and its timestamping unit.
pub struct Authority {
    dir: tempfile::TempDir,
    /// `openssl ts -reply` keeps its serial in a file: one reply at a time.
    lock: Mutex<()>,
}

/// The TSA certificate's common name, as replies name their authority.
pub const TSA_NAME: &str = "Receta Test TSA";

impl Authority {
    /// A fresh CA and TSA (keys, certificates, `openssl ts` configuration) in a temporary folder.
    pub fn new() -> Authority {
        let dir = tempfile::tempdir().expect("temporary folder");
        let d = dir.path();
        std::fs::write(d.join("tsaserial"), "01\n").unwrap();
        std::fs::write(
            d.join("tsa-ext.cnf"),
            "basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature, nonRepudiation\n\
             extendedKeyUsage = critical, timeStamping\nsubjectKeyIdentifier = hash\n",
        )
        .unwrap();
        std::fs::write(d.join("tsa.cnf"), config(d)).unwrap();
        make_ca(d, "Receta Test Root CA");
        openssl(
            d,
            &[
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "tsa.key",
                "-out",
                "tsa.csr",
                "-subj",
                &format!("/CN={TSA_NAME}/O=Receta Pruebas"),
            ],
        );
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "tsa.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "tsa.pem",
                "-days",
                "3650",
                "-sha256",
                "-extfile",
                "tsa-ext.cnf",
            ],
        );
        Authority {
            dir,
            lock: Mutex::new(()),
        }
    }

    /// The same TSA, signing in-process (`fast.rs`).
    pub fn fast(&self) -> crate::fast::Fast {
        crate::fast::Fast::load(self.dir.path())
    }

    /// The CA certificate (PEM file) replies chain to.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.ca_path()).unwrap()
    }

    /// `openssl ts -reply` to a `TimeStampReq` (DER): the `TimeStampResp` (DER).
    pub fn reply(&self, query: &[u8]) -> Vec<u8> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let d = self.dir.path();
        std::fs::write(d.join("query.tsq"), query).unwrap();
        let _ = std::fs::remove_file(d.join("reply.tsr"));
        openssl(
            d,
            &[
                "ts",
                "-reply",
                "-config",
                "tsa.cnf",
                "-queryfile",
                "query.tsq",
                "-out",
                "reply.tsr",
            ],
        );
        std::fs::read(d.join("reply.tsr")).unwrap()
    }

    /// A reply for a query of OpenSSL's own over `digest_hex` (SHA-256), with a nonce of its own:
    /// a valid timestamp that is not the answer to anyone's request.
    pub fn reply_for_digest(&self, digest_hex: &str) -> Vec<u8> {
        let query = {
            let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let d = self.dir.path();
            openssl(
                d,
                &[
                    "ts", "-query", "-digest", digest_hex, "-sha256", "-cert", "-out", "own.tsq",
                ],
            );
            std::fs::read(d.join("own.tsq")).unwrap()
        };
        self.reply(&query)
    }
}

impl Default for Authority {
    fn default() -> Self {
        Self::new()
    }
}

/// A test root CA in `dir`: `ca.key` (RSA 2048) and `ca.pem`, named `CN=<name>, O=Receta Pruebas`.
pub fn make_ca(dir: &Path, name: &str) {
    let subject = format!("/CN={name}/O=Receta Pruebas");
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "3650",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:true",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// A signer's certificate `<file>.pem` (RSA 2048 key `<file>.key`) for `subject`, issued for a
/// year by the CA of `make_ca` in `dir`, with key usage `digitalSignature, nonRepudiation`: an
/// e.firma-like holder for the prescriber's signature tests and bench.
pub fn issue_signer(dir: &Path, file: &str, subject: &str) {
    let ext = format!("{file}.ext");
    std::fs::write(
        dir.join(&ext),
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\n",
    )
    .expect("writing the extensions");
    let (key, csr, pem) = (
        format!("{file}.key"),
        format!("{file}.csr"),
        format!("{file}.pem"),
    );
    openssl(
        dir,
        &[
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
            subject,
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "365",
            "-extfile",
            &ext,
            "-out",
            &pem,
        ],
    );
}

/// Runs `openssl <args>` in `dir`; panics with what it printed when it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (Debian's openssl package)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `openssl ts` configuration of OpenSSL's TSA test, with SHA-256 and an ESS certificate id.
fn config(dir: &Path) -> String {
    format!(
        "[ tsa ]\ndefault_tsa = tsa_config\n\n[ tsa_config ]\ndir = {}\nserial = $dir/tsaserial\n\
         crypto_device = builtin\nsigner_cert = $dir/tsa.pem\ncerts = $dir/ca.pem\n\
         signer_key = $dir/tsa.key\nsigner_digest = sha256\ndefault_policy = 1.2.3.4.1\n\
         other_policies = 1.2.3.4.5.6\ndigests = sha256, sha384, sha512\n\
         accuracy = secs:1, millisecs:500, microsecs:100\nclock_precision_digits = 0\n\
         ordering = yes\ntsa_name = yes\ness_cert_id_chain = no\ness_cert_id_alg = sha256\n",
        dir.display()
    )
}
