//! A pseudo-terminal for clients that only prompt on a terminal (client profiles with
//! `tty = true`): the client's stdin and stderr are the terminal, the harness holds the master
//! side, reads what the client shows there and types the user's keys.
//!
//! The master is non-blocking and driven by tokio's `AsyncFd`, so no thread ever blocks on it.
//! The terminal is not made the client's controlling terminal: a typed Ctrl-C reaches the
//! client as a key (what a readline prompt in raw mode sees), never as a signal to its group.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::unix::AsyncFd;

/// The harness's side of a terminal.
#[derive(Clone)]
pub struct Master {
    fd: Arc<AsyncFd<OwnedFd>>,
}

/// A fresh terminal: the master for the harness, the slave for the client.
pub fn open() -> Result<(Master, OwnedFd)> {
    open_sized(None)
}

/// A fresh terminal of `rows`×`cols` (a full-screen client reads its size from it).
pub fn open_sized(size: Option<(u16, u16)>) -> Result<(Master, OwnedFd)> {
    let winsize = size.map(|(rows, cols)| nix::pty::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    });
    let pair =
        nix::pty::openpty(winsize.as_ref(), None).context("cannot open a pseudo-terminal")?;
    let flags = fcntl(&pair.master, FcntlArg::F_GETFL).context("fcntl F_GETFL on the pty")?;
    fcntl(
        &pair.master,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .context("cannot make the pty master non-blocking")?;
    // SAFETY: an `OwnedFd` is a valid open descriptor that stays the same until it is dropped,
    // and the `AsyncFd` owns it for its whole life.
    let fd = unsafe { AsyncFd::register(pair.master) }
        .map_err(|e| anyhow::anyhow!("cannot register the pty master: {e}"))?;
    Ok((Master { fd: Arc::new(fd) }, pair.slave))
}

impl Master {
    /// The next chunk the client wrote to its terminal; `None` once every holder of the slave
    /// side is gone (Linux reports that as EIO).
    pub async fn read(&self) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        loop {
            let mut guard = self.fd.readable().await.ok()?;
            match guard.try_io(|fd| {
                nix::unistd::read(fd.get_ref().as_fd(), &mut buf).map_err(std::io::Error::from)
            }) {
                Ok(Ok(0)) => return None,
                Ok(Ok(n)) => {
                    buf.truncate(n);
                    return Some(buf);
                }
                Ok(Err(_)) => return None,
                Err(_would_block) => continue,
            }
        }
    }

    /// Types `bytes` on the client's terminal.
    pub async fn write_all(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let mut guard = self.fd.writable().await?;
            match guard.try_io(|fd| {
                nix::unistd::write(fd.get_ref().as_fd(), bytes).map_err(std::io::Error::from)
            }) {
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) if e.raw_os_error() == Some(Errno::EINTR as i32) => {}
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[tokio::test]
    async fn bytes_cross_the_terminal_both_ways() {
        let (master, slave) = open().unwrap();
        let mut slave = std::fs::File::from(slave);
        slave.write_all(b"prompt? ").unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), master.read())
            .await
            .unwrap()
            .unwrap();
        assert!(String::from_utf8_lossy(&got).contains("prompt?"));
        master.write_all(b"y\n").await.unwrap();
        let mut buf = [0u8; 16];
        let n = slave.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"y\n");
        drop(slave);
        let end = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            // Echoed input may still be queued; read until the terminal reports its end.
            while master.read().await.is_some() {}
        })
        .await;
        assert!(end.is_ok(), "reading did not end after the slave closed");
    }
}
