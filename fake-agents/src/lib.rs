//! Scriptable fake ACP agents: the scenario engine, agent profiles and the transcript.
pub mod transcript;
