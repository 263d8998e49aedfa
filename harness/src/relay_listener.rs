//! The harness's end of the relay: the Unix socket the `acp-fake-agent --connect` relay (which
//! the client spawns as its agent) connects to, handing each connection to the agent side as an
//! [`AgentConn`]. The scenario runner and the long-lived fuzz driver both listen with it.

use std::path::Path;

use acp_fake_agents::engine::{AgentConn, Connector};
use tokio::net::UnixListener;

/// Accepts agent connections on a relay socket, numbering them from 1.
pub struct RelayListener {
    listener: UnixListener,
    next_id: u32,
}

impl RelayListener {
    /// Listens on `socket` (a path that does not exist yet). Needs a tokio runtime.
    pub fn bind(socket: &Path) -> std::io::Result<Self> {
        Ok(RelayListener {
            listener: UnixListener::bind(socket)?,
            next_id: 0,
        })
    }
}

impl Connector for RelayListener {
    async fn accept(&mut self) -> std::io::Result<AgentConn> {
        let (stream, _) = self.listener.accept().await?;
        self.next_id += 1;
        let (reader, writer) = stream.into_split();
        Ok(AgentConn {
            id: self.next_id,
            reader: Box::new(reader),
            writer: Box::new(writer),
        })
    }
}
