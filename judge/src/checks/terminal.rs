//! `terminal` — the client's terminals run real commands and say truly what they did (R100–R105).
//!
//! Requirement: a client that advertised `terminal` runs the command of `terminal/create`;
//! `terminal/output` keeps at most `outputByteLimit` bytes, cut from the start at a character
//! boundary, with `truncated` saying so; the exit status it reports (`wait_for_exit`, or
//! `output.exitStatus`) is the command's; `terminal/kill` stops it; `terminal/release` stops a
//! command still running and frees the id; no command outlives the client.
//!
//! Reading:
//! * The wire alone says what the client answered. What really happened comes from the
//!   command's probe files (harness note `terminal_probe`, scenarios/README.md "Terminal
//!   probes"): the pid to watch, whether it still ran when the scenario ended and after the
//!   client exited, the exit code the command exited with, and the exact output it printed. A
//!   create is matched to its probe by the probe's path (`.acp-terminal/<name>.`) in its command
//!   line.
//! * Output is compared only once an exit was reported (the command printed everything): it must
//!   be the longest suffix of the printed output that fits the limit and starts at a character
//!   boundary (all of it when it fits). Without a probe only the limit itself is checked. A
//!   command whose stdout was a terminal (its probe's `<name>.tty`: the client ran it in a
//!   pseudo-terminal, as Zed does) printed each `\n` as `\r\n`; that output is what the client
//!   read, and either form is accepted. Every mismatch names the first differing byte.
//! * After a kill or a release sent before any exit was reported, the command can only have died
//!   of the signal the client sent: the exit status must name a signal, not an exit code. Unless
//!   the command wrote its probe's exit code: then it was about to exit by itself (a client that
//!   signals the command's children first, as acpx does, lets the shell's `wait` return), and that
//!   code or a signal are both true.
//! * A command still running after the client exited is a warning (R105); the harness killed it.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use serde_json::Value;

use super::fs::describe_diff;
use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel, WireMsg, note_of};
use acp_vocab::note::{Note, TerminalProbe};

pub struct Terminal;

impl Check for Terminal {
    fn id(&self) -> &'static str {
        "terminal"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R100, R101, R102, R103, R104, R105]
    }

    fn requirement(&self) -> &'static str {
        "Terminals run the command; output keeps the last outputByteLimit bytes at a character boundary; the exit status is the command's; kill and release stop it, release frees the id; nothing outlives the client."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let creates: Vec<&WireMsg<'_>> = model
            .msgs
            .iter()
            .filter(|m| m.from == Side::Agent && m.is_request_for(Method::TerminalCreate))
            .collect();
        if creates.is_empty() {
            return Finding::not_applicable("scenario sends no terminal/create");
        }
        let probes: Vec<TerminalProbe> = model
            .notes
            .iter()
            .filter_map(|(_, n)| match note_of(n) {
                Some(Note::TerminalProbe(p)) => Some(p),
                _ => None,
            })
            .collect();
        let mut problems = Problems::new();
        for create in creates {
            check_terminal(model, create, &probes, &mut problems);
        }
        problems.finish("")
    }
}

/// An agent request on one terminal id and the client's first answer (`Err(index)`: an error
/// response).
struct Call<'m, 'a> {
    msg: &'m WireMsg<'a>,
    method: &'a str,
    answer: Option<(usize, Result<&'a Value, ()>)>,
}

fn answer_of<'a>(
    model: &WireModel<'a>,
    msg: &WireMsg<'a>,
) -> Option<(usize, Result<&'a Value, ()>)> {
    let index = *model.answers_to(msg.index).first()?;
    let result = model.msg(index).and_then(|r| r.result()).ok_or(());
    Some((index, result))
}

fn command_line(params: &Value) -> String {
    let mut line = params
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    for arg in params
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

/// R100: the command ran with the `env` entries and in the `cwd` the agent gave, as the command
/// itself recorded them (probe files `<name>.env`, `<name>.cwd`). A client may add variables of
/// its own; it may not drop or change the agent's. A `cwd` is compared once both are resolved
/// lexically (the probe's `pwd -P` resolves symlinks, so a cwd through a symlink is not judged).
fn check_environment(
    create: &WireMsg<'_>,
    answer: usize,
    params: &Value,
    probe: &TerminalProbe,
    problems: &mut Problems,
) {
    let frames = [create.index, answer];
    if let Some(env) = &probe.env {
        for entry in params
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(value)) = (
                entry.get("name").and_then(Value::as_str),
                entry.get("value").and_then(Value::as_str),
            ) else {
                continue;
            };
            match env.get(name) {
                Some(got) if got == value => {}
                got => problems.fail(
                    R100,
                    format!(
                        "terminal/create #{} asked for {name}={value} in the command's environment, but the command ran {}. Expected every env entry of the request set for the command (R100).",
                        create.index,
                        match got {
                            Some(got) => format!("with {name}={got}"),
                            None => format!("without {name}"),
                        }
                    ),
                    &frames,
                ),
            }
        }
    }
    if let (Some(ran_in), Some(asked)) = (
        probe.cwd.as_deref(),
        params.get("cwd").and_then(Value::as_str),
    ) {
        let norm = |p: &str| p.trim_end_matches('/').to_owned();
        if norm(ran_in) != norm(asked) && !ran_in.ends_with(asked.trim_start_matches('/')) {
            problems.fail(
                R100,
                format!(
                    "terminal/create #{} asked for the working directory {asked}, but the command ran in {ran_in}. Expected the command to run in the cwd the agent gave (R100).",
                    create.index
                ),
                &frames,
            );
        }
    }
}

/// The longest suffix of `full` of at most `limit` bytes that starts at a character boundary.
pub fn kept_tail(full: &str, limit: Option<usize>) -> &str {
    let Some(limit) = limit else { return full };
    if full.len() <= limit {
        return full;
    }
    let mut cut = full.len() - limit;
    while !full.is_char_boundary(cut) {
        cut += 1;
    }
    &full[cut..]
}

/// How the command ended, as far as the harness knows.
#[derive(Debug, PartialEq)]
enum Expected {
    Code(i32),
    /// Killed by the client (a kill or release sent while it ran).
    Signal,
    /// Killed by the client, but the command wrote the exit code it was about to exit with: it
    /// exited with it, or the signal came first.
    CodeOrSignal(i32),
}

fn exit_problem(expected: &Expected, status: &Value) -> Option<String> {
    let code = status.get("exitCode").and_then(Value::as_i64);
    let signal = status.get("signal").and_then(Value::as_str);
    match expected {
        Expected::Code(c) if code == Some(i64::from(*c)) && signal.is_none() => None,
        Expected::Code(c) => Some(format!(
            "the command exited with code {c}, but the client reported {status}"
        )),
        Expected::Signal | Expected::CodeOrSignal(_) if signal.is_some() && code.is_none() => None,
        Expected::CodeOrSignal(c) if code == Some(i64::from(*c)) && signal.is_none() => None,
        Expected::CodeOrSignal(c) => Some(format!(
            "the client killed the command, which then ended by the signal or by exiting with the code {c} it wrote to its probe, but the client reported {status}"
        )),
        Expected::Signal => Some(format!(
            "the client killed the command, so it ended by a signal, but the client reported {status} (a killed command has no exit code; `signal` names the signal)"
        )),
    }
}

fn check_terminal(
    model: &WireModel<'_>,
    create: &WireMsg<'_>,
    probes: &[TerminalProbe],
    problems: &mut Problems,
) {
    let Some(params) = create.params() else {
        return;
    };
    let Some((answer, result)) = answer_of(model, create) else {
        return; // never answered: `jsonrpc` says so
    };
    let Some(terminal_id) = result
        .ok()
        .and_then(|r| r.get("terminalId"))
        .and_then(Value::as_str)
    else {
        problems.fail(
            R100,
            format!(
                "terminal/create #{} was not answered with a terminalId (#{answer}), although the client advertised terminal. Expected the command to be started and its id returned.",
                create.index
            ),
            &[create.index, answer],
        );
        return;
    };
    let line = command_line(params);
    let probe = probes
        .iter()
        .find(|p| line.contains(&format!(".acp-terminal/{}.", p.name)));
    if let Some(probe) = probe {
        check_environment(create, answer, params, probe, problems);
    }
    let limit = params
        .get("outputByteLimit")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok());
    let calls: Vec<Call<'_, '_>> = model
        .msgs
        .iter()
        .filter(|m| m.from == Side::Agent && m.conn == create.conn && m.index > create.index)
        .filter(|m| m.is_request())
        .filter(|m| {
            m.params()
                .and_then(|p| p.get("terminalId"))
                .and_then(Value::as_str)
                == Some(terminal_id)
        })
        .filter_map(|m| {
            let method = m.method()?;
            method.starts_with("terminal/").then(|| Call {
                msg: m,
                method,
                answer: answer_of(model, m),
            })
        })
        .collect();

    // The first moment the client reported an exit (answer index), and the first kill/release.
    let reported_exit = |c: &Call<'_, '_>| match (Method::parse(c.method), &c.answer) {
        (Some(Method::TerminalWaitForExit), Some((_, Ok(_)))) => true,
        (Some(Method::TerminalOutput), Some((_, Ok(r)))) => {
            r.get("exitStatus").is_some_and(|s| !s.is_null())
        }
        _ => false,
    };
    let first_exit = calls
        .iter()
        .filter(|c| reported_exit(c))
        .filter_map(|c| c.answer.as_ref().map(|(i, _)| *i))
        .min();
    let stop = calls.iter().find(|c| {
        matches!(
            Method::parse(c.method),
            Some(Method::TerminalKill | Method::TerminalRelease)
        )
    });
    // A kill or release sent while the command ran (no exit reported before it).
    let stopped_running = stop.filter(|s| first_exit.is_none_or(|e| e > s.msg.index));
    let expected = match (probe.and_then(|p| p.exit_code), stopped_running) {
        (Some(code), Some(stop)) => Some((Expected::CodeOrSignal(code), stop.msg.index)),
        (Some(code), None) => Some((Expected::Code(code), 0)),
        (None, Some(stop)) => Some((Expected::Signal, stop.msg.index)),
        (None, None) => None,
    };

    for call in &calls {
        let Some((index, Ok(result))) = &call.answer else {
            continue;
        };
        let frames = [call.msg.index, *index];
        let status = match Method::parse(call.method) {
            Some(Method::TerminalWaitForExit) => Some(*result),
            Some(Method::TerminalOutput) => result.get("exitStatus").filter(|s| !s.is_null()),
            _ => None,
        };
        if let (Some(status), Some((expected, after))) = (status, &expected) {
            // Answers after the kill or release count, even to a wait sent before it.
            if *index > *after {
                if let Some(problem) = exit_problem(expected, status) {
                    problems.fail(
                        R102,
                        format!("{} #{}: {problem}.", call.method, call.msg.index),
                        &frames,
                    );
                }
            }
        }
        if call.method == Method::TerminalOutput.as_str() {
            check_output(call, *index, result, limit, probe, first_exit, problems);
        }
    }

    let released = calls.iter().find(|c| {
        c.method == Method::TerminalRelease.as_str() && matches!(c.answer, Some((_, Ok(_))))
    });
    if let Some(release) = released {
        for later in calls.iter().filter(|c| c.msg.index > release.msg.index) {
            if let Some((index, Ok(_))) = later.answer {
                problems.fail(
                    R104,
                    format!(
                        "{} #{} on terminal {terminal_id:?} was answered with success (#{index}) after terminal/release #{} freed the id. Expected an error: a released terminal id is invalid.",
                        later.method, later.msg.index, release.msg.index
                    ),
                    &[release.msg.index, later.msg.index, index],
                );
            }
        }
    }
    let Some(probe) = probe else { return };
    if probe.running_at_scenario_end {
        if let Some(stop) = stop.filter(|c| matches!(c.answer, Some((_, Ok(_))))) {
            let (rule, what) = if stop.method == Method::TerminalKill.as_str() {
                (R103, Method::TerminalKill.as_str())
            } else {
                (R104, Method::TerminalRelease.as_str())
            };
            problems.fail(
                rule,
                format!(
                    "{what} #{} of terminal {terminal_id:?} was answered with success, but its command (pid {}, probe {:?}) still ran when the scenario ended. Expected the command and the processes it started to be killed.",
                    stop.msg.index,
                    probe.pid.unwrap_or_default(),
                    probe.name
                ),
                &[create.index, stop.msg.index],
            );
        }
    }
    if probe.running_after_client_exit {
        problems.warn(
            R105,
            format!(
                "the command of terminal {terminal_id:?} (pid {}, probe {:?}) still ran after the client exited; the harness killed it. Expected the client to kill its terminals when it ends.",
                probe.pid.unwrap_or_default(),
                probe.name
            ),
            &[create.index],
        );
    }
}

fn check_output(
    call: &Call<'_, '_>,
    answer: usize,
    result: &Value,
    limit: Option<usize>,
    probe: Option<&TerminalProbe>,
    first_exit: Option<usize>,
    problems: &mut Problems,
) {
    let frames = [call.msg.index, answer];
    let Some(output) = result.get("output").and_then(Value::as_str) else {
        return; // the schema check grades the shape
    };
    let truncated = result.get("truncated").and_then(Value::as_bool);
    let exited_before = first_exit.is_some_and(|e| e < answer)
        || result.get("exitStatus").is_some_and(|s| !s.is_null());
    // All the command printed, when it had exited before this answer (the probe's copy is then
    // the output the client had).
    let printed = match probe.and_then(|p| p.output.as_deref()) {
        Some(full) if exited_before && probe.is_some_and(|p| p.exit_code.is_some()) => Some(full),
        _ => None,
    };
    if let Some(limit) = limit.filter(|&l| output.len() > l) {
        // A cut inside a multi-byte character, decoded lossily: the broken bytes became U+FFFD
        // (3 bytes), which is what made the output too long. Name the cut, not the count, and,
        // when the probe says what was printed, the byte the output should start at: the one a
        // reader fixing the client needs.
        let broken = output.trim_start_matches('\u{FFFD}');
        let message = if broken.len() < output.len() && broken.len() <= limit {
            // Not in a pseudo-terminal: there the bytes read differ from the probe's (`\r\n`).
            let plain = printed.filter(|_| probe.is_some_and(|p| !p.tty));
            let boundary = plain.map_or(String::new(), |full| {
                let kept = kept_tail(full, Some(limit)).len();
                format!(
                    ": byte {} of the {} bytes the command printed, the first character boundary at or after byte {} (where the last {limit} bytes begin), which keeps {kept} bytes",
                    full.len() - kept,
                    full.len(),
                    full.len().saturating_sub(limit)
                )
            });
            format!(
                "terminal/output #{} starts with U+FFFD: the client cut the output inside a multi-byte character and decoded the broken bytes as replacement characters ({} bytes returned, outputByteLimit {limit}). Expected the last bytes up to the limit, starting at the first character boundary{boundary}.",
                call.msg.index,
                output.len()
            )
        } else {
            format!(
                "terminal/output #{} returned {} bytes of output, over the outputByteLimit of {limit}. Expected the output truncated from the start to at most {limit} bytes.",
                call.msg.index,
                output.len()
            )
        };
        problems.fail(R101, message, &frames);
        return;
    }
    let Some(full) = printed else {
        return;
    };
    // In a pseudo-terminal the line discipline printed every `\n` as `\r\n`: that is what the
    // client read, and what it keeps under the limit.
    let pty_full;
    let full = if probe.is_some_and(|p| p.tty) {
        pty_full = full.replace('\n', "\r\n");
        if output == kept_tail(full, limit) {
            return; // a PTY without `\r\n` translation
        }
        pty_full.as_str()
    } else {
        full
    };
    let expected = kept_tail(full, limit);
    if output != expected {
        let why = if output.starts_with('\u{FFFD}') && !expected.starts_with('\u{FFFD}') {
            "it starts with U+FFFD: the cut fell inside a multi-byte character"
        } else if expected.ends_with(output) && output.len() < expected.len() {
            "it is only the end of the output: bytes printed earlier, within the limit, are missing (every read returns all the output kept so far, not only what came since the previous terminal/output)"
        } else if full.starts_with(output) && output.len() < full.len() {
            "it is the beginning of the output: the newest bytes were dropped instead of the oldest"
        } else {
            "it differs from what the command printed"
        };
        problems.fail(
            R101,
            format!(
                "terminal/output #{}: {why} ({}). Expected the last {} bytes the command printed{}{} (outputByteLimit {}).",
                call.msg.index,
                describe_diff(expected.as_bytes(), output.as_bytes()),
                expected.len(),
                if expected.len() < full.len() {
                    format!(
                        ", from byte {} of {} on: the first character boundary at or after byte {}",
                        full.len() - expected.len(),
                        full.len(),
                        full.len().saturating_sub(limit.unwrap_or(0))
                    )
                } else {
                    String::new()
                },
                if probe.is_some_and(|p| p.tty) { ", as its pseudo-terminal wrote them (\\n as \\r\\n)" } else { "" },
                limit.map_or("none".to_owned(), |l| l.to_string())
            ),
            &frames,
        );
    }
    let should = expected.len() < full.len();
    if truncated.is_some_and(|t| t != should) {
        problems.fail(
            R101,
            format!(
                "terminal/output #{} says truncated: {}, but the command printed {} bytes and the limit is {}. Expected truncated: {should}.",
                call.msg.index,
                !should,
                full.len(),
                limit.map_or("none".to_owned(), |l| l.to_string())
            ),
            &frames,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, assert_names_its_rule};
    use serde_json::json;

    fn request(c: &Case, id: u64, method: &str, params: Value) -> usize {
        c.a2c(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
    }

    fn answer(c: &Case, id: u64, result: Value) -> usize {
        c.c2a(json!({"jsonrpc":"2.0","id":id,"result":result}))
    }

    fn on(t: &str) -> Value {
        json!({"sessionId":"s","terminalId":t})
    }

    /// create (limit 4) → wait_for_exit → output → release, with a probe for what happened.
    fn lifecycle(exit: Value, output: Value, probe: Value) -> Case {
        let c = Case::new();
        c.handshake();
        request(
            &c,
            10,
            "terminal/create",
            json!({"sessionId":"s","command":"x .acp-terminal/b.out","outputByteLimit":4}),
        );
        answer(&c, 10, json!({"terminalId":"t"}));
        request(&c, 11, "terminal/wait_for_exit", on("t"));
        answer(&c, 11, exit);
        request(&c, 12, "terminal/output", on("t"));
        answer(&c, 12, output);
        request(&c, 13, "terminal/release", on("t"));
        answer(&c, 13, json!({}));
        c.note(serde_json::from_value(probe).expect("a terminal_probe note"));
        c
    }

    fn probe(extra: Value) -> Value {
        let mut p = json!({"type":"terminal_probe","name":"b","exit_code":3,"output":"aéfgh"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            p[k] = v.clone();
        }
        p
    }

    /// xuzhougeng/wispterm#549: the agent's `env` (claude-agent-acp sets CLAUDECODE=1) dropped;
    /// and a `cwd` not honoured. The probe files say what the command really had.
    #[test]
    fn the_commands_env_and_cwd_are_the_agents() {
        let run = |probe_extra: Value| {
            let c = Case::new();
            c.handshake();
            request(
                &c,
                10,
                "terminal/create",
                json!({"sessionId":"s","command":"x .acp-terminal/b.out","cwd":"/tmp/case/work/sub",
                "env":[{"name":"CLAUDECODE","value":"1"}]}),
            );
            answer(&c, 10, json!({"terminalId":"t"}));
            request(&c, 11, "terminal/release", on("t"));
            answer(&c, 11, json!({}));
            c.note(serde_json::from_value(probe(probe_extra)).expect("a terminal_probe note"));
            c.grade(&Terminal)
        };
        let good = json!({"env":{"CLAUDECODE":"1","PATH":"/bin"},"cwd":"/tmp/case/work/sub"});
        assert_eq!(run(good).grade, Grade::Pass);
        assert_grade(
            &run(json!({"env":{"PATH":"/bin"},"cwd":"/tmp/case/work/sub"})),
            Grade::Fail,
            "asked for CLAUDECODE=1 in the command's environment, but the command ran without CLAUDECODE",
        );
        assert_grade(
            &run(json!({"env":{"CLAUDECODE":"0"},"cwd":"/tmp/case/work/sub"})),
            Grade::Fail,
            "but the command ran with CLAUDECODE=0",
        );
        assert_grade(
            &run(json!({"env":{"CLAUDECODE":"1"},"cwd":"/tmp/case/work"})),
            Grade::Fail,
            "asked for the working directory /tmp/case/work/sub, but the command ran in /tmp/case/work",
        );
        // A probe without env or cwd files: nothing to compare.
        assert_eq!(run(json!({})).grade, Grade::Pass);
    }

    #[test]
    fn a_truthful_terminal_passes() {
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"fgh","truncated":true,"exitStatus":{"exitCode":3,"signal":null}}),
            probe(json!({})),
        );
        assert_grade(&c.grade(&Terminal), Grade::Pass, "");
    }

    #[test]
    fn wrong_exit_status_head_truncation_and_a_leak_fail() {
        let c = lifecycle(
            json!({"exitCode":0,"signal":null}),
            json!({"output":"aéf","truncated":true}),
            probe(json!({})),
        );
        let f = c.grade(&Terminal);
        assert_grade(&f, Grade::Fail, "exited with code 3");
        assert!(
            f.message.contains("the beginning of the output")
                && f.message.contains(
                    "Expected the last 3 bytes the command printed, from byte 3 of 6 on: the first character boundary at or after byte 2"
                ),
            "{}",
            f.message
        );
        assert_names_its_rule(&Terminal, &f);
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"\u{FFFD}gh","truncated":true}),
            probe(json!({})),
        );
        let f = c.grade(&Terminal);
        assert_grade(
            &f,
            Grade::Fail,
            "starts with U+FFFD: the client cut the output inside a multi-byte character",
        );
        // "aéfgh" is 6 bytes; the last 4 begin at byte 2, inside "é": the first boundary is 3.
        assert!(
            f.message.contains(
                "starting at the first character boundary: byte 3 of the 6 bytes the command printed, the first character boundary at or after byte 2 (where the last 4 bytes begin), which keeps 3 bytes."
            ),
            "{}",
            f.message
        );
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"defgh","truncated":true}),
            probe(json!({})),
        );
        assert_grade(
            &c.grade(&Terminal),
            Grade::Fail,
            "over the outputByteLimit of 4",
        );
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"fgh","truncated":false}),
            probe(json!({})),
        );
        assert_grade(&c.grade(&Terminal), Grade::Fail, "Expected truncated: true");
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"fgh","truncated":true}),
            probe(json!({"pid":7,"running_at_scenario_end":true,"running_after_client_exit":true})),
        );
        let f = c.grade(&Terminal);
        assert_grade(&f, Grade::Fail, "still ran when the scenario ended");
        assert!(f.message.contains("the harness killed it"), "{}", f.message);
    }

    /// A second read after the exit that hands out only what came since the first (a buffer
    /// drained by every read) names that, not a head truncation.
    #[test]
    fn a_read_with_only_the_bytes_since_the_previous_read_fails() {
        let c = lifecycle(
            json!({"exitCode":3,"signal":null}),
            json!({"output":"fgh","truncated":true,"exitStatus":{"exitCode":3,"signal":null}}),
            probe(json!({})),
        );
        request(&c, 14, "terminal/output", on("t"));
        answer(
            &c,
            14,
            json!({"output":"","truncated":false,"exitStatus":{"exitCode":3,"signal":null}}),
        );
        let f = c.grade(&Terminal);
        assert_grade(&f, Grade::Fail, "it is only the end of the output");
        assert!(
            !f.message.contains("the beginning of the output"),
            "{}",
            f.message
        );
        assert_names_its_rule(&Terminal, &f);
    }

    /// create `command` → kill → wait_for_exit answered with `status`.
    fn killed(command: &str, status: &Value) -> Case {
        let c = Case::new();
        c.handshake();
        request(
            &c,
            10,
            "terminal/create",
            json!({"sessionId":"s","command":command}),
        );
        answer(&c, 10, json!({"terminalId":"t"}));
        request(&c, 11, "terminal/kill", on("t"));
        answer(&c, 11, json!({}));
        request(&c, 12, "terminal/wait_for_exit", on("t"));
        answer(&c, 12, status.clone());
        c
    }

    #[test]
    fn a_kill_must_show_as_a_signal_and_a_released_id_must_be_dead() {
        let c = killed("sleep 9", &json!({"exitCode":0,"signal":null}));
        request(&c, 13, "terminal/release", on("t"));
        answer(&c, 13, json!({}));
        request(&c, 14, "terminal/output", on("t"));
        answer(&c, 14, json!({"output":"","truncated":false}));
        let f = c.grade(&Terminal);
        assert_grade(&f, Grade::Fail, "the client killed the command");
        assert!(
            f.message.contains("after terminal/release #"),
            "{}",
            f.message
        );
    }

    /// A command that outlived the kill of its children and wrote the code it exits with (acpx
    /// signals the shell's children first; the shell's `wait` returns): that code is true, as a
    /// signal would be; another code is not.
    #[test]
    fn after_a_kill_the_code_the_command_wrote_is_true_too() {
        for (status, grade) in [
            (json!({"exitCode":143,"signal":null}), Grade::Pass),
            (json!({"exitCode":null,"signal":"SIGTERM"}), Grade::Pass),
            (json!({"exitCode":0,"signal":null}), Grade::Fail),
        ] {
            let c = killed(
                "sleep 30 & wait $!; s=$?; echo $s > .acp-terminal/b.exit; exit $s",
                &status,
            );
            c.note(
                serde_json::from_value(json!({"type":"terminal_probe","name":"b","exit_code":143}))
                    .expect("a terminal_probe note"),
            );
            let f = c.grade(&Terminal);
            assert_eq!(f.grade, grade, "{status}: {f:?}");
        }
    }

    /// A command run in a pseudo-terminal printed `\r\n` for `\n`: that is true output when the
    /// probe says its stdout was a terminal, and a difference (shown to the byte) when not.
    #[test]
    fn pty_line_ends_count_only_for_a_command_run_in_a_pty() {
        // The fixture's outputByteLimit is 4.
        let grade = |printed: &str, output: &str, truncated: bool, tty: bool| {
            let c = lifecycle(
                json!({"exitCode":3,"signal":null}),
                json!({"output":output,"truncated":truncated}),
                probe(json!({"output":printed,"tty":tty})),
            );
            c.grade(&Terminal)
        };
        assert_grade(&grade("a\n", "a\r\n", false, true), Grade::Pass, "");
        assert_grade(&grade("a\n", "a\n", false, true), Grade::Pass, "");
        let f = grade("a\n", "a\r\n", false, false);
        assert_grade(&f, Grade::Fail, "first difference at byte 1");
        assert!(f.message.contains(r#"expected "\n""#), "{}", f.message);
        // Over the limit, the PTY's bytes are the ones cut: "a\r\nb\r\n" is 6 bytes, the limit
        // keeps "\nb\r\n", and the output was cut.
        assert_grade(&grade("a\nb\n", "\nb\r\n", true, true), Grade::Pass, "");
        let f = grade("a\nb\n", "b\r\n", true, true);
        assert_grade(&f, Grade::Fail, "as its pseudo-terminal wrote them");
        assert!(
            f.message.contains("first difference at byte 0"),
            "{}",
            f.message
        );
    }

    #[test]
    fn no_terminal_request_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        assert_grade(
            &c.grade(&Terminal),
            Grade::NotApplicable,
            "no terminal/create",
        );
    }

    #[test]
    fn the_kept_tail_starts_at_a_character_boundary() {
        assert_eq!(kept_tail("abc", None), "abc");
        assert_eq!(kept_tail("abc", Some(5)), "abc");
        assert_eq!(kept_tail("abcd", Some(3)), "bcd");
        assert_eq!(kept_tail("aéb", Some(2)), "b");
        assert_eq!(kept_tail("aéb", Some(3)), "éb");
    }

    #[test]
    fn exit_status_is_compared_with_what_happened() {
        let code3 = serde_json::json!({"exitCode": 3, "signal": null});
        let killed = serde_json::json!({"exitCode": null, "signal": "SIGKILL"});
        let zero = serde_json::json!({"exitCode": 0, "signal": null});
        assert_eq!(exit_problem(&Expected::Code(3), &code3), None);
        assert!(exit_problem(&Expected::Code(3), &zero).is_some());
        assert_eq!(exit_problem(&Expected::Signal, &killed), None);
        assert!(exit_problem(&Expected::Signal, &zero).is_some());
        let code143 = serde_json::json!({"exitCode": 143, "signal": null});
        assert_eq!(exit_problem(&Expected::CodeOrSignal(143), &code143), None);
        assert_eq!(exit_problem(&Expected::CodeOrSignal(143), &killed), None);
        assert!(exit_problem(&Expected::CodeOrSignal(143), &zero).is_some());
    }
}
