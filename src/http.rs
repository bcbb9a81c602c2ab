//! The daemon's local HTTP port (127.0.0.1 by default): `/events` (Server-Sent Events, one
//! `data:` line per event as it happens, so `curl -N` shows alerts live), `/status` (JSON),
//! `/metrics` (Prometheus text) and `/healthz`. GET only, plain HTTP/1.1, one request per
//! connection: enough for curl, Prometheus and the `status` verb, with nothing to configure.

use crate::status::{prometheus, StatusSnapshot};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch};

#[derive(Clone)]
pub struct HttpState {
    pub events: broadcast::Sender<Arc<str>>,
    /// The pipeline's latest status snapshot; `/status` and `/metrics` render it on request.
    pub status: watch::Receiver<Arc<StatusSnapshot>>,
    pub shutdown: watch::Receiver<bool>,
}

const KEEPALIVE: Duration = Duration::from_secs(15);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn serve(listener: TcpListener, state: HttpState) {
    let mut shutdown = state.shutdown.clone();
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(handle(stream, state.clone()));
            }
            Err(e) => tracing::debug!(error = %e, "http accept"),
        }
    }
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() > 16 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

async fn handle(mut stream: TcpStream, state: HttpState) {
    let Ok(Some(head)) = tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream)).await else {
        return;
    };
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    if method != "GET" {
        let _ = respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n",
        )
        .await;
        return;
    }
    match path {
        "/events" => sse(stream, state).await,
        "/healthz" => {
            let _ = respond(&mut stream, "200 OK", "text/plain", "ok\n").await;
        }
        "/status" => {
            let snapshot = state.status.borrow().clone();
            let body = serde_json::to_string(&*snapshot).unwrap_or_default();
            let _ = respond(&mut stream, "200 OK", "application/json", &body).await;
        }
        "/metrics" => {
            let snapshot = state.status.borrow().clone();
            let body = prometheus::render(&snapshot);
            let _ = respond(
                &mut stream,
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                &body,
            )
            .await;
        }
        _ => {
            let _ = respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                "try /events /status /metrics /healthz\n",
            )
            .await;
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

async fn sse(mut stream: TcpStream, state: HttpState) {
    let mut events = state.events.subscribe();
    let mut shutdown = state.shutdown.clone();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n: foxborne-receiver events\n\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    loop {
        let chunk = tokio::select! {
            _ = shutdown.changed() => break,
            _ = tokio::time::sleep(KEEPALIVE) => ": keepalive\n\n".to_string(),
            e = events.recv() => match e {
                Ok(line) => format!("data: {line}\n\n"),
                Err(broadcast::error::RecvError::Lagged(n)) => format!(": {n} events skipped (listener too slow)\n\n"),
                Err(broadcast::error::RecvError::Closed) => break,
            },
        };
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
}

/// A blocking GET for the `status` verb: the status code and the body.
pub fn get_blocking(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let target: std::net::SocketAddr = addr
        .parse()
        .map_err(|e| std::io::Error::other(format!("{addr}: {e}")))?;
    let mut stream = std::net::TcpStream::connect_timeout(&target, Duration::from_secs(3))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP response"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_string()))
}
