//! TLS for connections, set up only when the server agrees to it.
//!
//! Building an OpenSSL connector parses the system's CA bundle (twice, through native-tls:
//! ~60-100 ms per process), which a `sslmode=prefer` connection to a server without TLS (a
//! loopback server, a unix socket) never uses. [`LazyTls`] builds it at the TLS handshake,
//! once per process for each setting.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres_native_tls::{TlsConnector, TlsStream};
use tokio::io::{AsyncRead, AsyncWrite};

/// How the server's certificate is checked: libpq's `sslmode` and `sslrootcert`.
pub(crate) struct TlsSettings {
    /// Accept any certificate (`disable`, `prefer`, `require`).
    pub accept_invalid_certs: bool,
    /// Accept a certificate for another host name (`verify-ca` too).
    pub accept_invalid_hostnames: bool,
    /// The only roots trusted, when `sslrootcert` names them (already read and parsed).
    pub root: Option<native_tls::Certificate>,
}

/// A [`MakeTlsConnect`] whose native-tls connector is built at the first handshake.
#[derive(Clone)]
pub(crate) struct LazyTls {
    settings: Arc<TlsSettings>,
    built: Arc<Mutex<Option<native_tls::TlsConnector>>>,
}

impl LazyTls {
    pub(crate) fn new(settings: TlsSettings) -> LazyTls {
        LazyTls {
            settings: Arc::new(settings),
            built: Arc::default(),
        }
    }

    fn connector(&self) -> Result<native_tls::TlsConnector, native_tls::Error> {
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connector) = built.as_ref() {
            return Ok(connector.clone());
        }
        let mut builder = native_tls::TlsConnector::builder();
        builder
            .danger_accept_invalid_certs(self.settings.accept_invalid_certs)
            .danger_accept_invalid_hostnames(self.settings.accept_invalid_hostnames);
        if let Some(root) = &self.settings.root {
            // libpq trusts only the named file then, not the system's roots.
            builder.disable_built_in_roots(true);
            builder.add_root_certificate(root.clone());
        }
        let connector = builder.build()?;
        *built = Some(connector.clone());
        Ok(connector)
    }
}

impl<S> MakeTlsConnect<S> for LazyTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = LazyTlsConnect;
    type Error = native_tls::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<LazyTlsConnect, native_tls::Error> {
        Ok(LazyTlsConnect {
            tls: self.clone(),
            domain: domain.to_owned(),
        })
    }
}

/// One connection's handshake, building the connector if none is built yet.
pub(crate) struct LazyTlsConnect {
    tls: LazyTls,
    domain: String,
}

type Handshake<S> = Pin<Box<dyn Future<Output = Result<TlsStream<S>, native_tls::Error>> + Send>>;

impl<S> TlsConnect<S> for LazyTlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = native_tls::Error;
    type Future = Handshake<S>;

    fn connect(self, stream: S) -> Handshake<S> {
        match self.tls.connector() {
            Ok(connector) => TlsConnector::new(connector, &self.domain).connect(stream),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}
