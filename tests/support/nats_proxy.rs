//! A TCP proxy in front of a real `nats-server` that reads the NATS client protocol frame by
//! frame and holds the frames a test names until it releases them: a deterministic way to put
//! one process's step between two steps of another (a race made to happen every time, without
//! sleeps). Everything else passes through unchanged and at once.
//!
//! A rule holds every frame it matches until it is released (a client that times out and
//! publishes again is held again). A held frame from a client (`PUB`, `HPUB`) is held alone,
//! later frames pass it. A held frame to a client (`MSG`, `HMSG`) holds its subscription:
//! later frames of the same subscription id (its heartbeats included) wait behind it, so the
//! subscriber sees them in order once released.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which way a frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    ToServer,
    ToClient,
}

/// One protocol frame: its control line and its payload (both with their `\r\n`).
pub struct Frame {
    pub way: Way,
    /// `PUB`, `HPUB`, `MSG`, `HMSG`, `PING`, ...
    pub op: String,
    /// The subject of a publish or a message (empty otherwise).
    pub subject: String,
    /// The connection and subscription id of a message to a client.
    sid: Option<String>,
    head: Vec<u8>,
    payload: Vec<u8>,
}

impl Frame {
    /// A publish from a client whose subject starts with `prefix`.
    pub fn publishes(&self, prefix: &str) -> bool {
        self.way == Way::ToServer
            && (self.op == "PUB" || self.op == "HPUB")
            && self.subject.starts_with(prefix)
    }

    /// A message to a client on `subject` whose payload holds `text`.
    pub fn delivers(&self, subject: &str, text: &str) -> bool {
        self.way == Way::ToClient
            && (self.op == "MSG" || self.op == "HMSG")
            && self.subject == subject
            && String::from_utf8_lossy(&self.payload).contains(text)
    }
}

type Matcher = Box<dyn Fn(&Frame) -> bool + Send>;
type Writer = Arc<Mutex<TcpStream>>;

#[derive(Default)]
struct State {
    /// Rules not yet released: each holds the frames it matches.
    armed: Vec<(String, Matcher)>,
    /// Held frames by rule, in order, with where each goes.
    held: HashMap<String, Vec<(Writer, Vec<u8>)>>,
    /// Subscriptions whose messages wait behind a held one, and the rule holding them.
    blocked: HashMap<String, String>,
}

pub struct NatsProxy {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl NatsProxy {
    /// Listens on a free loopback port; every connection is relayed to `server_port`.
    pub fn start(server_port: u16) -> NatsProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("addr").port();
        let state: Arc<Mutex<State>> = Arc::default();
        let shared = state.clone();
        std::thread::spawn(move || {
            for (conn, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                relay(conn, client, server, &shared);
            }
        });
        NatsProxy { port, state }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Holds every frame `matches` accepts (from any connection) until [`release`].
    ///
    /// [`release`]: NatsProxy::release
    pub fn hold(&self, name: &str, matches: impl Fn(&Frame) -> bool + Send + 'static) {
        self.lock().armed.push((name.to_owned(), Box::new(matches)));
    }

    /// Polls until rule `name` holds a frame (at most 60 s).
    pub fn wait_held(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.lock().held.contains_key(name) {
            assert!(Instant::now() < deadline, "nothing was held for {name}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends on what rule `name` held, in order, and ends the rule: what it would have
    /// matched from now on passes, its subscription flows again.
    pub fn release(&self, name: &str) {
        let mut s = self.lock();
        s.armed.retain(|(rule, _)| rule != name);
        s.blocked.retain(|_, rule| rule != name);
        for (to, bytes) in s.held.remove(name).unwrap_or_default() {
            let _ = to.lock().expect("writer").write_all(&bytes);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("proxy state")
    }
}

fn relay(conn: usize, client: TcpStream, server: TcpStream, state: &Arc<Mutex<State>>) {
    let to_server: Writer = Arc::new(Mutex::new(server.try_clone().expect("clone")));
    let to_client: Writer = Arc::new(Mutex::new(client.try_clone().expect("clone")));
    for (from, to, way) in [
        (client, to_server, Way::ToServer),
        (server, to_client, Way::ToClient),
    ] {
        let state = state.clone();
        std::thread::spawn(move || {
            pump(conn, from, &to, way, &state);
            let _ = to.lock().expect("writer").shutdown(Shutdown::Both);
        });
    }
}

/// Relays frames from `from` to `to` until either side closes.
fn pump(conn: usize, from: TcpStream, to: &Writer, way: Way, state: &Mutex<State>) {
    let mut reader = BufReader::new(from);
    while let Some(frame) = read_frame(&mut reader, way, conn) {
        let mut bytes = frame.head.clone();
        bytes.extend_from_slice(&frame.payload);
        {
            let mut s = state.lock().expect("proxy state");
            if let Some(rule) = holder(&mut s, &frame) {
                s.held.entry(rule).or_default().push((to.clone(), bytes));
                continue;
            }
        }
        if to.lock().expect("writer").write_all(&bytes).is_err() {
            return;
        }
    }
}

/// The rule that holds `frame`, if any.
fn holder(s: &mut State, frame: &Frame) -> Option<String> {
    if let Some(rule) = frame.sid.as_ref().and_then(|sid| s.blocked.get(sid)) {
        return Some(rule.clone());
    }
    let rule = s.armed.iter().find(|(_, m)| m(frame))?.0.clone();
    if let Some(sid) = &frame.sid {
        s.blocked.insert(sid.clone(), rule.clone());
    }
    Some(rule)
}

fn read_frame(reader: &mut BufReader<TcpStream>, way: Way, conn: usize) -> Option<Frame> {
    let mut head = Vec::new();
    if reader.read_until(b'\n', &mut head).ok()? == 0 {
        return None;
    }
    let line = String::from_utf8_lossy(&head).trim_end().to_owned();
    let words: Vec<&str> = line.split_whitespace().collect();
    let op = words
        .first()
        .map(|w| w.to_ascii_uppercase())
        .unwrap_or_default();
    // Publishes and messages end their control line with the payload's size in bytes.
    let sized = matches!(op.as_str(), "PUB" | "HPUB" | "MSG" | "HMSG");
    let mut payload = Vec::new();
    if sized {
        let size: usize = words.last()?.parse().ok()?;
        payload = vec![0; size + 2];
        reader.read_exact(&mut payload).ok()?;
    }
    let message = op == "MSG" || op == "HMSG";
    Some(Frame {
        way,
        subject: if sized {
            words.get(1).map(|w| (*w).to_owned()).unwrap_or_default()
        } else {
            String::new()
        },
        sid: message
            .then(|| words.get(2).map(|w| format!("{conn}/{w}")))
            .flatten(),
        op,
        head,
        payload,
    })
}
