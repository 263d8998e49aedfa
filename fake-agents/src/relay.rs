//! Relay mode (`acp-fake-agent --connect <socket>`): the process the client spawns as its agent.
//! It copies its stdin to a Unix socket the harness listens on, and the socket to its stdout,
//! byte for byte, so the scenario engine can run inside the harness (docs/architecture.md §1, wire plane).
//!
//! Plain threads and blocking I/O: two copies and nothing else, with no runtime to shut down
//! (a blocked stdin read must not keep the process alive once the socket has closed).

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::thread;

/// Why the relay stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot connect to the harness socket {path}: {source}")]
    Connect { path: String, source: io::Error },
    #[error("relay {direction} failed: {source}")]
    Copy {
        direction: &'static str,
        source: io::Error,
    },
}

/// Connects to `socket` and relays stdin/stdout until either side closes. `Ok` on a clean close.
pub fn relay(socket: &Path) -> Result<(), RelayError> {
    let stream = UnixStream::connect(socket).map_err(|source| RelayError::Connect {
        path: socket.display().to_string(),
        source,
    })?;
    relay_streams(io::stdin(), io::stdout(), stream)
}

/// The relay over any byte streams: `input` → socket and socket → `output`, flushing after every
/// chunk so no frame waits in a buffer. Returns when the first direction ends.
pub fn relay_streams(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
    socket: UnixStream,
) -> Result<(), RelayError> {
    let to_socket = socket.try_clone().map_err(|source| RelayError::Copy {
        direction: "setup",
        source,
    })?;
    let (done_tx, done_rx) = mpsc::channel();

    let tx = done_tx.clone();
    thread::spawn(move || {
        let result = copy(input, &to_socket, "client → harness");
        // Tell the harness the client closed our stdin (it sees EOF on its side).
        let _ = to_socket.shutdown(std::net::Shutdown::Write);
        let _ = tx.send(result);
    });
    thread::spawn(move || {
        let _ = done_tx.send(copy(&socket, output, "harness → client"));
    });

    // Either direction ending ends the relay; the other thread dies with the process.
    done_rx.recv().unwrap_or(Ok(()))
}

fn copy(
    mut from: impl Read,
    mut to: impl Write,
    direction: &'static str,
) -> Result<(), RelayError> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if closed(&e) => return Ok(()),
            Err(source) => return Err(RelayError::Copy { direction, source }),
        };
        let written = to.write_all(&buf[..n]).and_then(|()| to.flush());
        match written {
            Ok(()) => {}
            // The reader went away: that side closed, which is a normal end.
            Err(e) if closed(&e) => return Ok(()),
            Err(source) => return Err(RelayError::Copy { direction, source }),
        }
    }
}

fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Cursor};
    use std::sync::{Arc, Mutex};

    /// An output that collects what the relay writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn copies_both_ways_and_ends_when_the_socket_closes() {
        let (relay_end, harness_end) = UnixStream::pair().unwrap();
        let sink = Sink::default();
        let out = sink.clone();
        // stdin that never ends (like a client that keeps the pipe open): the socket closing
        // must still end the relay.
        let (_keep_open, stdin) = UnixStream::pair().unwrap();
        let relay = thread::spawn(move || relay_streams(stdin, out, relay_end));
        let mut h = harness_end;
        h.write_all(b"{\"a\":1}\n").unwrap();
        h.shutdown(std::net::Shutdown::Write).unwrap();
        relay.join().unwrap().unwrap();
        assert_eq!(&*sink.0.lock().unwrap(), b"{\"a\":1}\n");
    }

    #[test]
    fn stdin_eof_reaches_the_harness_as_eof() {
        let (relay_end, harness_end) = UnixStream::pair().unwrap();
        let stdin = Cursor::new(b"line one\nline two\n".to_vec());
        let relay = thread::spawn(move || relay_streams(stdin, Sink::default(), relay_end));
        let mut lines = Vec::new();
        for line in BufReader::new(&harness_end).lines() {
            lines.push(line.unwrap());
        }
        assert_eq!(lines, ["line one", "line two"]);
        relay.join().unwrap().unwrap();
    }

    #[test]
    fn unreachable_socket_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = relay(&dir.path().join("nope.sock")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot connect to the harness socket")
        );
    }
}
