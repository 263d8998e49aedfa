//! Just enough of the Chrome DevTools Protocol to drive one headless Chromium tab from a test:
//! navigate, evaluate, click, screenshot. Chromium is started with `--remote-debugging-pipe`, so
//! the protocol runs over two pipes (Chromium reads commands from fd 3 and writes answers and
//! events to fd 4, each message a JSON text ended by a NUL byte): no port, no WebSocket.
//!
//! Why not a CDP crate: the one this test used (`headless_chrome`) compiles the whole generated
//! protocol and a WebSocket and TLS stack, some 300 s of CPU in a fresh `cargo test` build,
//! about a seventh of it, for the five commands below.
//!
//! Every wait is bounded by the timeout given to [`Browser::launch`]; dropping the browser asks
//! Chromium to close, then kills and reaps it.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// Where to find Chromium: `$CHROME`, else the first of the usual names on `PATH`.
pub fn find_chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CHROME") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("CHROME={} is not a file", path.display()))
        };
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("none of {} on PATH and CHROME not set", names.join(", ")))
}

pub struct Browser {
    child: Child,
    commands: File,
    messages: Receiver<Value>,
    stderr_log: PathBuf,
    /// The page's session (`Target.attachToTarget` with `flatten`): page commands carry it.
    session: String,
    next_id: u64,
    timeout: Duration,
}

impl Browser {
    /// Starts headless Chromium with a fresh profile in `user_data_dir` and opens one blank tab of
    /// `width` × `height`. Chromium's stderr goes to `stderr_log`, named in every failure.
    pub fn launch(
        program: &Path,
        user_data_dir: &Path,
        stderr_log: &Path,
        (width, height): (u32, u32),
        timeout: Duration,
    ) -> Self {
        let (from_harness, commands) = pipe();
        let (answers, to_harness) = pipe();
        let stderr = std::fs::File::create(stderr_log).expect("Chromium's stderr log");
        let mut command = Command::new(program);
        command
            .args([
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", user_data_dir.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let (read_end, write_end) = (from_harness.as_raw_fd(), to_harness.as_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2) on fds that
        // stay open in the parent until `spawn` returns.
        unsafe {
            command.pre_exec(move || place_fds(read_end, write_end));
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        // The child holds its own copies; ours would keep the pipes open after Chromium exits.
        drop((from_harness, to_harness));

        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                let parsed = serde_json::from_slice::<Value>(&message);
                message.clear();
                // Not JSON: not an answer the test waits for, so nothing to hand on.
                let Ok(value) = parsed else { continue };
                if sender.send(value).is_err() {
                    return;
                }
            }
        });

        let mut browser = Browser {
            child,
            commands,
            messages,
            stderr_log: stderr_log.to_owned(),
            session: String::new(),
            next_id: 0,
            timeout,
        };
        let target = browser.browser_call(
            "Target.createTarget",
            json!({"url": "about:blank", "newWindow": true, "width": width, "height": height}),
        );
        let target_id = target["targetId"].clone();
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser
    }

    /// Opens `url` and waits until its document has loaded.
    pub fn navigate(&mut self, url: &str) {
        let answer = self.call("Page.navigate", json!({"url": url}));
        if let Some(error) = answer.get("errorText") {
            panic!("navigating to {url}: {error}");
        }
        let loaded = format!(
            "location.href === new URL({}).href && document.readyState === 'complete'",
            Value::from(url)
        );
        self.wait_until(&format!("{url} loaded"), |b| b.eval(&loaded) == true);
    }

    /// The value of a JavaScript expression in the page (`null` for what JSON cannot carry).
    pub fn eval(&mut self, expression: &str) -> Value {
        let answer = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if let Some(exception) = answer.get("exceptionDetails") {
            panic!("evaluating {expression}: {exception}");
        }
        answer["result"]
            .get("value")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Waits until an element matches `selector`.
    pub fn wait_for(&mut self, selector: &str) {
        let found = format!("document.querySelector({}) !== null", Value::from(selector));
        self.wait_until(&format!("an element {selector}"), |b| {
            b.eval(&found) == true
        });
    }

    /// Clicks the middle of the first element matching `selector` as a mouse would (scrolled into
    /// view first), so an element that is hidden or covered does not get the click.
    pub fn click(&mut self, selector: &str) {
        self.wait_for(selector);
        let centre = format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()",
            Value::from(selector)
        );
        let point = self.eval(&centre);
        let (x, y) = (point[0].clone(), point[1].clone());
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// A PNG of the page, beyond the viewport too.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let answer = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let data = answer["data"].as_str().expect("screenshot data");
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 screenshot")
    }

    /// Polls `done` until it holds; panics naming `what` after the timeout.
    pub fn wait_until(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> bool) {
        let deadline = Instant::now() + self.timeout;
        while !done(self) {
            if Instant::now() >= deadline {
                panic!("no {what} within {:?}", self.timeout);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("a JSON command");
        bytes.push(0);
        if let Err(e) = self.commands.write_all(&bytes) {
            panic!(
                "{method}: cannot write to Chromium ({e}){}",
                self.exit_note()
            );
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(answer) if answer["id"] == id => {
                    if let Some(error) = answer.get("error") {
                        panic!("{method} {}: {error}", message["params"]);
                    }
                    return answer["result"].clone();
                }
                // An event, or the answer to a command given up on.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    let timeout = self.timeout;
                    panic!(
                        "{method}: no answer within {:?}{}",
                        timeout,
                        self.exit_note()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "{method}: Chromium closed its DevTools pipe{}",
                        self.exit_note()
                    )
                }
            }
        }
    }

    /// Whether Chromium has exited, and where its stderr is.
    fn exit_note(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("; Chromium exited: {status}"),
            _ => String::new(),
        };
        format!("{status} (its stderr: {})", self.stderr_log.display())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .commands
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe's (read, write) ends, both close-on-exec.
fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both fds on success; each is then owned by exactly one File.
    unsafe {
        check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC)).expect("a pipe");
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    }
}

/// In the child: the command pipe's read end becomes fd 3 and the answer pipe's write end fd 4,
/// where `--remote-debugging-pipe` expects them. Both are first copied above 10, so that neither
/// overwrites the other when one already is 3 or 4, and `dup2` then clears close-on-exec.
fn place_fds(read_end: RawFd, write_end: RawFd) -> std::io::Result<()> {
    // SAFETY: plain fd syscalls on fds this process owns.
    unsafe {
        let read_copy = check(libc::fcntl(read_end, libc::F_DUPFD, 10))?;
        let write_copy = check(libc::fcntl(write_end, libc::F_DUPFD, 10))?;
        check(libc::dup2(read_copy, 3))?;
        check(libc::dup2(write_copy, 4))?;
        libc::close(read_copy);
        libc::close(write_copy);
    }
    Ok(())
}

fn check(result: libc::c_int) -> std::io::Result<libc::c_int> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(result)
    }
}
