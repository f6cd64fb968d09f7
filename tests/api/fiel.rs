//! A test certification authority laid out as SAT's e.firma (FIEL) authority: medic certificates
//! with the holder's RFC in `x500UniqueIdentifier` (2.5.4.45) and CURP in `serialNumber` (2.5.4.5),
//! made with `openssl ca` (so validity dates can lie in the past). Holders sign with `openssl cms
//! -sign`, and `openssl cms -verify` checks what the service stores: a third party at both ends.

use std::path::{Path, PathBuf};

use receta_test_tsa::{make_ca, openssl};

/// A test e.firma authority in a temporary folder.
pub struct Fiel {
    dir: tempfile::TempDir,
    name: String,
}

/// A medic's certificate, as a file (its key beside it).
pub struct Holder {
    pub cert: PathBuf,
    key: PathBuf,
}

impl Holder {
    /// The certificate, PEM.
    pub fn pem(&self) -> String {
        std::fs::read_to_string(&self.cert).unwrap()
    }

    /// `openssl cms -sign -binary -md sha256 -outform DER` over `content`: a detached CMS
    /// `SignedData` (DER) by this holder's key, with its certificate and `signingTime`.
    pub fn sign(&self, content: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let (doc, out) = (dir.path().join("doc"), dir.path().join("doc.p7s"));
        std::fs::write(&doc, content).unwrap();
        openssl(
            dir.path(),
            &[
                "cms",
                "-sign",
                "-binary",
                "-md",
                "sha256",
                "-outform",
                "DER",
                "-in",
                path(&doc),
                "-signer",
                path(&self.cert),
                "-inkey",
                path(&self.key),
                "-out",
                path(&out),
            ],
        );
        std::fs::read(out).unwrap()
    }
}

/// Whether `openssl cms -verify` accepts `p7s` (DER, detached) over `content`, chaining to `ca`.
pub fn openssl_verifies(p7s: &[u8], content: &[u8], ca: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let (sig, doc) = (dir.path().join("sig.p7s"), dir.path().join("doc"));
    std::fs::write(&sig, p7s).unwrap();
    std::fs::write(&doc, content).unwrap();
    let out = std::process::Command::new("openssl")
        .args([
            "cms", "-verify", "-binary", "-inform", "DER", "-purpose", "any", "-in",
        ])
        .arg(&sig)
        .arg("-content")
        .arg(&doc)
        .arg("-CAfile")
        .arg(ca)
        .args(["-out", "/dev/null"])
        .output()
        .expect("the openssl command");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

impl Fiel {
    pub fn new(name: &str) -> Fiel {
        let dir = ca_dir();
        make_ca(dir.path(), name);
        Fiel {
            dir,
            name: name.to_string(),
        }
    }

    /// An intermediate authority `name` under this one (`CA:TRUE`, may sign certificates), as SAT
    /// issues FIEL certificates: a `Fiel` that issues holders itself.
    pub fn intermediate(&self, name: &str) -> Fiel {
        let dir = ca_dir();
        let d = dir.path();
        std::fs::write(
            d.join("ca.ext"),
            "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n",
        )
        .unwrap();
        new_key_request(
            d,
            "ca.key",
            "ca.csr",
            &format!("/CN={name}/O=Receta Pruebas"),
        );
        let root = self.dir.path();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "ca.csr",
                "-CA",
                path(&root.join("ca.pem")),
                "-CAkey",
                path(&root.join("ca.key")),
                "-set_serial",
                "7",
                "-days",
                "3650",
                "-extfile",
                "ca.ext",
                "-out",
                "ca.pem",
            ],
        );
        Fiel {
            dir,
            name: name.to_string(),
        }
    }

    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.ca_path()).unwrap()
    }

    /// A certificate for `rfc` and `curp` valid from `start` to `end` (`YYYYMMDDHHMMSSZ`), with
    /// key usage `usage` (`digitalSignature, nonRepudiation` for a FIEL).
    pub fn issue(
        &self,
        file: &str,
        rfc: &str,
        curp: &str,
        start: &str,
        end: &str,
        usage: &str,
    ) -> Holder {
        let d = self.dir.path();
        let key = d.join(format!("{file}.key"));
        let csr = d.join(format!("{file}.csr"));
        let cert = d.join(format!("{file}.pem"));
        let ext = d.join(format!("{file}.ext"));
        std::fs::write(
            &ext,
            format!("[ holder ]\nbasicConstraints = CA:FALSE\nkeyUsage = critical, {usage}\n"),
        )
        .unwrap();
        new_key_request(
            d,
            path(&key),
            path(&csr),
            &format!("/CN=DR JOSE NUNEZ/x500UniqueIdentifier={rfc}/serialNumber={curp}/C=MX"),
        );
        openssl(
            d,
            &[
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-in",
                path(&csr),
                "-out",
                path(&cert),
                "-startdate",
                start,
                "-enddate",
                end,
                "-extfile",
                path(&ext),
                "-extensions",
                "holder",
                "-notext",
            ],
        );
        Holder { cert, key }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `openssl req -new`: a new RSA 2048 key in `key` and a request for `subject` in `csr`, in `dir`.
fn new_key_request(dir: &Path, key: &str, csr: &str, subject: &str) {
    openssl(
        dir,
        &[
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
            subject,
        ],
    );
}

/// A folder laid out for `openssl ca` (its index, serial and configuration), without its keys.
fn ca_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("index.txt"), "").unwrap();
    std::fs::write(
        d.join("serial"),
        "3330303031303030303030353030303030303031\n",
    )
    .unwrap();
    std::fs::write(d.join("ca.cnf"), CA_CONFIG).unwrap();
    dir
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

const CA_CONFIG: &str = "[ ca ]\ndefault_ca = fiel\n\n[ fiel ]\ndir = .\ndatabase = ./index.txt\n\
    new_certs_dir = .\nserial = ./serial\ncertificate = ./ca.pem\nprivate_key = ./ca.key\n\
    default_md = sha256\npolicy = anything\nunique_subject = no\ncopy_extensions = none\n\n\
    [ anything ]\ncommonName = supplied\nx500UniqueIdentifier = optional\nserialNumber = optional\n\
    countryName = optional\n";
