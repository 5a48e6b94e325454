//! From a `postgres://` URL to a connected client: TLS as the URL's `sslmode` asks, the
//! password from the URL, `$PGPASSWORD` or the password file, a connect timeout, and retries of
//! the connection attempt only (a statement is never retried: it may have committed).

use std::path::PathBuf;
use std::str::FromStr;
use std::thread::sleep;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config};

use crate::PgError;
use crate::tls::{LazyTls, TlsSettings};

/// Seconds to wait for a connection when the URL names no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connection attempts before giving up (a server restarting, a full connection slot).
const CONNECT_ATTEMPTS: u32 = 3;

/// How much to trust the server's certificate, as libpq's `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// `disable`, `prefer`, `require`: encryption without authentication, as in libpq.
    Nothing,
    /// `verify-ca`: a certificate chain to a trusted root, any host name.
    Chain,
    /// `verify-full`: chain and host name.
    Full,
}

/// A parsed connection target.
#[derive(Clone)]
pub(crate) struct Server {
    config: Config,
    verify: Verify,
    root_cert: Option<PathBuf>,
    /// `host:port/database`, for messages (never the password).
    pub(crate) label: String,
}

impl Server {
    /// Parses `url` and fills in what libpq would take from the environment.
    pub(crate) fn parse(url: &str) -> Result<Server, PgError> {
        let invalid = |reason: String| PgError::InvalidUrl { reason };
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut kept = Vec::new();
        let mut verify = Verify::Nothing;
        let mut mode = None;
        let mut root_cert = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => match value {
                    "disable" | "prefer" | "require" => mode = Some(value),
                    "verify-ca" | "verify-full" => {
                        verify = if value == "verify-ca" {
                            Verify::Chain
                        } else {
                            Verify::Full
                        };
                        mode = Some("require");
                    }
                    other => return Err(invalid(format!("unknown sslmode {other:?}"))),
                },
                "sslrootcert" => root_cert = Some(PathBuf::from(value)),
                _ => kept.push(pair),
            }
        }
        if let Some(mode) = mode {
            kept.push(match mode {
                "disable" => "sslmode=disable",
                "prefer" => "sslmode=prefer",
                _ => "sslmode=require",
            });
        }
        let rebuilt = match kept.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", kept.join("&")),
        };
        let mut config = Config::from_str(&rebuilt).map_err(|e| invalid(e.to_string()))?;
        if config.get_user().is_none() {
            let user = std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .map_err(|_| invalid("no user in the URL, $PGUSER or $USER".into()))?;
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let user = config.get_user().unwrap_or_default().to_string();
            config.dbname(&user);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("rag-index");
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let label = format!("{host}:{port}/{}", config.get_dbname().unwrap_or_default());
        if config.get_password().is_none()
            && let Some(password) = password_from_env(&host, port, &config)
        {
            config.password(password);
        }
        Ok(Server {
            config,
            verify,
            root_cert,
            label,
        })
    }

    /// A new connection, retried a few times when the server cannot be reached.
    pub(crate) fn connect(&self) -> Result<Client, PgError> {
        let tls = self.tls()?;
        let mut last = String::new();
        for attempt in 0..CONNECT_ATTEMPTS {
            if attempt > 0 {
                sleep(Duration::from_millis(250 << attempt));
            }
            match self.config.connect(tls.clone()) {
                Ok(client) => return Ok(client),
                // Wrong password, unknown database, TLS refused: trying again changes nothing.
                Err(e) if e.as_db_error().is_some() => return Err(self.refused(e.to_string())),
                Err(e) => {
                    last = source_chain(&e);
                    log::debug!("connecting to {} failed: {last}", self.label);
                }
            }
        }
        Err(self.refused(last))
    }

    fn refused(&self, reason: String) -> PgError {
        PgError::Connect {
            server: self.label.clone(),
            reason,
        }
    }

    /// The TLS side of a connection. The root file is read here, so its errors name it at
    /// once; the connector itself is built only if the server agrees to TLS (see [`LazyTls`]).
    fn tls(&self) -> Result<LazyTls, PgError> {
        let root = match &self.root_cert {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    self.refused(format!("cannot read sslrootcert {}: {e}", path.display()))
                })?;
                let cert = native_tls::Certificate::from_pem(&pem)
                    .map_err(|e| self.refused(format!("sslrootcert {}: {e}", path.display())))?;
                Some(cert)
            }
        };
        if self.config.get_ssl_mode() == SslMode::Disable {
            log::debug!("TLS disabled by sslmode for {}", self.label);
        }
        Ok(LazyTls::new(TlsSettings {
            accept_invalid_certs: self.verify == Verify::Nothing,
            accept_invalid_hostnames: self.verify != Verify::Full,
            root,
        }))
    }
}

/// The error and its causes on one line (the client's top-level message alone is often just
/// "error connecting to server").
fn source_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(inner) = cause {
        let more = inner.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = inner.source();
    }
    text
}

/// `$PGPASSWORD`, else the matching line of `$PGPASSFILE` or `~/.pgpass`
/// (`host:port:database:user:password`, `*` matches anything, `\` escapes).
fn password_from_env(host: &str, port: u16, config: &Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let wanted = [
        host.to_string(),
        port.to_string(),
        config.get_dbname().unwrap_or_default().to_string(),
        config.get_user().unwrap_or_default().to_string(),
    ];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = pgpass_fields(line);
            (fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(&wanted)
                    .all(|(f, w)| f == "*" || f == w))
            .then(|| fields[4].clone())
        })
}

fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_become_require_with_checks() {
        let s = Server::parse("postgres://u:p@db.example:6543/rag?sslmode=verify-full").unwrap();
        assert_eq!(s.verify, Verify::Full);
        assert_eq!(s.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(s.label, "db.example:6543/rag");
        let s = Server::parse("postgres://u:p@h/rag?sslmode=require&connect_timeout=3").unwrap();
        assert_eq!(s.verify, Verify::Nothing);
        assert_eq!(
            s.config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        assert!(matches!(
            Server::parse("postgres://u@h/rag?sslmode=sometimes"),
            Err(PgError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn pgpass_lines_split_on_unescaped_colons() {
        assert_eq!(
            pgpass_fields(r"h:5432:*:u:pa\:ss"),
            vec!["h", "5432", "*", "u", "pa:ss"]
        );
    }
}
