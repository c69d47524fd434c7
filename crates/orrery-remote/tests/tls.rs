//! https: a server behind TLS is reached when its certificate chains to a trusted root (here a
//! CA made for the test, named by SSL_CERT_FILE as a user names their own); a certificate that
//! does not is an error that says so, and nothing is sent. Its own test binary: the roots are
//! read once per process, after SSL_CERT_FILE is set.

use std::sync::Arc;

use orrery_remote::{RemoteError, Server};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A CA of the test's own, named `name`.
fn authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A TLS server for `localhost` with a certificate `ca` signed, answering one request with `[]`;
/// its address and what it was asked (None when the handshake failed).
async fn tls_server(ca: &CertifiedIssuer<'static, KeyPair>) -> (String, tokio::task::JoinHandle<Option<String>>) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()]).unwrap().signed_by(&key, ca).unwrap();
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        tokio_rustls::rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let served = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut tls = acceptor.accept(socket).await.ok()?;
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&request).contains("\r\n\r\n") {
            let n = tls.read(&mut buf).await.ok()?;
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]";
        tls.write_all(answer.as_bytes()).await.ok()?;
        let _ = tls.shutdown().await;
        Some(String::from_utf8_lossy(&request).to_string())
    });
    (url, served)
}

#[tokio::test]
async fn an_https_server_is_reached_when_its_certificate_is_trusted_and_refused_when_not() {
    let trusted = authority("Orrery test CA");
    let roots = std::env::temp_dir().join(format!("orrery-remote-tls-{}.pem", std::process::id()));
    std::fs::write(&roots, trusted.pem()).unwrap();
    // SAFETY: set before any thread of this test binary reads the environment (one test).
    unsafe { std::env::set_var("SSL_CERT_FILE", &roots) };

    let (url, served) = tls_server(&trusted).await;
    let server = Server::new(&url, Some("t0ken".into())).unwrap();
    assert_eq!(server.blueprints().await.unwrap(), Vec::<serde_json::Value>::new());
    let request = served.await.unwrap().expect("the handshake succeeded");
    assert!(request.starts_with("GET /blueprints HTTP/1.1\r\n"), "{request}");
    assert!(request.contains("authorization: Bearer t0ken"), "the token went, encrypted: {request}");

    // A server whose certificate no trusted root signed: refused before anything is sent.
    let (url, served) = tls_server(&authority("Someone else's CA")).await;
    let err = Server::new(&url, Some("t0ken".into())).unwrap().blueprints().await.unwrap_err();
    let RemoteError::Unreachable { url: named, why } = &err else { panic!("{err:?}") };
    assert_eq!(named, &url);
    assert!(why.contains("invalid peer certificate: UnknownIssuer") && why.contains("SSL_CERT_FILE"), "{why}");
    assert_eq!(served.await.unwrap(), None, "no request reached it");
    let _ = std::fs::remove_file(roots);
}
