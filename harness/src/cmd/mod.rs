//! The subcommands of the `acp-harness` binary: each one's flags (its `clap::Args` struct) and
//! its body, a module per subcommand. `main.rs` only parses the command line, dispatches here
//! and turns an error into exit status 2.
//!
//! | subcommand         | module                                                    |
//! |--------------------|-----------------------------------------------------------|
//! | `run`              | [`run`]                                                   |
//! | `list`             | [`list`]                                                  |
//! | `replay`           | [`replay`]                                                |
//! | `grade`, `rules`   | `acp_harness::offline` (the judge without a run)          |
//! | `install`          | `acp_harness::install_clients`                            |
//! | `report`           | [`report`]                                                |
//! | `merge`            | [`merge`] (also the shard merging that `report` does)     |
//! | `diff`             | [`diff`]                                                  |
//! | `bench`            | `acp_harness::bench`                                      |
//! | `coverage`         | `acp_harness::coverage::cli`                              |
//! | `fuzz-to-scenario` | [`fuzz_to_scenario`]                                      |
//!
//! The library's commands keep their flags next to the code they drive, which its tests call
//! directly. What several subcommands here share (the flags of a run, the client and scenario
//! setup, the async runtime) is in [`common`].

pub mod common;
pub mod diff;
pub mod fuzz_to_scenario;
pub mod list;
pub mod merge;
pub mod replay;
pub mod report;
pub mod run;
