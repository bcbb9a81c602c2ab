//! A webhook's TLS trust when it has a `ca_file`: the system's roots plus the file's
//! certificates, and a certificate of that file that the server presents as its own is
//! **pinned**: accepted as exactly itself.
//!
//! The pin is for the self-signed certificate a range makes with `openssl req -x509` for a
//! webhook receiver on its own network. OpenSSL marks it `CA:TRUE`, and the WebPKI rules rustls
//! follows refuse a CA certificate as a server's (`CaUsedAsEndEntity`), while `curl --cacert`
//! accepts the same file. A pinned certificate is trusted as itself, byte for byte: its chain,
//! name and dates are not checked (it is its own trust decision), and the handshake must still
//! prove the server holds its key. Any other certificate goes through the usual checks against
//! the roots, so a private CA with leaf certificates works as before.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// Said beside rustls's `CaUsedAsEndEntity`, which names the rule and not the fix.
pub const CA_AS_SERVER_HINT: &str = "the server presents a CA certificate as its own, as a self-signed `openssl req -x509` certificate is: name that very certificate in the webhook's ca_file to pin it";

/// The rustls client configuration for a webhook with `ca_file` certificates `extra`.
pub fn client_config(extra: &[CertificateDer<'static>]) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped, as reqwest does with its native roots.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    for cert in extra {
        // A certificate that is not usable as a trust anchor can still be pinned.
        let _ = roots.add(cert.clone());
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| anyhow::anyhow!("no usable trust roots: {e}"))?;
    let verifier = PinningVerifier {
        inner,
        pinned: extra.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

#[derive(Debug)]
struct PinningVerifier {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for PinningVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|pin| pin.as_ref() == end_entity.as_ref())
        {
            return Ok(ServerCertVerified::assertion());
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // The handshake's signatures are checked against the presented certificate's key whatever
    // trusted it: a pinned certificate without its key proves nothing.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
