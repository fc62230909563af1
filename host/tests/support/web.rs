//! HTTP from the tests' side: a free loopback port for `duetime run --http`, a plain GET,
//! the Prometheus text parsed into samples, and a tiny listener standing in for a webhook.

#![allow(dead_code)] // each test file uses what it needs

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:port: the status and the body, `None` while nothing listens.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// A sample's name and labels as written (`x_total{job="a"}`) to its value.
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// The requests a fake webhook received (their bodies), answering 500 to the first
/// `fail_first` and 200 to the rest.
#[derive(Clone, Default)]
pub struct Hook {
    pub bodies: Arc<Mutex<Vec<String>>>,
    pub port: u16,
}

impl Hook {
    pub fn start(fail_first: usize) -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let hook = Hook {
            bodies: Arc::default(),
            port: listener.local_addr().unwrap().port(),
        };
        let bodies = hook.bodies.clone();
        std::thread::spawn(move || {
            for (i, conn) in listener.incoming().enumerate() {
                let Ok(mut conn) = conn else { continue };
                let body = read_request(&mut conn);
                bodies.lock().unwrap().push(body);
                let status = if i < fail_first {
                    "500 Internal Server Error"
                } else {
                    "200 OK"
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        });
        hook
    }

    pub fn received(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

fn read_request(conn: &mut TcpStream) -> String {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(conn);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    String::from_utf8_lossy(&body).into_owned()
}
