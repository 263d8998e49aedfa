#!/usr/bin/env python3
"""An outside observer for chuk-acp (clients/chuk-acp/chuk-acp-program.toml): the same turn
states as the data rules of chuk-acp.toml, as a program. It reads the client's streams as JSON
lines on stdin ({"stream", "time", "text"}; clients/README.md, "Outside observers") and prints
control-v1 events, one JSON object per line."""

import json
import re
import sys

STOP = re.compile(r"^\[Stop reason: ([A-Za-z_]+)\]$")
STATES = {"cancelled": "cancelled", "refusal": "refused"}

session = None  # the session of the client's last session/prompt (from the ACP stream)


def emit(event, evidence):
    event["observed"] = {"by": "chuk-acp.py", "from": "stdout", "evidence": evidence}
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
