//! A small Chrome DevTools Protocol client: headless Chromium driven over
//! `--remote-debugging-pipe` (the browser reads commands on its fd 3 and writes replies
//! and events on its fd 4, each message JSON ended by a NUL byte), for the tests that
//! look at a report as a user's browser shows it.
//!
//! [`Browser::launch`] starts Chromium in a process group of its own with a fresh
//! profile; [`Browser::open`] gives a [`Page`] (a target attached with a flat session,
//! its console, log and network events recorded). Every wait has a deadline: a browser
//! that hangs or dies fails the test with what it had said so far, and dropping the
//! [`Browser`] kills its whole process group.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long any one command or event may take before the test fails (unless
/// [`Page::set_wait`] says otherwise).
const WAIT: Duration = Duration::from_secs(30);

/// Chromium's binary, or a failure that says how to install it.
pub fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| load::find_in_path(n))
        .expect("chromium is not installed: apt install chromium (scripts/install-deps does)")
}

/// A running headless Chromium and the pipe to it.
pub struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    next_id: u64,
    wait: Duration,
    /// Every event received so far, in order (for the failure message and the pages).
    events: Vec<Value>,
    stderr_path: PathBuf,
    _profile: tempfile::TempDir,
}

/// What went wrong on the page while it was open.
#[derive(Debug, Default, Clone)]
pub struct PageLog {
    /// `console.error` and `console.assert` calls, uncaught exceptions and log entries
    /// of level error, one line each.
    pub errors: Vec<String>,
    /// Every URL the page requested, in order.
    pub requests: Vec<String>,
}

/// One tab, attached with a flat session.
pub struct Page<'b> {
    browser: &'b mut Browser,
    session: String,
    /// Index into `browser.events` up to which this page's events were read.
    seen: usize,
}

/// A pipe whose ends are closed on exec (so no other child of this test binary keeps
/// one open): (read, write).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded, so both are open descriptors this process owns.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    /// Starts headless Chromium with the flags of a closed network (no background
    /// requests, no QUIC, no sync) and a fresh profile.
    pub fn launch() -> Browser {
        use std::os::fd::AsRawFd;
        let profile = tempfile::Builder::new()
            .prefix("audiolat-chromium-")
            .tempdir()
            .unwrap();
        let (cmd_read, cmd_write) = pipe();
        let (reply_read, reply_write) = pipe();
        let stderr_path = profile.path().join("chromium.stderr");
        let stderr = File::create(&stderr_path).unwrap();
        let (child_in, child_out) = (cmd_read.as_raw_fd(), reply_write.as_raw_fd());
        let mut cmd = Command::new(chromium());
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0);
        // SAFETY: between fork and exec only fcntl and dup2 run (async-signal-safe).
        // The ends are first moved above 10 so that placing one on 3 cannot close the
        // other; dup2 leaves 3 and 4 without close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                let high_in = libc::fcntl(child_in, libc::F_DUPFD_CLOEXEC, 10);
                let high_out = libc::fcntl(child_out, libc::F_DUPFD_CLOEXEC, 10);
                if high_in < 0
                    || high_out < 0
                    || libc::dup2(high_in, 3) < 0
                    || libc::dup2(high_out, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("starting chromium");
        // The child's ends stay only in the child: EOF reaches us when it exits.
        drop(cmd_read);
        drop(reply_write);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(File::from(reply_read));
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let message = serde_json::from_slice(&buf).unwrap_or_else(
                    |e| json!({"unparsed": String::from_utf8_lossy(&buf), "error": e.to_string()}),
                );
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Browser {
            child,
            to_browser: File::from(cmd_write),
            from_browser: rx,
            next_id: 1,
            wait: WAIT,
            events: Vec::new(),
            stderr_path,
            _profile: profile,
        }
    }

    /// The browser's process id, which is also its process group's.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails the test with `why`, the last events and Chromium's standard error, after
    /// killing the browser.
    fn fail(&mut self, why: &str) -> ! {
        self.kill();
        let stderr = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        let events: Vec<String> = self
            .events
            .iter()
            .rev()
            .take(15)
            .map(|e| {
                let mut s = e.to_string();
                s.truncate(300);
                s
            })
            .collect();
        panic!(
            "chromium: {why}\nlast events (newest first):\n{}\nchromium's stderr (last lines, newest first):\n{}",
            events.join("\n"),
            tail.join("\n")
        );
    }

    fn kill(&mut self) {
        // The browser leads its own process group (renderer, GPU and zygote processes
        // are in it): end the group, then reap the leader.
        // SAFETY: kill with the group id of the child this Browser started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }

    /// The next message, or a failure at `deadline`.
    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from_browser.recv_timeout(left) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => {
                self.fail(&format!("no {waiting_for} within {:?}", self.wait))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.try_wait().ok().flatten();
                self.fail(&format!(
                    "the browser closed its pipe (exit {status:?}) while waiting for {waiting_for}"
                ))
            }
        }
    }

    /// Sends `method` with `params` (in `session`, or to the browser) and returns its
    /// result; events that arrive meanwhile are kept; a protocol error fails the test.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        if let Err(e) = self.to_browser.write_all(&bytes) {
            self.fail(&format!("cannot send {method}: {e}"));
        }
        let deadline = Instant::now() + self.wait;
        loop {
            let m = self.receive(deadline, &format!("reply to {method}"));
            if m["id"].as_u64() == Some(id) {
                if let Some(err) = m.get("error") {
                    self.fail(&format!("{method} failed: {err}"));
                }
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    /// A new tab on about:blank, attached, with its page, runtime, log and network
    /// domains enabled, sized `width_px` x `height_px` CSS pixels at scale 1.
    pub fn open(&mut self, width_px: u32, height_px: u32) -> Page<'_> {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        let session = attached["sessionId"].as_str().unwrap().to_string();
        let seen = self.events.len();
        let mut page = Page {
            browser: self,
            session,
            seen,
        };
        for domain in ["Page", "Runtime", "Log", "Network"] {
            page.call(&format!("{domain}.enable"), json!({}));
        }
        page.resize(width_px, height_px);
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Page<'_> {
    /// How long each later wait on this page may take (the browser's, from now on).
    pub fn set_wait(&mut self, wait: Duration) {
        self.browser.wait = wait;
    }

    /// Sends `method` in this page's session and returns its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.browser.call(Some(&session), method, params)
    }

    /// Emulates a window of `width_px` x `height_px` CSS pixels at scale 1 (desktop).
    pub fn resize(&mut self, width_px: u32, height_px: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width_px, "height": height_px, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Emulates a system that prefers a dark colour scheme.
    pub fn prefer_dark(&mut self) {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
        );
    }

    /// Loads `path` as a file URL and waits for its load event.
    pub fn navigate(&mut self, path: &Path) -> String {
        let url = format!("file://{}", path.display());
        let before = self.browser.events.len();
        let result = self.call("Page.navigate", json!({"url": url}));
        if let Some(e) = result.get("errorText") {
            self.browser.fail(&format!("navigating to {url}: {e}"));
        }
        let deadline = Instant::now() + self.browser.wait;
        while !self.browser.events[before..]
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired" && e["sessionId"] == json!(self.session))
        {
            let m = self.browser.receive(deadline, "Page.loadEventFired");
            self.browser.events.push(m);
        }
        url
    }

    fn events_since_seen(&self) -> &[Value] {
        &self.browser.events[self.seen..]
    }

    /// The value of the JavaScript `expression` (returned by value); an exception
    /// fails the test with its text.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            self.browser.fail(&format!("evaluating a check threw: {e}"));
        }
        r["result"]["value"].clone()
    }

    /// A PNG of the whole page (beyond the viewport), at CSS pixel scale.
    pub fn screenshot_full(&mut self) -> Vec<u8> {
        let size = self.eval(
            "[document.scrollingElement.scrollWidth, document.scrollingElement.scrollHeight]",
        );
        let (w, h) = (size[0].as_f64().unwrap(), size[1].as_f64().unwrap());
        self.screenshot_clip(0.0, 0.0, w, h)
    }

    /// A PNG of the page's rectangle at (`x`, `y`) document CSS pixels, `width` x
    /// `height`.
    pub fn screenshot_clip(&mut self, x: f64, y: f64, width: f64, height: f64) -> Vec<u8> {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": {"x": x, "y": y, "width": width.max(1.0), "height": height.max(1.0), "scale": 1},
            }),
        );
        decode_base64(shot["data"].as_str().unwrap_or(""))
    }

    /// The page printed to PDF (Chromium's print layout, A4-ish defaults).
    pub fn print_to_pdf(&mut self) -> Vec<u8> {
        let pdf = self.call("Page.printToPDF", json!({"printBackground": false}));
        decode_base64(pdf["data"].as_str().unwrap_or(""))
    }

    /// The errors and requests this page logged since it was opened (the events that
    /// arrived so far; call after the checks so late ones are in).
    pub fn log(&mut self) -> PageLog {
        // A last round trip lets events already sent reach us.
        self.eval("0");
        let mut log = PageLog::default();
        for e in self.events_since_seen() {
            if e["sessionId"] != json!(self.session) {
                continue;
            }
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => {
                    let args: Vec<String> = p["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            a["value"]
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| a["description"].to_string())
                        })
                        .collect();
                    let kind = p["type"].as_str().unwrap_or("");
                    log.errors
                        .push(format!("console.{kind}: {}", args.join(" ")));
                }
                "Runtime.exceptionThrown" => {
                    let d = &p["exceptionDetails"];
                    log.errors.push(format!(
                        "exception: {} {} (line {})",
                        d["text"].as_str().unwrap_or(""),
                        d["exception"]["description"].as_str().unwrap_or(""),
                        d["lineNumber"]
                    ));
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    let entry = &p["entry"];
                    let field = |k: &str| entry[k].as_str().unwrap_or("").to_string();
                    log.errors.push(format!(
                        "log ({}): {} {}",
                        field("source"),
                        field("text"),
                        field("url")
                    ));
                }
                "Network.requestWillBeSent" => {
                    log.requests
                        .push(p["request"]["url"].as_str().unwrap_or("").to_string());
                }
                _ => {}
            }
        }
        log
    }
}

/// A PNG's size, failing when it does not decode or is blank (under 1% of pixels
/// darker than light grey).
pub fn png_size_with_ink(png_bytes: &[u8], what: &str) -> (u32, u32) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{what} is not a PNG: {e}"));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let total = pixels.len();
    let inked = pixels.filter(|p| p[..3].iter().any(|&c| c < 200)).count();
    assert!(
        inked * 100 > total,
        "{what} is blank: {inked} of {total} pixels have ink"
    );
    (info.width, info.height)
}

/// Standard base64 (with or without padding) to bytes; what Chromium sends is valid.
pub fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", c as char),
        }
    };
    let symbols: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    let mut out = Vec::with_capacity(symbols.len() * 3 / 4);
    for chunk in symbols.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | value(c) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

#[test]
fn base64_decodes_with_and_without_padding() {
    assert_eq!(decode_base64("TWFu"), b"Man");
    assert_eq!(decode_base64("TWE="), b"Ma");
    assert_eq!(decode_base64("TQ=="), b"M");
    assert_eq!(decode_base64("TQ"), b"M");
    assert_eq!(decode_base64(""), b"");
    assert_eq!(decode_base64("/+8A\n"), [0xff, 0xef, 0x00]);
}

/// The processes of process group `pgid` that are not zombies.
fn live_processes_in_group(pgid: u32) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            live.push(stat.chars().take(60).collect());
        }
    }
    live
}

/// A page that never finishes loading (an image from a server that accepts and never
/// answers) fails at the wait's deadline with what was waited for, and the browser's
/// whole process group is gone after.
#[test]
fn a_page_that_never_loads_fails_at_the_deadline_and_leaves_no_browser() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    let dir = crate::util::tempdir();
    let html = dir.path().join("stuck.html");
    std::fs::write(
        &html,
        format!("<!doctype html><img src=\"http://127.0.0.1:{port}/never.png\">"),
    )
    .unwrap();
    // Opening the page waits as long as usual (a loaded machine answers slowly); only
    // the load is given 3 s.
    let mut browser = Browser::launch();
    let pid = browser.pid();
    assert!(
        !live_processes_in_group(pid).is_empty(),
        "no browser group {pid}"
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut page = browser.open(800, 600);
        page.set_wait(Duration::from_secs(3));
        page.navigate(&html);
    }));
    let message = match outcome {
        Ok(()) => panic!("the page loaded although its image never came"),
        Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
    };
    assert!(
        message.contains("no Page.loadEventFired within 3s"),
        "{message}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut live = live_processes_in_group(pid);
    while !live.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        live = live_processes_in_group(pid);
    }
    assert!(live.is_empty(), "the browser's group lives on: {live:?}");
}
