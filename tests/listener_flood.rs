//! The controller's HTTP listeners under a flood from loopback: `flotilla controller` (the
//! binary) runs against cluster 1 with the web view and the git webhook receiver; each is sent
//! more connections that never finish their headers than it has slots and queue places, then a
//! bounded loop of complete requests from many connections at once. Each listener keeps its
//! bound (the connections it serves at once, sampled from `/metrics` throughout, never pass it),
//! every refusal a client saw is counted (a 503 as `busy`, a connection closed unanswered as
//! `dropped` or `header_timeout`), and afterwards it answers as before.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use flotilla::httpd::server::Limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::git_remote::free_port;
use support::{controller_process_with, eventually, install_flotilla_crds, namespace};

/// Complete requests sent per listener, and how many connections send them at once.
const REQUESTS: usize = 2_000;
const AT_ONCE: usize = 200;

/// What one connection got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Seen {
    /// An answer with this status.
    Status(u16),
    /// Closed with no byte answered.
    Closed,
}

/// Reads everything `stream` answers until it closes.
async fn answer_of(mut stream: TcpStream) -> Seen {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .map_or(Seen::Closed, Seen::Status)
}

/// Opens `count` connections to `address` that send the start of a request and never finish
/// its headers; what each got back.
async fn unfinished(address: SocketAddr, count: usize) -> BTreeMap<Seen, usize> {
    let mut open = Vec::new();
    for _ in 0..count {
        let mut stream = TcpStream::connect(address).await.expect("connects");
        let _ = stream
            .write_all(b"POST /api/webhook HTTP/1.1\r\nhost:")
            .await;
        open.push(tokio::spawn(answer_of(stream)));
    }
    tally(open).await
}

/// Sends `request` `REQUESTS` times, `AT_ONCE` connections at a time; what each got back.
async fn complete(address: SocketAddr, request: &'static [u8]) -> BTreeMap<Seen, usize> {
    let mut seen = BTreeMap::new();
    for _ in 0..REQUESTS / AT_ONCE {
        let batch = (0..AT_ONCE)
            .map(|_| {
                tokio::spawn(async move {
                    let Ok(mut stream) = TcpStream::connect(address).await else {
                        return Seen::Closed;
                    };
                    if stream.write_all(request).await.is_err() {
                        return Seen::Closed;
                    }
                    answer_of(stream).await
                })
            })
            .collect();
        for (answer, count) in tally(batch).await {
            *seen.entry(answer).or_default() += count;
        }
    }
    seen
}

async fn tally(tasks: Vec<tokio::task::JoinHandle<Seen>>) -> BTreeMap<Seen, usize> {
    let mut seen = BTreeMap::new();
    for task in tasks {
        *seen.entry(task.await.expect("a client task")).or_default() += 1;
    }
    seen
}

/// The `/metrics` exposition of the controller.
async fn scrape(metrics: SocketAddr) -> String {
    let mut stream = TcpStream::connect(metrics).await.expect("reaches /metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .expect("asks /metrics");
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .await
        .expect("reads /metrics");
    text
}

/// The value of the sample `name{labels}` in `exposition` (0 when absent).
fn sample(exposition: &str, series: &str) -> i64 {
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |value| value.trim().parse().expect("a number"))
}

fn refused(exposition: &str, listener: &str, reason: &str) -> usize {
    let series =
        format!("flotilla_http_refused_total{{listener=\"{listener}\",reason=\"{reason}\"}}");
    usize::try_from(sample(exposition, &series)).expect("a count")
}

fn count(seen: &BTreeMap<Seen, usize>, answer: Seen) -> usize {
    seen.get(&answer).copied().unwrap_or(0)
}

/// Floods the listener `name` at `address` and checks its bound and its counts.
async fn flood(
    name: &str,
    address: SocketAddr,
    metrics: SocketAddr,
    request: &'static [u8],
    ok: u16,
) {
    let limits = Limits::default();
    let slots = limits.max_connections;
    // Sample the connections served at once until the flood is over.
    let most = Arc::new(AtomicI64::new(0));
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler = {
        let (most, series) = (
            Arc::clone(&most),
            format!("flotilla_http_connections{{listener=\"{name}\"}}"),
        );
        tokio::spawn(async move {
            loop {
                let now = sample(&scrape(metrics).await, &series);
                most.fetch_max(now, Ordering::Relaxed);
                tokio::select! {
                    _ = &mut stopped => return,
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        })
    };

    // Three times the slots: a slot each for the first, a queue place for the next, then none.
    let stalled = unfinished(address, 3 * slots).await;
    let served = complete(address, request).await;
    let _ = stop.send(());
    sampler.await.expect("the sampler ends");
    let exposition = scrape(metrics).await;

    let most = most.load(Ordering::Relaxed);
    eprintln!(
        "{name}: stalled {stalled:?}; complete {served:?}; at most {most} served at once; refused: {} busy, {} dropped, {} header_timeout",
        refused(&exposition, name, "busy"),
        refused(&exposition, name, "dropped"),
        refused(&exposition, name, "header_timeout")
    );
    assert!(
        most <= i64::try_from(slots).expect("slots"),
        "{name}: {most} connections served at once, over the bound of {slots}"
    );
    assert!(most > 0, "{name}: the flood was served at all");
    assert_eq!(
        count(&stalled, Seen::Status(503)) + count(&served, Seen::Status(503)),
        refused(&exposition, name, "busy"),
        "{name}: every 503 seen is counted as busy: {stalled:?} {served:?}\n{exposition}"
    );
    assert_eq!(
        count(&stalled, Seen::Closed) + count(&served, Seen::Closed),
        refused(&exposition, name, "dropped") + refused(&exposition, name, "header_timeout"),
        "{name}: every connection closed unanswered is counted: {stalled:?} {served:?}\n{exposition}"
    );
    assert!(
        refused(&exposition, name, "dropped") >= slots,
        "{name}: the stalled connections past the slots and the queue were dropped: {stalled:?}"
    );
    assert_eq!(
        refused(&exposition, name, "header_timeout"),
        slots,
        "{name}: each stalled connection that got a slot timed out: {stalled:?}"
    );
    assert!(
        count(&served, Seen::Status(ok)) > 0,
        "{name}: complete requests were answered during the flood: {served:?}"
    );
    let unexpected: Vec<_> = served
        .keys()
        .filter(|seen| {
            !matches!(seen, Seen::Closed | Seen::Status(503)) && **seen != Seen::Status(ok)
        })
        .collect();
    assert!(unexpected.is_empty(), "{name}: {served:?}");

    // Afterwards: nothing held, and a request is answered as before.
    eventually(&format!("{name}: no connection left open"), async || {
        let open = sample(
            &scrape(metrics).await,
            &format!("flotilla_http_connections{{listener=\"{name}\"}}"),
        );
        if open == 0 {
            Ok(())
        } else {
            Err(format!("{open} open"))
        }
    })
    .await;
    let mut stream = TcpStream::connect(address)
        .await
        .expect("connects after the flood");
    stream.write_all(request).await.expect("sends");
    assert_eq!(
        answer_of(stream).await,
        Seen::Status(ok),
        "{name} after the flood"
    );
}

#[tokio::test]
async fn the_web_view_and_webhook_listeners_keep_their_bounds_and_count_refusals_under_a_flood() {
    let ns = namespace(1, "flood").await;
    install_flotilla_crds(&ns.client).await;
    let address = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let (web, webhook, metrics) = (
        address(free_port()),
        address(free_port()),
        address(free_port()),
    );
    let _controller = controller_process_with(
        &ns,
        "flood",
        &[
            "--ui-addr",
            &web.to_string(),
            "--webhook-addr",
            &webhook.to_string(),
            "--metrics-addr",
            &metrics.to_string(),
        ],
    );
    for listener in [web, webhook, metrics] {
        eventually("the listeners to accept connections", async || {
            TcpStream::connect(listener)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .await;
    }
    // A request of no known provider: the receiver answers 400 without reading further.
    let hook: &'static [u8] = b"POST /api/webhook HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
    let page: &'static [u8] = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    tokio::join!(
        flood("webhook", webhook, metrics, hook, 400),
        flood("web", web, metrics, page, 200),
    );
}
