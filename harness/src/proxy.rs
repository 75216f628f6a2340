//! A JSON-RPC proxy that lies: put in front of a `curta-localnet`'s RPC
//! port (loopback only), it forwards each HTTP request and, by seeded
//! draws, injects the faults a shared RPC provider shows a client:
//!
//! - `drop`: reads the request and closes the connection, no answer;
//! - `delay`: answers after a pause of up to `delay_max`;
//! - `too_many` and `unavailable`: answers HTTP 429 (`Retry-After`) or 503
//!   without forwarding;
//! - `cut`: forwards, then writes the headers and half the body and closes;
//! - `stale_slot`: answers getSlot, getBlockHeight or getEpochInfo from an
//!   earlier answer to the same request (at most `stale_age` old);
//! - `stale_blockhash`: the same for getLatestBlockhash;
//! - `behind`: answers an account read that asks for a bank at least as
//!   recent as a slot (`minContextSlot`) as a node one slot behind it
//!   does: JSON-RPC error -32016, without forwarding;
//! - `rate_limit_forever`: every request answered 429;
//! - `swallow_sends`: the next N sendTransaction answered with the
//!   transaction's signature and never forwarded (an RPC that accepts and
//!   loses a transaction), so its blockhash expires unseen;
//! - `hold_sends`: each sendTransaction held that long before forwarding.
//!
//! Each draw comes from one seeded generator, in the order requests
//! arrive: a run's faults are the same sequence every time (which request
//! meets which one depends on the client's concurrency). It counts the
//! requests, those forwarded and each fault injected; with `record_sends`
//! it keeps every sendTransaction it saw, with the last valid block height
//! of its blockhash (from the getLatestBlockhash answers it relayed) and
//! the block height when it arrived (asked of the validator directly).
//!
//! Plain threads and std::net: one thread accepting, one per connection.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use solana_transaction::Transaction;

/// What to inject, and how often (each a share of requests, 0 to 1).
#[derive(Clone, Debug)]
pub struct Faults {
    pub seed: u64,
    pub drop: f64,
    pub delay: f64,
    pub delay_max: Duration,
    pub too_many: f64,
    /// The `Retry-After` of a 429, in seconds.
    pub retry_after: u64,
    pub unavailable: f64,
    pub cut: f64,
    pub stale_slot: f64,
    pub stale_blockhash: f64,
    pub behind: f64,
    pub stale_age: Duration,
    pub rate_limit_forever: bool,
    pub swallow_sends: u64,
    pub hold_sends: Duration,
    pub record_sends: bool,
}

impl Default for Faults {
    /// No faults.
    fn default() -> Faults {
        Faults {
            seed: 0,
            drop: 0.0,
            delay: 0.0,
            delay_max: Duration::from_millis(1_500),
            too_many: 0.0,
            retry_after: 0,
            unavailable: 0.0,
            cut: 0.0,
            stale_slot: 0.0,
            stale_blockhash: 0.0,
            behind: 0.0,
            stale_age: Duration::from_secs(20),
            rate_limit_forever: false,
            swallow_sends: 0,
            hold_sends: Duration::ZERO,
            record_sends: false,
        }
    }
}

/// Requests seen, forwarded, and each fault injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub requests: u64,
    pub forwarded: u64,
    pub dropped: u64,
    pub delayed: u64,
    pub too_many: u64,
    pub unavailable: u64,
    pub cut: u64,
    pub stale_slot: u64,
    pub stale_blockhash: u64,
    pub behind: u64,
    pub swallowed: u64,
    pub held: u64,
}

impl Counts {
    /// Faults injected, all kinds.
    pub fn faults(&self) -> u64 {
        self.dropped
            + self.delayed
            + self.too_many
            + self.unavailable
            + self.cut
            + self.stale_slot
            + self.stale_blockhash
            + self.behind
            + self.swallowed
            + self.held
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests, {} forwarded, {} faults ({} dropped, {} delayed, {} HTTP 429, {} HTTP \
             503, {} cut mid-answer, {} stale slots, {} stale blockhashes, {} reads behind their \
             slot, {} sends swallowed, {} sends held)",
            self.requests,
            self.forwarded,
            self.faults(),
            self.dropped,
            self.delayed,
            self.too_many,
            self.unavailable,
            self.cut,
            self.stale_slot,
            self.stale_blockhash,
            self.behind,
            self.swallowed,
            self.held
        )
    }
}

/// A sendTransaction the proxy saw (with `record_sends`).
#[derive(Clone, Debug)]
pub struct SentTx {
    pub tx: Transaction,
    /// The last valid block height of its blockhash, if the proxy relayed
    /// the getLatestBlockhash answer that gave it.
    pub last_valid: Option<u64>,
    /// The validator's block height (confirmed) when it arrived.
    pub height: u64,
    pub swallowed: bool,
}

enum Act {
    Forward,
    Drop,
    Delay(Duration),
    Status(u16),
    Cut,
    Stale(Value),
    /// A node behind the request's `minContextSlot`.
    Behind(u64),
    Swallow,
}

struct State {
    faults: Faults,
    rng: u64,
    counts: Counts,
    /// Earlier answers (method and params) to the requests stale answers
    /// come from, oldest first.
    answers: HashMap<String, VecDeque<(Instant, Value)>>,
    last_valid: HashMap<String, u64>,
    sends: Vec<SentTx>,
}

impl State {
    /// A draw in [0, 1) (splitmix64).
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The oldest answer to `key` at most `stale_age` old, when a newer
    /// one exists.
    fn stale(&self, key: &str) -> Option<Value> {
        let ring = self.answers.get(key)?;
        if ring.len() < 2 {
            return None;
        }
        ring.iter()
            .find(|(at, _)| at.elapsed() <= self.faults.stale_age)
            .filter(|(at, _)| Some(at) != ring.back().map(|(a, _)| a))
            .map(|(_, v)| v.clone())
    }

    fn decide(&mut self, method: &str, key: &str, min_context_slot: Option<u64>) -> Act {
        let f = self.faults.clone();
        if f.rate_limit_forever {
            self.counts.too_many += 1;
            return Act::Status(429);
        }
        if method == "sendTransaction" && f.swallow_sends > 0 {
            self.faults.swallow_sends -= 1;
            self.counts.swallowed += 1;
            return Act::Swallow;
        }
        let read = matches!(
            method,
            "getAccountInfo" | "getMultipleAccounts" | "getProgramAccounts"
        );
        if let (true, Some(slot)) = (read, min_context_slot) {
            if f.behind > 0.0 && self.draw() < f.behind {
                self.counts.behind += 1;
                return Act::Behind(slot);
            }
        }
        let stale_share = match method {
            "getSlot" | "getBlockHeight" | "getEpochInfo" => f.stale_slot,
            "getLatestBlockhash" => f.stale_blockhash,
            _ => 0.0,
        };
        if stale_share > 0.0 && self.draw() < stale_share {
            if let Some(v) = self.stale(key) {
                if method == "getLatestBlockhash" {
                    self.counts.stale_blockhash += 1;
                } else {
                    self.counts.stale_slot += 1;
                }
                return Act::Stale(v);
            }
        }
        let r = self.draw();
        let mut edge = 0.0;
        for (share, act) in [
            (f.drop, 0),
            (f.too_many, 1),
            (f.unavailable, 2),
            (f.cut, 3),
            (f.delay, 4),
        ] {
            edge += share;
            if r < edge {
                return match act {
                    0 => {
                        self.counts.dropped += 1;
                        Act::Drop
                    }
                    1 => {
                        self.counts.too_many += 1;
                        Act::Status(429)
                    }
                    2 => {
                        self.counts.unavailable += 1;
                        Act::Status(503)
                    }
                    3 => {
                        self.counts.cut += 1;
                        Act::Cut
                    }
                    _ => {
                        self.counts.delayed += 1;
                        let ms = f.delay_max.as_millis() as f64 * self.draw();
                        Act::Delay(Duration::from_millis(ms as u64))
                    }
                };
            }
        }
        Act::Forward
    }
}

struct Shared {
    upstream: SocketAddr,
    state: Mutex<State>,
    stop: AtomicBool,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps a sent transaction, with its blockhash's last valid height
    /// (from the answers relayed) and the validator's height now.
    fn record_send(&self, tx: Transaction, swallowed: bool) {
        let height = upstream_height(self.upstream);
        let mut st = self.state();
        let last_valid = st
            .last_valid
            .get(&tx.message.recent_blockhash.to_string())
            .copied();
        st.sends.push(SentTx {
            tx,
            last_valid,
            height,
            swallowed,
        });
    }
}

/// The proxy, listening on 127.0.0.1 (a free port) until dropped.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// In front of `upstream` ("http://127.0.0.1:PORT").
    pub fn start(upstream: &str, faults: Faults) -> io::Result<Proxy> {
        let hostport = upstream
            .strip_prefix("http://")
            .unwrap_or(upstream)
            .trim_end_matches('/');
        let upstream: SocketAddr = hostport
            .parse()
            .map_err(|e| io::Error::other(format!("upstream {upstream}: {e}")))?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(State {
                rng: faults.seed,
                faults,
                counts: Counts::default(),
                answers: HashMap::new(),
                last_valid: HashMap::new(),
                sends: vec![],
            }),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let accepting = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(&s, conn);
                });
            }
        });
        Ok(Proxy {
            addr,
            shared,
            accepting: Some(accepting),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// New faults from now on (the generator reseeded with their seed;
    /// the counts and what was recorded are kept).
    pub fn set_faults(&self, faults: Faults) {
        let mut st = self.shared.state();
        st.rng = faults.seed;
        st.faults = faults;
    }

    pub fn counts(&self) -> Counts {
        self.shared.state().counts
    }

    /// Every sendTransaction seen with `record_sends`, in arrival order.
    pub fn sends(&self) -> Vec<SentTx> {
        self.shared.state().sends.clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accepting.take() {
            let _ = t.join();
        }
    }
}

/// One HTTP request: its body, and whether the client asked to close the
/// connection after it (other headers are not needed).
fn read_request(r: &mut BufReader<TcpStream>) -> io::Result<Option<(Vec<u8>, bool)>> {
    let mut len = 0usize;
    let mut close = false;
    let mut first = true;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
            if k.trim().eq_ignore_ascii_case("connection") {
                close = v.trim().eq_ignore_ascii_case("close");
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok(Some((body, close)))
}

/// Posts `body` to the upstream on a connection of its own: the status
/// and the body of its answer.
fn forward(upstream: SocketAddr, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&upstream, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    write!(
        s,
        "POST / HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\nContent-Length: \
         {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut raw = vec![];
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("upstream answer without headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut rest = raw[split + 4..].to_vec();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("upstream status line: {head}")))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if chunked {
        rest = dechunk(&rest)?;
    }
    Ok((status, rest))
}

fn dechunk(mut b: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = vec![];
    loop {
        let eol = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| io::Error::other("bad chunk"))?;
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16)
            .map_err(|_| io::Error::other("bad chunk size"))?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(
            b.get(..size)
                .ok_or_else(|| io::Error::other("short chunk"))?,
        );
        b = b.get(size + 2..).unwrap_or_default();
    }
}

fn respond(w: &mut TcpStream, status: u16, body: &[u8], extra: &str) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    };
    write!(
        w,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}Content-Length: \
         {}\r\n\r\n",
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
}

/// The validator's confirmed block height, asked directly.
fn upstream_height(upstream: SocketAddr) -> u64 {
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "getBlockHeight",
                     "params": [{"commitment": "confirmed"}]});
    forward(upstream, req.to_string().as_bytes())
        .ok()
        .and_then(|(_, b)| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["result"].as_u64())
        .unwrap_or(0)
}

fn decode_tx(params: &Value) -> Option<Transaction> {
    use base64::Engine;
    let raw = params[0].as_str()?;
    let bytes = if params[1]["encoding"].as_str() == Some("base64") {
        base64::engine::general_purpose::STANDARD.decode(raw).ok()?
    } else {
        return None;
    };
    bincode::deserialize(&bytes).ok()
}

fn serve(s: &Shared, conn: TcpStream) -> io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut w = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    while let Some((body, close)) = read_request(&mut r)? {
        if s.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = req["method"].as_str().unwrap_or("").to_string();
        let key = format!("{method} {}", req["params"]);
        let min_context_slot = req["params"]
            .as_array()
            .and_then(|p| p.iter().find_map(|a| a["minContextSlot"].as_u64()));
        let (act, retry_after, hold, record) = {
            let mut st = s.state();
            st.counts.requests += 1;
            let act = st.decide(&method, &key, min_context_slot);
            let f = &st.faults;
            (act, f.retry_after, f.hold_sends, f.record_sends)
        };
        let is_send = method == "sendTransaction";
        match act {
            Act::Drop => {
                let _ = w.shutdown(Shutdown::Both);
                return Ok(());
            }
            Act::Status(status) => {
                let extra = if status == 429 {
                    format!("Retry-After: {retry_after}\r\n")
                } else {
                    String::new()
                };
                respond(&mut w, status, b"", &extra)?;
                if close {
                    return Ok(());
                }
                continue;
            }
            Act::Stale(mut v) => {
                v["id"] = req["id"].clone();
                respond(&mut w, 200, v.to_string().as_bytes(), "")?;
                if close {
                    return Ok(());
                }
                continue;
            }
            Act::Behind(slot) => {
                let v = json!({"jsonrpc": "2.0", "id": req["id"], "error": {
                    "code": -32016,
                    "message": "Minimum context slot has not been reached",
                    "data": {"contextSlot": slot.saturating_sub(1)},
                }});
                respond(&mut w, 200, v.to_string().as_bytes(), "")?;
                if close {
                    return Ok(());
                }
                continue;
            }
            Act::Swallow => {
                let tx = decode_tx(&req["params"]);
                let sig = tx.as_ref().map(|t| t.signatures[0].to_string());
                if let Some(tx) = tx {
                    s.record_send(tx, true);
                }
                let v = json!({"jsonrpc": "2.0", "result": sig, "id": req["id"]});
                respond(&mut w, 200, v.to_string().as_bytes(), "")?;
                if close {
                    return Ok(());
                }
                continue;
            }
            Act::Delay(d) => std::thread::sleep(d),
            Act::Forward | Act::Cut => {}
        }
        if is_send {
            if !hold.is_zero() {
                s.state().counts.held += 1;
                std::thread::sleep(hold);
            }
            if record {
                if let Some(tx) = decode_tx(&req["params"]) {
                    s.record_send(tx, false);
                }
            }
        }
        let (status, answer) = match forward(s.upstream, &body) {
            Ok(a) => a,
            Err(_) => {
                // The validator did not answer: neither does the proxy.
                let _ = w.shutdown(Shutdown::Both);
                return Ok(());
            }
        };
        {
            let mut st = s.state();
            st.counts.forwarded += 1;
            if let Ok(v) = serde_json::from_slice::<Value>(&answer) {
                if method == "getLatestBlockhash" {
                    let value = &v["result"]["value"];
                    if let (Some(h), Some(l)) = (
                        value["blockhash"].as_str(),
                        value["lastValidBlockHeight"].as_u64(),
                    ) {
                        st.last_valid.insert(h.to_string(), l);
                    }
                }
                if matches!(
                    method.as_str(),
                    "getSlot" | "getBlockHeight" | "getEpochInfo" | "getLatestBlockhash"
                ) && v["result"] != Value::Null
                {
                    let age = st.faults.stale_age;
                    let ring = st.answers.entry(key).or_default();
                    ring.push_back((Instant::now(), v));
                    while ring.len() > 512
                        || ring.front().is_some_and(|(at, _)| at.elapsed() > 2 * age)
                    {
                        ring.pop_front();
                    }
                }
            }
        }
        if matches!(act, Act::Cut) {
            let half = &answer[..answer.len() / 2];
            write!(
                w,
                "HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                answer.len()
            )?;
            w.write_all(half)?;
            let _ = w.flush();
            let _ = w.shutdown(Shutdown::Both);
            return Ok(());
        }
        respond(&mut w, status, &answer, "")?;
        if close {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in validator: answers getSlot with a counter, anything else
    /// with the method's name.
    fn fake_upstream() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut slot = 0u64;
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                let Ok(Some((body, _))) = read_request(&mut r) else {
                    continue;
                };
                let req: Value = serde_json::from_slice(&body).unwrap();
                let result = if req["method"] == "getSlot" {
                    slot += 1;
                    json!(slot)
                } else {
                    req["method"].clone()
                };
                let v = json!({"jsonrpc": "2.0", "result": result, "id": req["id"]});
                // Chunked, as hyper may answer.
                let b = v.to_string();
                let _ = write!(
                    w,
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                    b.len()
                );
            }
        });
        addr
    }

    /// One request on a connection of its own: the status and the body,
    /// or `None` when the connection closed without a whole answer.
    fn call(proxy: &Proxy, method: &str, id: u64) -> Option<(u16, Value)> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": []}).to_string();
        let (status, answer) = forward(proxy.addr, body.as_bytes()).ok()?;
        if status != 200 {
            return Some((status, Value::Null));
        }
        Some((status, serde_json::from_slice(&answer).ok()?))
    }

    #[test]
    fn injects_each_fault_and_counts_it() {
        let up = fake_upstream();
        let proxy = Proxy::start(&format!("http://{up}"), Faults::default()).unwrap();
        // Clean: forwarded, answered, ids kept.
        let (s, v) = call(&proxy, "getSlot", 7).unwrap();
        assert_eq!(
            (s, v["result"].as_u64(), v["id"].as_u64()),
            (200, Some(1), Some(7))
        );
        let (_, v) = call(&proxy, "getSlot", 8).unwrap();
        assert_eq!(v["result"], 2);

        // Stale slots: an earlier answer, with this request's id.
        proxy.set_faults(Faults {
            stale_slot: 1.0,
            ..Faults::default()
        });
        let (_, v) = call(&proxy, "getSlot", 9).unwrap();
        assert_eq!((v["result"].as_u64(), v["id"].as_u64()), (Some(1), Some(9)));
        assert_eq!(proxy.counts().stale_slot, 1);
        // Other methods are not slot answers: forwarded.
        let (_, v) = call(&proxy, "getBalance", 10).unwrap();
        assert_eq!(v["result"], "getBalance");

        // Behind: a read naming a minContextSlot is refused as a node one
        // slot behind it refuses it; one naming none is forwarded.
        proxy.set_faults(Faults {
            behind: 1.0,
            ..Faults::default()
        });
        let read = |params: Value| {
            let body =
                json!({"jsonrpc": "2.0", "id": 11, "method": "getAccountInfo", "params": params});
            let (_, answer) = forward(proxy.addr, body.to_string().as_bytes()).unwrap();
            serde_json::from_slice::<Value>(&answer).unwrap()
        };
        let v = read(json!(["11111111111111111111111111111111", {"minContextSlot": 40}]));
        assert_eq!(
            (
                v["error"]["code"].as_i64(),
                v["error"]["data"]["contextSlot"].as_u64()
            ),
            (Some(-32016), Some(39)),
            "{v}"
        );
        assert_eq!(v["id"], 11);
        let v = read(json!(["11111111111111111111111111111111", {"encoding": "base64"}]));
        assert_eq!(v["result"], "getAccountInfo");
        assert_eq!(proxy.counts().behind, 1);

        proxy.set_faults(Faults {
            rate_limit_forever: true,
            retry_after: 3,
            ..Faults::default()
        });
        assert_eq!(call(&proxy, "getSlot", 11).map(|a| a.0), Some(429));
        proxy.set_faults(Faults {
            unavailable: 1.0,
            ..Faults::default()
        });
        assert_eq!(call(&proxy, "getSlot", 12).map(|a| a.0), Some(503));
        proxy.set_faults(Faults {
            drop: 1.0,
            ..Faults::default()
        });
        assert!(forward(proxy.addr, b"{\"method\":\"getSlot\",\"id\":1}").is_err());
        // Cut: the headers promise more than arrives, and the JSON is
        // broken.
        proxy.set_faults(Faults {
            cut: 1.0,
            ..Faults::default()
        });
        assert!(call(&proxy, "getSlot", 13).is_none());

        // Half of the requests delayed (by up to 10 ms), the same draws for
        // the same seed.
        let delayed = |seed| {
            proxy.set_faults(Faults {
                seed,
                delay: 0.5,
                delay_max: Duration::from_millis(10),
                ..Faults::default()
            });
            let before = proxy.counts().delayed;
            for i in 0..40 {
                assert!(call(&proxy, "getHealth", i).is_some());
            }
            proxy.counts().delayed - before
        };
        let (a, b) = (delayed(5), delayed(5));
        assert_eq!(a, b, "seeded");
        assert!((10..=30).contains(&a), "{a} of 40 delayed");

        let c = proxy.counts();
        assert_eq!((c.too_many, c.unavailable, c.dropped, c.cut), (1, 1, 1, 1));
        assert_eq!(c.requests, 4 + 6 + 80);
        // The stale answer, the read behind, the 429, the 503 and the drop
        // were never forwarded (the cut one was).
        assert_eq!(c.forwarded, c.requests - 5);
        assert_eq!(c.faults(), 6 + 2 * a);
    }

    #[test]
    fn swallowed_sends_are_answered_with_their_signature() {
        use solana_keypair::Keypair;
        use solana_signer::Signer;
        let up = fake_upstream();
        let proxy = Proxy::start(
            &format!("http://{up}"),
            Faults {
                swallow_sends: 1,
                ..Faults::default()
            },
        )
        .unwrap();
        let payer = Keypair::new();
        let ix =
            solana_system_interface::instruction::transfer(&payer.pubkey(), &payer.pubkey(), 1);
        let tx = Transaction::new_signed_with_payer(
            &[ix],
            Some(&payer.pubkey()),
            &[&payer],
            Default::default(),
        );
        use base64::Engine;
        let wire =
            base64::engine::general_purpose::STANDARD.encode(bincode::serialize(&tx).unwrap());
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "sendTransaction",
                          "params": [wire, {"encoding": "base64"}]})
        .to_string();
        let (_, a) = forward(proxy.addr, body.as_bytes()).unwrap();
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(
            v["result"].as_str(),
            Some(tx.signatures[0].to_string().as_str())
        );
        // The next one is forwarded.
        let (_, a) = forward(proxy.addr, body.as_bytes()).unwrap();
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["result"], "sendTransaction");
        let c = proxy.counts();
        assert_eq!((c.swallowed, c.forwarded), (1, 1));
        assert_eq!(proxy.sends().len(), 1);
        assert!(proxy.sends()[0].swallowed);
    }
}
