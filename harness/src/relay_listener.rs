//! The harness's end of the relay: the Unix socket the `acp-fake-agent --connect` relay (which
//! the client spawns as its agent) connects to, handing each connection to the agent side as an
//! [`AgentConn`]. The scenario runner and the long-lived fuzz driver both listen with it.
//!
//! A client can die while the scenario waits for it. [`RelayListener::client_gone`] gives the
//! runner a handle that, once the client process has exited, makes every wait on the agent side
//! end at once: a pending `accept` fails with the reason, and the connections accepted so far
//! are shut down, so their readers see the end of the stream (the engine's "client closed the
//! agent connection"). Without it a client that exits before it starts its agent was judged
//! only after a whole step timeout.

use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_fake_agents::engine::{AgentConn, Connector};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

/// Accepts agent connections on a relay socket, numbering them from 1.
pub struct RelayListener {
    listener: UnixListener,
    next_id: u32,
    gone: ClientGone,
}

/// Tells a [`RelayListener`] that the client has exited (see the module docs).
#[derive(Clone)]
pub struct ClientGone {
    why: Arc<watch::Sender<Option<String>>>,
    /// Second handles on the accepted sockets, to shut them down from outside the engine.
    peers: Arc<Mutex<Vec<StdUnixStream>>>,
}

impl ClientGone {
    fn new() -> Self {
        ClientGone {
            why: Arc::new(watch::channel(None).0),
            peers: Arc::default(),
        }
    }

    /// The client exited (`why` says how): end every wait on the agent side now.
    pub fn signal(&self, why: String) {
        self.why.send_replace(Some(why));
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        for peer in peers.iter() {
            let _ = peer.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Keeps a second handle on an accepted socket; shuts it down at once if the client is
    /// already gone.
    fn track(&self, stream: &UnixStream) {
        let Ok(clone) = dup(stream) else { return };
        if self.why.borrow().is_some() {
            let _ = clone.shutdown(std::net::Shutdown::Both);
        }
        self.peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(clone);
    }
}

/// A second std handle on the same socket (shutting it down affects both).
fn dup(stream: &UnixStream) -> std::io::Result<StdUnixStream> {
    use std::os::fd::AsFd;
    let fd = stream.as_fd().try_clone_to_owned()?;
    Ok(StdUnixStream::from(fd))
}

impl RelayListener {
    /// Listens on `socket` (a path that does not exist yet). Needs a tokio runtime.
    pub fn bind(socket: &Path) -> std::io::Result<Self> {
        Ok(RelayListener {
            listener: UnixListener::bind(socket)?,
            next_id: 0,
            gone: ClientGone::new(),
        })
    }

    /// The handle to signal with when the client process exits.
    pub fn client_gone(&self) -> ClientGone {
        self.gone.clone()
    }
}

impl Connector for RelayListener {
    async fn accept(&mut self) -> std::io::Result<AgentConn> {
        let mut why = self.gone.why.subscribe();
        let stream = tokio::select! {
            accepted = self.listener.accept() => accepted?.0,
            gone = why.wait_for(Option::is_some) => {
                let reason = gone
                    .ok()
                    .and_then(|w| w.clone())
                    .unwrap_or_else(|| "the client is gone".to_owned());
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    format!("{reason} before it started the agent"),
                ));
            }
        };
        self.gone.track(&stream);
        self.next_id += 1;
        let (reader, writer) = stream.into_split();
        Ok(AgentConn {
            id: self.next_id,
            reader: Box::new(reader),
            writer: Box::new(writer),
        })
    }
}
