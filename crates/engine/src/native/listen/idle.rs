//! Which of a loopback server's connections are idle keep-alive ones, so
//! that one can give its slot up when every slot is taken and another
//! connection waits: a client inside the agent that leaves connections
//! open (an SDK client made per call and never closed) held every slot
//! until the oldest timed out, 10 s later, and waited on itself.
//!
//! A connection is busy from a request's headers until its answer's body
//! is written (or dropped); idle once it has answered at least one
//! request and is busy with none. A connection that has not sent a
//! request yet is not idle: it is cut off by the header timeout instead.

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::Notify;

/// The connections a server holds open.
#[derive(Default)]
pub(super) struct Open {
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
    /// Counts connections, and answers finished (the order idleness began).
    next: AtomicU64,
    ticks: Arc<AtomicU64>,
}

/// One connection's state.
pub(super) struct Conn {
    /// Requests in flight.
    busy: AtomicU64,
    /// When (by [`Open::ticks`]) its last answer finished; 0 before one did.
    idle_since: AtomicU64,
    ticks: Arc<AtomicU64>,
    /// Told to close (idle, to give its slot up).
    close: Notify,
}

/// A connection held among the open ones until this is dropped (its
/// task's end).
pub(super) struct Held {
    open: Arc<Open>,
    id: u64,
    pub(super) conn: Arc<Conn>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.open.lock().remove(&self.id);
    }
}

impl Open {
    /// A new connection, held until the [`Held`] is dropped.
    pub(super) fn add(self: &Arc<Self>) -> Held {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            busy: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            ticks: self.ticks.clone(),
            close: Notify::new(),
        });
        self.lock().insert(id, conn.clone());
        Held {
            open: self.clone(),
            id,
            conn,
        }
    }

    /// Tell the connection idle the longest to close; whether there was one.
    pub(super) fn close_idlest(&self) -> bool {
        let mut conns = self.lock();
        let idlest = (conns.iter())
            .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0)
            .filter_map(|(id, c)| match c.idle_since.load(Ordering::SeqCst) {
                0 => None,
                since => Some((since, *id)),
            })
            .min();
        let Some((_, id)) = idlest else {
            return false;
        };
        if let Some(conn) = conns.remove(&id) {
            conn.close.notify_one();
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Conn {
    /// Resolves once the connection is told to close.
    pub(super) async fn told_to_close(&self) {
        self.close.notified().await
    }
}

/// A request in flight on a connection, until its answer's body is done.
struct InFlight(Arc<Conn>);

impl InFlight {
    fn new(conn: Arc<Conn>) -> InFlight {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        InFlight(conn)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let tick = self.0.ticks.fetch_add(1, Ordering::Relaxed) + 1;
        self.0.idle_since.store(tick, Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The server's service, counting the requests in flight on `conn`.
pub(super) struct Counted<S> {
    pub(super) inner: S,
    pub(super) conn: Arc<Conn>,
}

impl<S> hyper::service::Service<Request<Incoming>> for Counted<S>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<axum::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Answer>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Answer>, S::Error>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::new(self.conn.clone());
        let answer = self.inner.call(req);
        Box::pin(async move {
            let answer = answer.await?;
            Ok(answer.map(|body| Answer {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// An answer's body, its request in flight until it is written or dropped.
pub(super) struct Answer {
    body: axum::body::Body,
    _in_flight: InFlight,
}

impl Body for Answer {
    type Data = <axum::body::Body as Body>::Data;
    type Error = <axum::body::Body as Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a connection that has answered and is busy with nothing is
    /// told to close, the one idle the longest first.
    #[test]
    fn the_connection_idle_the_longest_is_the_one_told_to_close() {
        let open = Arc::new(Open::default());
        let held = [open.add(), open.add(), open.add()];
        let [fresh, first, second] = [&held[0].conn, &held[1].conn, &held[2].conn];
        // None has answered yet: none is idle.
        assert!(!open.close_idlest());
        drop(InFlight::new(first.clone()));
        drop(InFlight::new(second.clone()));
        let busy = InFlight::new(first.clone());
        // `first` is busy again: `second` is the idle one.
        assert!(open.close_idlest());
        let told = |c: &Conn| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(10), c.told_to_close())
                    .await
                    .is_ok()
            })
        };
        assert!(told(second));
        assert!(!told(first) && !told(fresh));
        // Nothing else is idle until `first` answers.
        assert!(!open.close_idlest());
        drop(busy);
        assert!(open.close_idlest());
        assert!(told(first));
    }
}
