//! The one place the client retries an RPC request: an [`RpcSender`] over
//! Agave's [`HttpSender`] that sends a request again, after an
//! exponentially growing pause, when the answer never came or came
//! unusable: a transport error (a refused, reset or timed-out connection,
//! a body cut short), HTTP 429 Too Many Requests (which `HttpSender`
//! itself first retries five times, honouring `Retry-After`) and HTTP 5xx;
//! and a node behind the slot the client asked it to read at least
//! (`minContextSlot`, JSON-RPC error -32016), which catches up. Any other
//! answer of the node's own (a JSON-RPC error: a preflight refusal, an
//! unknown account) is final and never retried.
//!
//! Sending any request again is safe: every call the client makes reads,
//! except `sendTransaction`, and a signed transaction sent twice is one
//! signature, which the cluster takes once. What a `sendTransaction` whose
//! every attempt failed did is unknown: `Cluster::send` then keeps it in
//! flight, journaled, and the signature's status says later whether it
//! landed; it is signed anew only once its blockhash can no longer land.
//!
//! When the retries run out the error says in one line what the RPC did
//! and for how long: "the RPC at URL rate-limits (HTTP 429 Too Many
//! Requests): 8 retries over 21 s did not get through". Until the RPC has
//! answered once, a refused connection is retried only twice: a wrong
//! --url fails in a second.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use solana_rpc_client::http_sender::HttpSender;
use solana_rpc_client::rpc_sender::{RpcSender, RpcTransportStats};
use solana_rpc_client_api::client_error::{Error as ClientError, ErrorKind, Result};
use solana_rpc_client_api::request::{RpcError, RpcRequest};

/// How many times, and how far apart, a request is sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The pause before the first retry; each next one doubles it.
    pub base: Duration,
    /// The longest pause.
    pub cap: Duration,
}

impl Default for Policy {
    /// 8 retries, 250 ms doubling to at most 8 s: about 25 s of pauses
    /// (besides `HttpSender`'s own 429 retries), enough to ride out a
    /// restarting node or a short rate limit, short enough that a user sees
    /// an RPC that is gone in well under a minute.
    fn default() -> Self {
        Policy {
            retries: 8,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(8),
        }
    }
}

impl Policy {
    /// The pause before retry `n` (0 for the first).
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }
}

/// Why a request may be sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx, with its status.
    Unavailable(u16),
    /// No usable answer: the connection failed, was reset or timed out,
    /// or the body was cut short or unreadable.
    Transport,
    /// The node has not reached the request's `minContextSlot`.
    Behind,
}

/// The JSON-RPC error of a node that has not reached a request's
/// `minContextSlot`.
pub const MIN_CONTEXT_SLOT_NOT_REACHED: i64 = -32016;

/// Whether an error is worth a retry, and why.
pub fn classify(e: &ClientError) -> Option<Fault> {
    match e.kind() {
        ErrorKind::Reqwest(r) => match r.status() {
            Some(s) if s.as_u16() == 429 => Some(Fault::RateLimited),
            Some(s) if s.is_server_error() => Some(Fault::Unavailable(s.as_u16())),
            Some(_) => None,
            None => Some(Fault::Transport),
        },
        ErrorKind::RpcError(RpcError::RpcResponseError { code, .. })
            if *code == MIN_CONTEXT_SLOT_NOT_REACHED =>
        {
            Some(Fault::Behind)
        }
        ErrorKind::Io(_) => Some(Fault::Transport),
        ErrorKind::Middleware(_) => Some(Fault::Transport),
        _ => None,
    }
}

/// The one-line error of a request that ran out of retries.
pub fn gave_up(url: &str, fault: Fault, cause: &str, retries: u32, elapsed: Duration) -> String {
    let what = match fault {
        Fault::RateLimited => format!("the RPC at {url} rate-limits (HTTP 429 Too Many Requests)"),
        Fault::Unavailable(status) => format!("the RPC at {url} answers HTTP {status}"),
        Fault::Transport => format!("the RPC at {url} does not answer ({cause})"),
        Fault::Behind => format!(
            "the RPC at {url} stays behind the slot this client last saw a transaction land in"
        ),
    };
    let hint = match fault {
        Fault::Transport => "; is the validator running and --url right?",
        _ => "",
    };
    format!(
        "{what}: {retries} retries over {:.0} s did not get through{hint}",
        elapsed.as_secs_f64()
    )
}

/// Retries of a refused connection before the RPC has ever answered.
const FIRST_RETRIES: u32 = 2;

/// `HttpSender` with retries (see the module's comment).
pub struct RetryingSender {
    inner: HttpSender,
    policy: Policy,
    retried: AtomicU64,
    /// Whether the RPC has answered once: until it has, a request whose
    /// connection is refused is retried at most twice, so that a wrong
    /// --url fails in a second, not after the whole policy.
    answered: AtomicBool,
}

impl RetryingSender {
    pub fn new(url: &str, timeout: Duration, policy: Policy) -> RetryingSender {
        RetryingSender {
            inner: HttpSender::new_with_timeout(url, timeout),
            policy,
            retried: AtomicU64::new(0),
            answered: AtomicBool::new(false),
        }
    }

    /// Requests sent again so far.
    pub fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl RpcSender for RetryingSender {
    async fn send(
        &self,
        request: RpcRequest,
        params: serde_json::Value,
    ) -> Result<serde_json::Value> {
        let started = Instant::now();
        let mut n = 0;
        loop {
            let e = match self.inner.send(request, params.clone()).await {
                Ok(v) => {
                    self.answered.store(true, Ordering::Relaxed);
                    return Ok(v);
                }
                Err(e) => e,
            };
            let Some(fault) = classify(&e) else {
                return Err(e);
            };
            let refused = matches!(e.kind(), ErrorKind::Reqwest(r) if r.is_connect());
            let retries = match !self.answered.load(Ordering::Relaxed) && refused {
                true => self.policy.retries.min(FIRST_RETRIES),
                false => self.policy.retries,
            };
            if n >= retries {
                return Err(ErrorKind::Custom(gave_up(
                    &self.inner.url(),
                    fault,
                    &e.to_string(),
                    n,
                    started.elapsed(),
                ))
                .into());
            }
            tokio::time::sleep(self.policy.delay(n)).await;
            self.retried.fetch_add(1, Ordering::Relaxed);
            n += 1;
        }
    }

    fn get_transport_stats(&self) -> RpcTransportStats {
        self.inner.get_transport_stats()
    }

    fn url(&self) -> String {
        self.inner.url()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = Policy::default();
        let delays: Vec<u64> = (0..10).map(|n| p.delay(n).as_millis() as u64).collect();
        assert_eq!(
            delays,
            [250, 500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000, 8_000, 8_000]
        );
        let total: Duration = (0..p.retries).map(|n| p.delay(n)).sum();
        assert_eq!(total, Duration::from_millis(31_750));
        // No overflow, however many retries.
        assert_eq!(p.delay(u32::MAX), p.cap);
    }

    #[test]
    fn only_missing_or_unusable_answers_are_retried() {
        use solana_rpc_client_api::request::RpcResponseErrorData;
        let io: ClientError =
            std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset").into();
        assert_eq!(classify(&io), Some(Fault::Transport));
        let node: ClientError = RpcError::RpcResponseError {
            code: -32002,
            message: "preflight".into(),
            data: RpcResponseErrorData::Empty,
        }
        .into();
        assert_eq!(classify(&node), None);
        let behind: ClientError = RpcError::RpcResponseError {
            code: MIN_CONTEXT_SLOT_NOT_REACHED,
            message: "Minimum context slot has not been reached".into(),
            data: RpcResponseErrorData::Empty,
        }
        .into();
        assert_eq!(classify(&behind), Some(Fault::Behind));
        let custom: ClientError = ErrorKind::Custom("x".into()).into();
        assert_eq!(classify(&custom), None);
    }

    #[test]
    fn a_rate_limit_gives_up_in_one_line() {
        let m = gave_up(
            "http://127.0.0.1:1",
            Fault::RateLimited,
            "429",
            8,
            Duration::from_millis(21_400),
        );
        assert_eq!(
            m,
            "the RPC at http://127.0.0.1:1 rate-limits (HTTP 429 Too Many Requests): 8 retries \
             over 21 s did not get through"
        );
        assert!(!m.contains('\n'));
    }

    #[tokio::test]
    async fn a_wrong_url_fails_fast() {
        // A port nothing listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let sender = RetryingSender::new(&url, Duration::from_secs(5), Policy::default());
        let started = Instant::now();
        let e = sender
            .send(RpcRequest::GetGenesisHash, serde_json::Value::Null)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("Custom: the RPC at {url} does not answer ("))
                && e.contains("2 retries over")
                && e.ends_with("did not get through; is the validator running and --url right?"),
            "{e}"
        );
    }

    /// Against a local server: a request that only ever gets 503 gives up
    /// after the policy's retries, in words; one that gets 429 (with
    /// `Retry-After: 0`, which `HttpSender` retries itself), then a dropped
    /// connection, then an answer, gets through after one retry.
    #[tokio::test]
    async fn retries_until_an_answer() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let answers = [503, 503, 503, 429, 0, 200];
            for status in answers {
                let (mut s, _) = listener.accept().unwrap();
                let mut buf = vec![0u8; 65536];
                let mut got = vec![];
                while !String::from_utf8_lossy(&got).contains("\"method\"") {
                    let n = s.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let body = r#"{"jsonrpc":"2.0","result":42,"id":0}"#;
                let reply = match status {
                    0 => String::new(),
                    200 => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \
                         {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    s => format!(
                        "HTTP/1.1 {s} Busy\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: \
                         close\r\n\r\n"
                    ),
                };
                let _ = s.write_all(reply.as_bytes());
            }
        });
        let policy = Policy {
            retries: 2,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(4),
        };
        let sender = RetryingSender::new(&url, Duration::from_secs(5), policy);
        let e = sender
            .send(RpcRequest::GetSlot, serde_json::Value::Null)
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("answers HTTP 503: 2 retries over 0 s"),
            "{e}"
        );
        let v = sender
            .send(RpcRequest::GetSlot, serde_json::Value::Null)
            .await
            .unwrap();
        assert_eq!(v, 42);
        assert_eq!(sender.retried(), 3);
        server.join().unwrap();
    }
}
