//! `planwave worker --metrics-addr` has `serve`'s guards, against the real binary and a real
//! NATS server: a `Host` that is not the endpoint's is refused (403), a client that never
//! finishes its headers is cut off by the server after `--header-timeout`, and connections
//! over `--max-connections` are answered 503 until one closes.

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::fleet_metrics::metrics_addr;
use super::serve::wait_until;
use super::serve_limits::until_closed;
use crate::support::nats::{Nats, WorkerProc, start_worker};
use crate::support::{SimLlm, tempdir};

/// Sends `request` on a new connection and reads until the server closes it.
async fn exchange(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    until_closed(&mut stream).await
}

fn get(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_metrics_endpoint_refuses_foreign_hosts_cuts_slow_headers_and_caps_connections()
{
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let sim = SimLlm::start(&[], &[]);
    let start = |name: &str, guards: &[&str]| {
        let mut args = vec!["--name", name, "--metrics-addr", "127.0.0.1:0"];
        args.extend_from_slice(guards);
        let mut w: WorkerProc = start_worker(&nats.url(), &sim, &dir.path().join(name), &args);
        w.running().wait_for("metrics on http://", 1);
        let addr = metrics_addr(w.running().seen());
        (w, addr)
    };
    let (mut slow_cut, addr) = start("w1", &["--header-timeout", "300ms"]);

    // Its own address is served; a name re-pointed at it (DNS rebinding) is not.
    let ok = exchange(&addr, &get("/metrics", &addr)).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let evil = exchange(&addr, &get("/metrics", "evil.com")).await;
    assert!(evil.starts_with("HTTP/1.1 403"), "{evil}");
    assert!(
        evil.contains("\"error\"") && evil.contains("evil.com"),
        "{evil}"
    );
    assert!(
        !evil.contains("planwave_"),
        "no series for a foreign host: {evil}"
    );

    // Headers never finished: the server closes the connection, answering nothing.
    let mut partial = TcpStream::connect(&addr).await.expect("connect");
    partial
        .write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .await
        .expect("send");
    let sent = until_closed(&mut partial).await;
    assert!(!sent.contains("planwave_"), "{sent}");

    // Two connections hold both places (the default header timeout, 10 s, keeps them that
    // long): a third is told so, then served once one closes.
    let (mut capped, addr) = start("w2", &["--max-connections", "2"]);
    let first = TcpStream::connect(&addr).await.expect("connect");
    let _second = TcpStream::connect(&addr).await.expect("connect");
    let over = exchange(&addr, &get("/healthz", &addr)).await;
    assert!(over.starts_with("HTTP/1.1 503"), "{over}");
    assert!(over.contains("--max-connections"), "{over}");
    drop(first);
    wait_until("a place to free up", || async {
        let r = exchange(&addr, &get("/healthz", &addr)).await;
        r.starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
    for w in [&mut slow_cut, &mut capped] {
        let (code, _) = w.terminate();
        assert_eq!(code, 0);
    }
}
