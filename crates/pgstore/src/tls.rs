//! TLS to the store's server, as libpq users expect it: the address's
//! `sslmode` and `sslrootcert` (else `PGSSLMODE` and `PGSSLROOTCERT`),
//! with rustls (ring) under the client through `tokio-postgres-rustls`.
//!
//! - `disable`: no TLS.
//! - `prefer` (the default): TLS when the server offers it, plain when it
//!   does not; the certificate is not checked.
//! - `require`: TLS or no connection; the certificate is not checked,
//!   unless a root file is named (then it is `verify-ca`, as in libpq).
//! - `verify-ca`: the certificate chains to a trusted root.
//! - `verify-full`: that, and it names the host connected to.
//!
//! The roots are `sslrootcert` (a PEM file), `sslrootcert=system` (the
//! system's roots, and `verify-full`, as in libpq 16), else
//! `~/.postgresql/root.crt` when it exists, else the system's roots.
//! Every message here names files and modes, never the password.

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` (all but `allow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// `s` as libpq spells it; the error lists what is accepted.
    pub fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err(
                    "sslmode `allow` is not supported: use `prefer` (TLS when the server offers it) or `disable`"
                        .into(),
                );
            }
            other => {
                return Err(format!(
                    "sslmode `{other}`: give disable, prefer, require, verify-ca or verify-full"
                ));
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether the server's certificate is checked.
    fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Roots {
    File(PathBuf),
    System,
}

impl Roots {
    fn describe(&self) -> String {
        match self {
            Roots::File(f) => format!("the roots in {}", f.display()),
            Roots::System => "the system's roots".into(),
        }
    }
}

/// How one connection is made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub mode: SslMode,
    /// The roots a verifying mode checks against (`None` otherwise).
    pub roots: Option<Roots>,
}

/// The settings an address's `sslmode` and `sslrootcert` ask for,
/// falling back on the environment `env` reads (`PGSSLMODE`,
/// `PGSSLROOTCERT`, `HOME`) as libpq does.
pub(crate) fn settings(
    sslmode: Option<SslMode>,
    sslrootcert: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Settings, String> {
    let given = match sslmode {
        Some(m) => Some(m),
        None => match env("PGSSLMODE").filter(|s| !s.is_empty()) {
            Some(s) => Some(SslMode::parse(&s).map_err(|e| format!("PGSSLMODE: {e}"))?),
            None => None,
        },
    };
    let root = sslrootcert
        .map(str::to_string)
        .or_else(|| env("PGSSLROOTCERT").filter(|s| !s.is_empty()));
    let mode = match (given, root.as_deref()) {
        (None, Some("system")) => SslMode::VerifyFull,
        (Some(m), Some("system")) if m != SslMode::VerifyFull => {
            return Err(format!(
                "sslmode `{}` may not be used with sslrootcert=system (the system's roots trust any public name): use sslmode=verify-full",
                m.name()
            ));
        }
        // libpq: with a root file, `require` checks the chain.
        (Some(SslMode::Require), Some(_)) => SslMode::VerifyCa,
        (m, _) => m.unwrap_or(SslMode::Prefer),
    };
    let roots = mode.verifies().then(|| match root.as_deref() {
        Some("system") => Roots::System,
        Some(file) => Roots::File(PathBuf::from(file)),
        None => env("HOME")
            .map(|h| PathBuf::from(h).join(".postgresql").join("root.crt"))
            .filter(|f| f.is_file())
            .map(Roots::File)
            .unwrap_or(Roots::System),
    });
    Ok(Settings { mode, roots })
}

impl Settings {
    /// What the client itself is told: it knows only whether TLS is off,
    /// tried or required; the checks are the connector's.
    pub(crate) fn client_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        }
    }

    /// The connector for these settings (`None` under `disable`).
    pub(crate) fn connector(&self) -> Result<Option<MakeRustlsConnect>, String> {
        if self.mode == SslMode::Disable {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match &self.roots {
            None => Arc::new(Unchecked(provider.clone())),
            Some(roots) => {
                let store = Arc::new(load(roots)?);
                let webpki = WebPkiServerVerifier::builder_with_provider(store, provider.clone())
                    .build()
                    .map_err(|e| format!("{}: {e}", roots.describe()))?;
                match self.mode {
                    SslMode::VerifyCa => Arc::new(ChainOnly(webpki)),
                    _ => webpki,
                }
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Some(MakeRustlsConnect::new(config)))
    }

    /// Why connecting to `host` failed, and what to do: a certificate
    /// that does not verify (which check), a server without TLS, a server
    /// that takes only TLS; else the client's error. `given_in`: where the
    /// address was given (`--store`), for what to change in it.
    pub(crate) fn explain(&self, e: &postgres::Error, host: &str, given_in: &str) -> String {
        let mode = self.mode.name();
        if let Some(rustls::Error::InvalidCertificate(c)) = rustls_error(e) {
            let roots = self
                .roots
                .as_ref()
                .map(Roots::describe)
                .unwrap_or_else(|| "the trusted roots".into());
            let what = match c {
                CertificateError::UnknownIssuer => {
                    format!("is not signed by a certificate authority in {roots}")
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => format!(
                    "does not name the host `{host}` (sslmode=verify-full checks it; connect by a name the certificate holds, or use sslmode=verify-ca)"
                ),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "has expired".into()
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "is not valid yet".into()
                }
                other => format!("was refused ({other:?}) checking it against {roots}"),
            };
            return format!(
                "the server's TLS certificate {what} (sslmode={mode}): pass sslrootcert=FILE with the certificate of the authority that signed it, or use sslmode=require to encrypt without checking the certificate"
            );
        }
        if let Some(r) = rustls_error(e) {
            return format!("the TLS handshake failed ({r}) under sslmode={mode}");
        }
        if source_text(e).contains("does not support TLS") {
            return format!(
                "the server does not offer TLS, and sslmode={mode} requires it: turn ssl on at the server, or use sslmode=prefer or disable on a network you trust"
            );
        }
        let reason = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => super::with_source(e),
        };
        if self.mode == SslMode::Disable
            && e.as_db_error().is_some_and(|d| {
                d.code() == &postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                    && d.message().contains("no encryption")
            })
        {
            return format!(
                "cannot connect ({reason}): the server takes only TLS connections and sslmode=disable turns TLS off; use sslmode=verify-full with sslrootcert=FILE (or sslmode=require)"
            );
        }
        // What to do follows from what the server said: it runs when it
        // answered (a wrong password was told to start the server).
        use postgres::error::SqlState;
        let todo = match e.as_db_error().map(|d| d.code()) {
            Some(c)
                if *c == SqlState::INVALID_PASSWORD
                    || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
            {
                format!("check the user and password in {given_in} (or PGPASSWORD)")
            }
            Some(c) if *c == SqlState::INVALID_CATALOG_NAME => format!(
                "name a database that exists in {given_in} (after the host: /postgres), or create it"
            ),
            Some(_) => "see what the server said".to_string(),
            None if reason.contains("password missing") => format!(
                "give the password in {given_in} (postgres://USER:PASSWORD@HOST/DB) or in PGPASSWORD"
            ),
            None => format!("start the server or give {given_in} one that runs"),
        };
        format!("cannot connect ({reason}); {todo}")
    }
}

fn source_text(e: &postgres::Error) -> String {
    std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// The rustls error under `e`, if one caused it (tokio-rustls wraps it in
/// an `io::Error`, whose `source` skips it).
fn rustls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = next {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(r) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(r);
        }
        next = err.source();
    }
    None
}

/// The trusted roots; errors name the file and what is wrong with it.
fn load(roots: &Roots) -> Result<rustls::RootCertStore, String> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Roots::File(file) => {
            let name = file.display();
            let bytes = std::fs::read(file)
                .map_err(|e| format!("sslrootcert {name}: cannot read it ({e})"))?;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("sslrootcert {name}: not a PEM file of certificates ({e})"))?;
            if certs.is_empty() {
                return Err(format!(
                    "sslrootcert {name}: no certificate in it (give the PEM file, `-----BEGIN CERTIFICATE-----`, of the authority that signed the server's certificate)"
                ));
            }
            for c in certs {
                store.add(c).map_err(|e| {
                    format!("sslrootcert {name}: a certificate in it is not usable as a root ({e})")
                })?;
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                let why: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
                return Err(format!(
                    "no system root certificates were found{}: pass sslrootcert=FILE with the certificate of the authority that signed the server's",
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", why.join("; "))
                    }
                ));
            }
        }
    }
    Ok(store)
}

/// `prefer` and `require` without roots: any certificate (libpq checks
/// none there either), the handshake's signatures still checked.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain checked, the host name not (webpki checks the
/// chain first, so a name error means the chain was sound).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.to_string())
        }
    }

    /// The settings of an address's query `q` (`sslmode=...&sslrootcert=...`).
    fn of(q: &str, env: &[(&str, &str)]) -> Result<Settings, String> {
        let q = q.strip_prefix("postgres://db/x").unwrap_or(q);
        let mut mode = None;
        let mut root = None;
        for pair in q
            .trim_start_matches('?')
            .split('&')
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=').unwrap() {
                ("sslmode", m) => mode = Some(SslMode::parse(m)?),
                ("sslrootcert", r) => root = Some(r),
                _ => unreachable!(),
            }
        }
        settings(mode, root, with_env(env))
    }

    #[test]
    fn the_address_then_the_environment_then_prefer() {
        let s = of("postgres://db/x", &[]).unwrap();
        assert_eq!((s.mode, s.roots), (SslMode::Prefer, None));
        let s = of("postgres://db/x", &[("PGSSLMODE", "disable")]).unwrap();
        assert_eq!(s.mode, SslMode::Disable);
        let s = of(
            "postgres://db/x?sslmode=require",
            &[("PGSSLMODE", "disable")],
        )
        .unwrap();
        assert_eq!((s.mode, s.roots), (SslMode::Require, None));
        let e = of("postgres://db/x", &[("PGSSLMODE", "bogus")]).unwrap_err();
        assert!(e.starts_with("PGSSLMODE: sslmode `bogus`"), "{e}");
        let s = of(
            "postgres://db/x?sslmode=verify-full",
            &[("PGSSLROOTCERT", "/ca.pem")],
        )
        .unwrap();
        assert_eq!(s.roots, Some(Roots::File("/ca.pem".into())));
        let s = of(
            "postgres://db/x?sslmode=verify-ca&sslrootcert=/mine.pem",
            &[("PGSSLROOTCERT", "/ca.pem")],
        )
        .unwrap();
        assert_eq!(
            (s.mode, s.roots),
            (SslMode::VerifyCa, Some(Roots::File("/mine.pem".into())))
        );
    }

    #[test]
    fn roots_as_libpq_finds_them() {
        // A root file makes `require` check the chain.
        let s = of("postgres://db/x?sslmode=require&sslrootcert=/ca.pem", &[]).unwrap();
        assert_eq!(s.mode, SslMode::VerifyCa);
        // `system` means verify-full, and refuses a weaker mode.
        let s = of("postgres://db/x?sslrootcert=system", &[]).unwrap();
        assert_eq!(
            (s.mode, s.roots),
            (SslMode::VerifyFull, Some(Roots::System))
        );
        let e = of("postgres://db/x?sslmode=require&sslrootcert=system", &[]).unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
        // No file named: ~/.postgresql/root.crt when there is one.
        let home = tempfile::tempdir().unwrap();
        let home = home.path();
        std::fs::create_dir_all(home.join(".postgresql")).unwrap();
        let h = home.to_str().unwrap();
        let s = of("postgres://db/x?sslmode=verify-full", &[("HOME", h)]).unwrap();
        assert_eq!(s.roots, Some(Roots::System));
        std::fs::write(home.join(".postgresql/root.crt"), "x").unwrap();
        let s = of("postgres://db/x?sslmode=verify-full", &[("HOME", h)]).unwrap();
        assert_eq!(
            s.roots,
            Some(Roots::File(home.join(".postgresql/root.crt")))
        );
    }

    #[test]
    fn an_unusable_root_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let missing = dir.join("missing.pem");
        let e = Settings {
            mode: SslMode::VerifyFull,
            roots: Some(Roots::File(missing.clone())),
        }
        .connector()
        .err()
        .unwrap();
        assert!(
            e.contains(&missing.display().to_string()) && e.contains("cannot read"),
            "{e}"
        );
        let text = dir.join("notes.txt");
        std::fs::write(&text, "not a certificate\n").unwrap();
        let e = Settings {
            mode: SslMode::VerifyCa,
            roots: Some(Roots::File(text.clone())),
        }
        .connector()
        .err()
        .unwrap();
        assert!(
            e.contains(&text.display().to_string()) && e.contains("no certificate"),
            "{e}"
        );
        let bad = dir.join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = Settings {
            mode: SslMode::VerifyCa,
            roots: Some(Roots::File(bad.clone())),
        }
        .connector()
        .err()
        .unwrap();
        assert!(e.contains(&bad.display().to_string()), "{e}");
    }

    #[test]
    fn the_unverified_modes_need_no_roots() {
        for mode in [SslMode::Prefer, SslMode::Require] {
            let s = Settings { mode, roots: None };
            assert!(s.connector().unwrap().is_some());
        }
        let s = Settings {
            mode: SslMode::Disable,
            roots: None,
        };
        assert!(s.connector().unwrap().is_none());
        assert_eq!(s.client_mode(), postgres::config::SslMode::Disable);
    }
}
