//! acp-harness: conformance and fuzz test harness for ACP clients.
pub mod checks;
pub mod record;
