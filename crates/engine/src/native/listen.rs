//! The accept loop of a loopback server (`--exec`, `mcp --http`, `serve`
//! and `ui`):
//! at most [`MAX_CONNECTIONS`] connections at once (more wait in the
//! kernel's queue), HTTP/1 only, and a connection that has not sent a
//! request's headers [`HEADERS_WITHIN`] after it began waiting for them
//! (an idle keep-alive connection included) is closed. When every slot
//! is taken and another connection comes, the connection idle the longest
//! is closed for it ([`idle`]). A request received whole is answered (so
//! mediated and recorded) even when the client has shut its side since.
//! What a request may do once its headers are in is the request guard's
//! ([`super::guard`]).

mod idle;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// Connections served at once.
pub const MAX_CONNECTIONS: u32 = 64;

/// Time for a request's headers, from when the connection waits for them.
pub const HEADERS_WITHIN: Duration = Duration::from_secs(10);

/// How long, once the server is told to stop, requests in flight get to
/// finish (a DELETE that ended the session gets its answer).
const FINISH_WITHIN: Duration = Duration::from_secs(2);

/// Serve `app` on `listener` until `shutdown` resolves, then let the
/// requests in flight finish (for at most [`FINISH_WITHIN`]).
pub async fn serve(listener: TcpListener, app: axum::Router, shutdown: impl Future<Output = ()>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS as usize));
    let open = Arc::new(idle::Open::default());
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (slot, accepted) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (Ok(slot), None),
            // Every slot taken: a connection that comes now gets the slot
            // of the one idle the longest, or waits for one to end.
            Err(_) => tokio::select! {
                slot = slots.clone().acquire_owned() => (slot, None),
                accepted = listener.accept() => {
                    open.close_idlest();
                    tokio::select! {
                        slot = slots.clone().acquire_owned() => (slot, Some(accepted)),
                        () = &mut shutdown => break,
                    }
                }
                () = &mut shutdown => break,
            },
        };
        let Ok(slot) = slot else { break };
        let stream = match accepted {
            Some(accepted) => accepted,
            None => tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut shutdown => break,
            },
        };
        let Ok((stream, _)) = stream else {
            // Out of descriptors, or a connection reset before it was
            // accepted: try again shortly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let held = open.add();
        let service = idle::Counted {
            inner: TowerToHyperService::new(app.clone()),
            conn: held.conn.clone(),
        };
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut builder = hyper::server::conn::http1::Builder::new();
            // A request received whole is answered, and so mediated and
            // recorded, whatever the client does next: closing its side
            // ended the connection with the requests still to be answered
            // dropped, so one run of a sequential agent recorded them and
            // the next did not, by timing (a replay diverged).
            builder
                .timer(TokioTimer::new())
                .half_close(true)
                .header_read_timeout(HEADERS_WITHIN);
            // Upgrades allowed (`serve`'s WebSockets): a connection that
            // upgraded leaves this loop's count once handed over.
            let conn = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = stopping.wait_for(|s| *s) => {}
                () = held.conn.told_to_close() => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(FINISH_WITHIN, conn).await;
        });
    }
    let _ = stop.send(true);
    // Every slot back: every connection finished (or gave up).
    let _ = tokio::time::timeout(
        FINISH_WITHIN + Duration::from_millis(100),
        slots.acquire_many(MAX_CONNECTIONS),
    )
    .await;
}
