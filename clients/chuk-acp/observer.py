#!/usr/bin/env python3
"""An outside observer for chuk-acp (clients/chuk-acp/chuk-acp-program.toml): the same turn
states as the data rules of chuk-acp.toml, as a program. It reads the client's streams as JSON
lines on stdin ({"stream", "time", "text"}; clients/README.md, "Outside observers") and prints
control-v1 events, one JSON object per line. When chuk-acp gives up before any prompt reached the
agent (the agent died or refused the session), its "Error connecting to agent: …" line is the
error it showed for the session that never opened."""

import json
import re
import sys

STOP = re.compile(r"^\[Stop reason: ([A-Za-z_]+)\]$")
STATES = {"cancelled": "cancelled", "refusal": "refused"}

session = None  # the session of the client's last session/prompt (from the ACP stream)
gave_up = None  # chuk-acp's error line while no prompt had reached the agent


def emit(event, evidence, source="stdout"):
    event["observed"] = {"by": "chuk-acp.py", "from": source, "evidence": evidence}
    print(json.dumps(event), flush=True)


for line in sys.stdin:
    msg = json.loads(line)
    if msg["stream"] == "acp" and msg.get("dir") == "c2a":
        frame = json.loads(msg["text"])
        if frame.get("method") == "session/prompt":
            session = frame["params"]["sessionId"]
    elif msg["stream"] == "stdout" and session is not None:
        text = msg["text"]
        stop = STOP.match(text)
        if stop:
            state = STATES.get(stop.group(1), "completed")
            emit({"type": "turn", "sessionId": session, "state": state,
                  "stopReason": stop.group(1)}, text)
        elif text == "Interrupted by user":
            emit({"type": "turn", "sessionId": session, "state": "cancelled"}, text)
    elif msg["stream"] == "stderr":
        text = msg["text"]
        failed = text == "(No response from agent)" or text.startswith("Error connecting to agent:")
        if failed and session is not None:
            emit({"type": "turn", "sessionId": session, "state": "failed"}, text, "stderr")
        elif failed:
            gave_up = text
    elif msg["stream"] == "exit" and session is None and gave_up is not None:
        emit({"type": "error", "message": "chuk-acp printed \"%s\" and no prompt reached the agent"
              % gave_up}, gave_up, "stderr")
