//! The harness's end of the relay: the Unix socket the `acp-fake-agent --connect` relay (which
//! the client spawns as its agent) connects to, handing each connection to the agent side as an
//! [`AgentConn`]. The scenario runner and the long-lived fuzz driver both listen with it.
//!
//! A client can die while the scenario waits for it. [`RelayListener::client_gone`] gives the
//! runner a handle that, once the client process has exited, ends the waits on the agent side:
//! a pending `accept` fails at once with the reason ([`ClientGone::exited`]), and the connections
//! accepted so far can be shut down ([`ClientGone::shut_down`]), so their readers see the end of
//! the stream (the engine's "client closed the agent connection"). The runner shuts them down
//! only after a short drain: the relay of a dead client still forwards what the client wrote
//! before it died, then sees its stdin end and closes the connection by itself, and shutting the
//! socket earlier would lose those last frames. Without this handle a client that exits before
//! it starts its agent was judged only after a whole step timeout.

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
    peers: Arc<Mutex<Peers>>,
}

#[derive(Default)]
struct Peers {
    streams: Vec<StdUnixStream>,
    /// Set by [`ClientGone::shut_down`]: a connection accepted later is shut down at once.
    shut: bool,
}

impl ClientGone {
    fn new() -> Self {
        ClientGone {
            why: Arc::new(watch::channel(None).0),
            peers: Arc::default(),
        }
    }

    /// The client exited (`why` says how): a pending or later `accept` fails now (no agent
    /// connection is coming from a dead client).
    pub fn exited(&self, why: String) {
        self.why.send_replace(Some(why));
    }

    /// Shuts down every agent connection, now and from now on: their readers see the end of
    /// the stream after what was already delivered.
    pub fn shut_down(&self) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.shut = true;
        for peer in &peers.streams {
            let _ = peer.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Keeps a second handle on an accepted socket; shuts it down at once if the connections
    /// were already shut down.
    fn track(&self, stream: &UnixStream) {
        let Ok(clone) = dup(stream) else { return };
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if peers.shut {
            let _ = clone.shutdown(std::net::Shutdown::Both);
        }
        peers.streams.push(clone);
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
        // The relay that connected is the agent process the client runs (a crash step kills it).
        let pid = stream.peer_cred().ok().and_then(|cred| cred.pid());
        let (reader, writer) = stream.into_split();
        Ok(AgentConn {
            id: self.next_id,
            reader: Box::new(reader),
            writer: Box::new(writer),
            pid,
        })
    }

    async fn client_gone(&self) {
        let mut why = self.gone.why.subscribe();
        if why.wait_for(Option::is_some).await.is_err() {
            // No one can say so any more: the client is not known to be gone.
            std::future::pending::<()>().await;
        }
    }
}
