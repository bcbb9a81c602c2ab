//! Webhooks as a range's chat and paging tools take them (issue 11): an HTTPS endpoint whose
//! certificate this test makes (rcgen) and trusts through `ca_file`, posted in `slack` format
//! with a configured header; a second, plain-HTTP `json` webhook given the same events; and a
//! third that accepts connections and never answers, which delays neither of them.

use crate::common;

use common::Daemon;
use foxborne_receiver::wire::build::heartbeat_v2 as hb;
use std::net::UdpSocket;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// One UDP link, a 1 s gap threshold, the HTTP port: what each webhook test adds its hooks to.
const BASE: &str = "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 1.0\n[http]\nlisten = \"127.0.0.1:0\"\n";

const WAIT: Duration = Duration::from_secs(20);

/// What an endpoint received: request headers (lowercase names) and the body as JSON.
#[derive(Debug)]
struct Posted {
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

impl Posted {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Sink = mpsc::Sender<Posted>;

/// Answers every request 200 and reports it.
async fn record(
    request: hyper::Request<hyper::body::Incoming>,
    sink: Sink,
) -> Result<hyper::Response<String>, std::convert::Infallible> {
    record_answering(request, sink, 200).await
}

/// Reports the request and answers it with `status`.
async fn record_answering(
    request: hyper::Request<hyper::body::Incoming>,
    sink: Sink,
    status: u16,
) -> Result<hyper::Response<String>, std::convert::Infallible> {
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = axum::body::to_bytes(axum::body::Body::new(request.into_body()), 1 << 20)
        .await
        .unwrap();
    let _ = sink.send(Posted {
        headers,
        body: serde_json::from_slice(&body).unwrap(),
    });
    let mut response = hyper::Response::new(String::new());
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    Ok(response)
}

/// A plain HTTP endpoint that answers the n-th request (from 0) with `answers(n)`.
fn serve_answers(
    runtime: &tokio::runtime::Runtime,
    answers: fn(usize) -> u16,
) -> (String, mpsc::Receiver<Posted>) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    runtime.spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (tx, count) = (tx.clone(), count.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |r| {
                    let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    record_answering(r, tx.clone(), answers(n))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    (addr, rx)
}

fn serve_http(
    runtime: &tokio::runtime::Runtime,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (String, mpsc::Receiver<Posted>) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    runtime.spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let tx = tx.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |r| record(r, tx.clone()));
                let http = hyper::server::conn::http1::Builder::new();
                match tls {
                    Some(acceptor) => {
                        let Ok(stream) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let _ = http
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    }
                    None => {
                        let _ = http
                            .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                            .await;
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// A CA, and a server certificate for 127.0.0.1 signed by it: the acceptor and the CA's PEM.
fn tls_endpoint() -> (tokio_rustls::TlsAcceptor, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "foxborne test range CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![server_cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
        )
        .unwrap();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem())
}

/// The daemon with `config` (one link, `radio1`), started, having heard one heartbeat of `sysid`
/// (seq 0) from `sock`: that vehicle's gap opens once the threshold passes. The daemon, its HTTP
/// address and its link's.
fn start_hearing(
    name: &str,
    config: &str,
    sock: &UdpSocket,
    sysid: u8,
) -> (Daemon, String, std::net::SocketAddr) {
    let (mut d, udp) = Daemon::start_radio1(name, config);
    let http = d.http_addr();
    sock.send_to(&hb(sysid, 0), udp).unwrap();
    (d, http, udp)
}

#[test]
fn gap_alerts_reach_an_https_slack_webhook_and_a_json_one_while_a_third_hangs() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (acceptor, ca_pem) = tls_endpoint();
    let (https_addr, slack) = serve_http(&runtime, Some(acceptor));
    let (http_addr, json) = serve_http(&runtime, None);
    // Accepts and reads, never answers.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hanging_addr = hanging.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in hanging.incoming() {
            held.push(s);
        }
    });

    let scratch = tempfile::tempdir().unwrap();
    let ca_file = scratch.path().join("range-ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let config = format!(
        r#"data_dir = "{{dir}}/data"
fsync_interval_s = 0.05
[[link]]
name = "radio1"
udp = "127.0.0.1:0"
[gap]
threshold_s = 1.0
vehicles = {{ 4 = "UAS-04" }}
[http]
listen = "127.0.0.1:0"

[[webhook]]
name = "hanging"
url = "http://{hanging_addr}/never"
timeout_s = 60

[[webhook]]
name = "chat"
url = "https://{https_addr}/hooks/range"
format = "slack"
headers = {{ X-Range-Site = "north-ridge" }}
ca_file = "{ca}"

[[webhook]]
name = "pager"
url = "http://{http_addr}/alerts"
format = "json"
"#,
        ca = ca_file.display()
    );
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (mut d, http, udp) = start_hearing("webhooks-https", &config, &sock, 4);

    let slack_open = slack
        .recv_timeout(WAIT)
        .expect("the HTTPS webhook got the open gap");
    let text = slack_open.body["text"].as_str().unwrap();
    assert!(text.contains("telemetry_gap open"), "{text}");
    assert!(text.contains("UAS-04 (sysid 4)"), "{text}");
    assert!(text.contains("Heartbeat due and not received."), "{text}");
    assert_eq!(
        slack_open.body.as_object().unwrap().len(),
        1,
        "slack format is {{\"text\"}} only"
    );
    assert_eq!(slack_open.header("x-range-site"), Some("north-ridge"));
    assert_eq!(slack_open.header("content-type"), Some("application/json"));
    let json_open = json
        .recv_timeout(WAIT)
        .expect("the json webhook got the open gap");
    assert_eq!(json_open.body["kind"], "telemetry_gap");
    assert_eq!(json_open.body["state"], "open");
    assert_eq!(json_open.body["sysid"], 4);
    assert_eq!(json_open.header("x-range-site"), None);

    sock.send_to(&hb(4, 1), udp).unwrap();
    let slack_closed = slack
        .recv_timeout(WAIT)
        .expect("the HTTPS webhook got the closed gap");
    let text = slack_closed.body["text"].as_str().unwrap();
    assert!(text.contains("telemetry_gap closed"), "{text}");
    assert!(
        text.contains("Heartbeat due and not received. Nothing for"),
        "{text}"
    );
    let json_closed = json.recv_timeout(WAIT).unwrap();
    assert_eq!(json_closed.body["state"], "closed");
    assert!(json_closed.body["title"]
        .as_str()
        .unwrap()
        .starts_with("Heartbeat due and not received. Nothing for"));

    // Both got open and closed while the hanging webhook is still waiting on its first post
    // (60 s timeout): it delayed neither.
    assert!(
        !d.has_said("webhook=hanging"),
        "the hanging webhook already timed out: the test proves nothing"
    );
    // The status snapshot is republished on the pipeline's tick: wait for it to show the posts.
    let webhook = |name: &str| common::status_entry(&http, "webhooks", name);
    assert!(common::eventually(WAIT, || webhook("chat")["sent"] == 2
        && webhook("pager")["sent"] == 2));
    assert_eq!(webhook("hanging")["sent"], 0);
    assert_eq!(webhook("hanging")["pending"], 2);

    // At stop the hanging webhook's queue gets the stop budget, then what is left is counted.
    assert!(d.stop().success());
    assert!(
        d.seen
            .iter()
            .any(|l| l.contains("webhook=hanging") && l.contains("undelivered=2")),
        "{:#?}",
        d.seen
    );
    assert!(
        slack.try_recv().is_err() && json.try_recv().is_err(),
        "nothing else posted"
    );
}

/// 5xx answers are tried again (with back-off) until delivered; a 4xx is given up at once.
#[test]
fn server_errors_are_retried_and_client_errors_are_not() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (flaky_addr, flaky) = serve_answers(&runtime, |n| if n < 2 { 503 } else { 200 });
    let (refusing_addr, refusing) = serve_answers(&runtime, |_| 403);
    let config = format!(
        r#"{BASE}[[webhook]]
name = "flaky"
url = "http://{flaky_addr}/alerts"
[[webhook]]
name = "refusing"
url = "http://{refusing_addr}/alerts"
"#
    );
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (mut d, http, _) = start_hearing("webhooks-retry", &config, &sock, 6);
    // The same open event three times at the flaky endpoint: 503, 503, then 200.
    let tries: Vec<Posted> = (0..3)
        .map(|_| flaky.recv_timeout(WAIT).expect("a retry"))
        .collect();
    assert!(tries.iter().all(|t| t.body == tries[0].body));
    assert_eq!(tries[0].body["state"], "open");
    // Once at the refusing one, and never again.
    let refused = refusing.recv_timeout(WAIT).unwrap();
    assert_eq!(refused.body, tries[0].body);
    let webhook = |name: &str| common::status_entry(&http, "webhooks", name);
    assert!(common::eventually(WAIT, || webhook("flaky")["sent"] == 1
        && webhook("refusing")["dropped"] == 1));
    assert_eq!(webhook("flaky")["failed_attempts"], 2);
    assert_eq!(webhook("refusing")["failed_attempts"], 1);
    assert!(refusing.try_recv().is_err(), "a 403 was retried");
    d.wait_for("not retrying a client error", WAIT);
    assert!(d.stop().success());
    assert!(refusing.try_recv().is_err() && flaky.try_recv().is_err());
}

/// A self-signed certificate and key made as a range makes one, by `openssl req -x509` (CA:TRUE
/// in OpenSSL's defaults): `(acceptor, certificate PEM path)`. None when openssl is missing.
fn openssl_self_signed(
    dir: &std::path::Path,
    name: &str,
) -> (tokio_rustls::TlsAcceptor, std::path::PathBuf) {
    use rustls::pki_types::pem::PemObject;
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    match made {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "openssl req -x509: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("openssl is not installed ({e}): apt-get install openssl"),
    }
    let text = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "openssl's default self-signed certificate is a CA"
    );
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![rustls::pki_types::CertificateDer::from_pem_file(&cert).unwrap()],
        rustls::pki_types::PrivateKeyDer::from_pem_file(&key).unwrap(),
    )
    .unwrap();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), cert)
}

/// A webhook receiver with the self-signed certificate `openssl req -x509` makes, named as the
/// webhook's `ca_file`: pinned, delivered to. Another self-signed certificate in `ca_file` is no
/// way past the check: nothing is delivered to the same receiver.
#[test]
fn a_self_signed_openssl_certificate_in_ca_file_is_pinned() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (acceptor, cert) = openssl_self_signed(scratch.path(), "hook");
    let (_, other) = openssl_self_signed(scratch.path(), "other");
    let (addr, posted) = serve_http(&runtime, Some(acceptor));
    let config = format!(
        r#"{BASE}[[webhook]]
name = "pinned"
url = "https://{addr}/hooks"
ca_file = "{cert}"
[[webhook]]
name = "stranger"
url = "https://{addr}/hooks"
ca_file = "{other}"
"#,
        cert = cert.display(),
        other = other.display()
    );
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (mut d, http, _) = start_hearing("webhooks-pinned", &config, &sock, 8);
    let open = posted
        .recv_timeout(WAIT)
        .expect("the pinned webhook got the open gap");
    assert_eq!(
        (&open.body["kind"], &open.body["state"]),
        (&"telemetry_gap".into(), &"open".into())
    );
    let webhook = |name: &str| common::status_entry(&http, "webhooks", name);
    assert!(common::eventually(WAIT, || webhook("pinned")["sent"] == 1
        && webhook("stranger")["failed_attempts"].as_u64() >= Some(1)));
    // The stranger is refused, and the log says how to pin; the pinned one never failed.
    let stranger = d.wait_for("webhook=stranger", WAIT);
    assert!(
        stranger.contains("CaUsedAsEndEntity")
            && stranger.contains("name that very certificate in the webhook's ca_file"),
        "{stranger}"
    );
    assert!(
        !d.seen
            .iter()
            .any(|l| l.contains("webhook=pinned") && l.contains("failing")),
        "{:#?}",
        d.seen
    );
    assert_eq!(webhook("stranger")["sent"], 0);
    assert!(d.stop().success());
    assert!(
        posted.try_recv().is_err(),
        "the stranger's post got through"
    );
}
