#!/usr/bin/env python3
"""tui-demo: a small full-screen ACP client, for testing the harness's screen observer.

It is a client as a person uses one: it draws on the whole terminal (alternate screen,
cursor moves, repaints), reads keys in raw mode, and knows nothing of the harness. The agent
command is a JSON argv in ACP_HARNESS_AGENT (or the arguments after `--`). The session opens in
the current directory.

Screen: row 0 the title; the conversation below it; a permission card as a box in the middle
("Permission: <title>", "Kind: <tool kind>", one numbered line per option, the selected one in inverse video); the
status line on the second-to-last row ("Done: <stopReason>", "Working…"); the input line "> "
on the last row. Keys: text and Enter send a prompt; at a card, a digit picks that option,
Up/Down move the selection and Enter confirms it, Esc answers `cancelled`; Ctrl-C cancels a
running turn (session/cancel), else quits.

Deliberately plain: Python's standard library only.

Field bugs, for tests (TUI_DEMO_MUTANT=<name>; each is the reference client's mutant of the
same name, clients/README.md "The mutants", except `first-option`):
  first-option          every card is answered with its first option, whatever was picked
  turn-never-ended      the status line never leaves "Working…": no turn is shown ended
  no-cancelled-answer   Stop sends session/cancel but leaves the cards open, unanswered
  kind-from-request     the card's kind is the request's own; `other` or none is shown as other
  relative-cwd          session/new carries cwd "."
"""

import json
import os
import select
import shutil
import subprocess
import sys
import termios
import tty

OUT = sys.stdout
MUTANT = os.environ.get("TUI_DEMO_MUTANT", "")
MUTANTS = ("first-option", "turn-never-ended", "no-cancelled-answer", "kind-from-request",
           "relative-cwd")


def session_cwd():
    # MUTANT relative-cwd: a relative session cwd.
    return "." if MUTANT == "relative-cwd" else os.getcwd()


def write(text):
    OUT.write(text)
    OUT.flush()


class App:
    def __init__(self, agent_argv):
        self.rows, self.cols = shutil.get_terminal_size((80, 24)).lines, shutil.get_terminal_size((80, 24)).columns
        self.agent = subprocess.Popen(
            agent_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.pending = {}  # our request id -> method
        self.session = None
        self.lines = []
        self.message = ""
        self.status = "Starting…"
        self.input = ""
        self.card = None  # (request id, title, kind, options, selected index)
        self.calls = {}  # toolCallId -> the tool call as announced and updated so far
        self.queue = []  # permission requests waiting for the card
        self.turn = None  # id of the running session/prompt
        self.cancelling = False  # Stop pressed, the turn's stopReason not yet in
        self.auth_methods = []  # from initialize: authenticated with once on auth_required
        self.authenticated = False
        self.buffer = b""
        self.running = True

    # --- agent side -------------------------------------------------------------------
    def send(self, obj):
        try:
            self.agent.stdin.write((json.dumps(obj) + "\n").encode())
            self.agent.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the agent is gone; reading its end says so

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.pending[rid] = method
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def from_agent(self, msg):
        if "method" in msg and "id" in msg:
            return self.agent_request(msg)
        if "method" in msg:
            return self.notification(msg)
        method = self.pending.pop(msg.get("id"), None)
        if method == "initialize":
            result = msg.get("result") or {}
            if "error" in msg:
                self.status = "Error: " + str(msg["error"].get("message"))
                return
            if result.get("protocolVersion") != 1:
                # A version this client does not speak: no session, the connection is closed.
                self.status = "Error: the agent speaks protocol version %s, not 1" % result.get("protocolVersion")
                self.agent.stdin.close()
                return
            self.auth_methods = result.get("authMethods") or []
            self.request("session/new", {"cwd": session_cwd(), "mcpServers": []})
        elif method == "authenticate":
            if "error" in msg:
                self.status = "Error: authentication failed: " + str(msg["error"].get("message"))
            else:
                self.authenticated = True
                self.request("session/new", {"cwd": session_cwd(), "mcpServers": []})
        elif method == "session/new":
            self.session = (msg.get("result") or {}).get("sessionId")
            error = msg.get("error") or {}
            method_id = self.agent_auth_method()
            if not self.session and error.get("code") == -32000 and method_id and not self.authenticated:
                # auth_required: authenticate once with a method the agent carries out itself,
                # then open the session again.
                self.status = "Authenticating…"
                self.request("authenticate", {"methodId": method_id})
            else:
                self.status = "Ready" if self.session else "Error: " + str(msg.get("error"))
        elif method == "session/prompt":
            self.turn = None
            self.cancelling = False
            if MUTANT == "turn-never-ended":
                pass  # MUTANT turn-never-ended: the status keeps saying the turn runs
            elif "error" in msg:
                self.status = "Failed: " + str(msg["error"].get("message"))
            else:
                self.status = "Done: " + str((msg.get("result") or {}).get("stopReason"))
            if self.message:
                self.lines.append("Agent: " + self.message)
                self.message = ""

    def agent_auth_method(self):
        for m in self.auth_methods:
            if isinstance(m, dict) and m.get("type") in (None, "agent") and m.get("id"):
                return m["id"]
        return None

    def notification(self, msg):
        if msg.get("method") == "$/cancel_request":
            # The agent withdrew a request: its card goes, answered `cancelled`.
            rid = (msg.get("params") or {}).get("requestId")
            if self.card and self.card[0] == rid:
                self.answer({"outcome": "cancelled"})
            for queued in [q for q in self.queue if q[0] == rid]:
                self.queue.remove(queued)
                self.send({"jsonrpc": "2.0", "id": rid,
                           "result": {"outcome": {"outcome": "cancelled"}}})
            return
        update = (msg.get("params") or {}).get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.message += ((update.get("content") or {}).get("text") or "")
        elif kind in ("tool_call", "tool_call_update"):
            self.merge(update)
            if kind == "tool_call":
                self.lines.append("[tool] %s" % update.get("title"))

    def merge(self, update):
        """The tool call as known so far: every update's fields over the earlier ones, except
        that a kind `other` does not hide a specific kind announced before."""
        call = self.calls.setdefault(update.get("toolCallId"), {})
        for key, value in update.items():
            if value is None or key == "sessionUpdate":
                continue
            if key == "kind" and value == "other" and call.get("kind") not in (None, "other"):
                continue
            call[key] = value
        return call

    @staticmethod
    def shown_kind(call):
        """What the card says the tool does: its kind, or for `other` and no kind, a command
        when it has one, a file change when it touches files."""
        kind = call.get("kind")
        if kind and kind != "other":
            return kind
        if isinstance((call.get("rawInput") or {}).get("command"), str):
            return "execute"
        content = call.get("content") or []
        if call.get("locations") or any(c.get("type") == "diff" for c in content if isinstance(c, dict)):
            return "edit"
        return "other"

    def agent_request(self, msg):
        if msg["method"] == "session/request_permission":
            params = msg.get("params") or {}
            call = self.merge(dict(params.get("toolCall") or {}))
            command = (call.get("rawInput") or {}).get("command")
            title = call.get("title") or (command if isinstance(command, str) else "a tool call")
            kind = self.shown_kind(call)
            if MUTANT == "kind-from-request":
                # MUTANT kind-from-request: the request's own kind, nothing announced before.
                kind = (params.get("toolCall") or {}).get("kind") or "other"
            options = params.get("options") or []
            if self.cancelling:
                # Stop was pressed and the turn has not ended: the request is part of the
                # cancelled turn, answered `cancelled` without asking.
                self.send({"jsonrpc": "2.0", "id": msg["id"],
                           "result": {"outcome": {"outcome": "cancelled"}}})
                return
            self.queue.append((msg["id"], title, kind, options, 0))
            if self.card is None:
                self.card = self.queue.pop(0)
        else:
            self.send({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": -32601, "message": "method not found: " + msg["method"]}})

    def answer(self, outcome):
        rid = self.card[0]
        if MUTANT == "first-option" and outcome.get("outcome") == "selected" and self.card[3]:
            outcome = {"outcome": "selected", "optionId": self.card[3][0]["optionId"]}
        self.send({"jsonrpc": "2.0", "id": rid, "result": {"outcome": outcome}})
        self.card = self.queue.pop(0) if self.queue else None

    def agent_gone(self):
        """The agent's output ended: a running turn failed, a session not yet open never
        will be, and open cards can no longer be answered."""
        self.card, self.queue = None, []
        if self.turn is not None:
            self.turn = None
            if MUTANT != "turn-never-ended":
                self.status = "Failed: the agent exited during the turn"
        elif self.session is None and not self.status.startswith("Error"):
            self.status = "Error: the agent exited before the session opened"
        elif not self.status.startswith(("Error", "Failed")):
            self.status = "Error: the agent exited"

    # --- keys -----------------------------------------------------------------------
    def key(self, data):
        while data:
            if data.startswith(b"\x1b[A") or data.startswith(b"\x1bOA"):
                self.move(-1)
                data = data[3:]
            elif data.startswith(b"\x1b[B") or data.startswith(b"\x1bOB"):
                self.move(1)
                data = data[3:]
            elif data.startswith(b"\x1b["):
                data = data[3:]
            elif data[:1] == b"\x1b":
                if self.card:
                    self.answer({"outcome": "cancelled"})
                data = data[1:]
            elif data[:1] == b"\x03":
                if self.turn is not None:
                    self.send({"jsonrpc": "2.0", "method": "session/cancel",
                               "params": {"sessionId": self.session}})
                    self.status = "Cancelling…"
                    self.cancelling = True
                    # Every card of the turn is answered `cancelled` (MUTANT no-cancelled-answer:
                    # they stay open, and the requests are never answered).
                    while self.card and MUTANT != "no-cancelled-answer":
                        self.answer({"outcome": "cancelled"})
                else:
                    self.running = False
                data = data[1:]
            elif data[:1] in (b"\r", b"\n"):
                self.enter()
                data = data[1:]
            elif data[:1] == b"\x7f":
                self.input = self.input[:-1]
                data = data[1:]
            else:
                ch = data[:1].decode("latin-1")
                if self.card and ch.isdigit():
                    n = int(ch)
                    if 1 <= n <= len(self.card[3]):
                        self.answer({"outcome": "selected", "optionId": self.card[3][n - 1]["optionId"]})
                elif not self.card:
                    self.input += ch
                data = data[1:]

    def move(self, step):
        if self.card:
            rid, title, kind, options, sel = self.card
            self.card = (rid, title, kind, options, (sel + step) % max(len(options), 1))

    def enter(self):
        if self.card:
            options = self.card[3]
            if options:
                self.answer({"outcome": "selected", "optionId": options[self.card[4]]["optionId"]})
            return
        text = self.input.strip()
        self.input = ""
        if not text or self.session is None or self.turn is not None:
            return
        self.lines.append("You: " + text)
        self.status = "Working…"
        self.turn = self.request("session/prompt", {
            "sessionId": self.session, "prompt": [{"type": "text", "text": text}]})

    # --- screen ---------------------------------------------------------------------
    def draw(self):
        rows, cols = self.rows, self.cols
        out = ["\x1b[H\x1b[2J", "\x1b[1;1H\x1b[1mtui-demo\x1b[0m"]
        body = self.lines + (["Agent: " + self.message] if self.message else [])
        room = rows - 4
        for i, line in enumerate(body[-room:]):
            out.append("\x1b[%d;1H%s" % (i + 2, line[:cols]))
        if self.card:
            _, title, kind, options, sel = self.card
            inner = ["Permission: " + title, "Kind: " + kind] + [
                "%d) %s" % (i + 1, o.get("name", o.get("optionId"))) for i, o in enumerate(options)]
            if self.queue:
                inner.append("(%d more waiting)" % len(self.queue))
            width = min(max(len(s) for s in inner) + 2, cols - 4)
            top = max(2, (rows - len(inner) - 2) // 2)
            out.append("\x1b[%d;3H┌%s┐" % (top, "─" * width))
            for i, text in enumerate(inner):
                text = (" " + text).ljust(width)[:width]
                if i - 2 == sel:
                    text = "\x1b[7m" + text + "\x1b[0m"
                out.append("\x1b[%d;3H│%s│" % (top + 1 + i, text))
            out.append("\x1b[%d;3H└%s┘" % (top + 1 + len(inner), "─" * width))
        out.append("\x1b[%d;1H%s" % (rows - 1, self.status[:cols]))
        out.append("\x1b[%d;1H> %s" % (rows, self.input[: cols - 3]))
        write("".join(out))

    def run(self):
        self.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                   "terminal": False},
            "clientInfo": {"name": "tui-demo", "version": "0.1.0"}})
        fd = sys.stdin.fileno()
        agent_out = self.agent.stdout.fileno()
        self.draw()
        while self.running:
            ready, _, _ = select.select([fd] + ([agent_out] if agent_out else []), [], [], 1.0)
            if agent_out is not None and agent_out in ready:
                chunk = os.read(agent_out, 65536)
                if not chunk:
                    self.agent_gone()
                    agent_out = None
                    self.draw()
                    continue
                self.buffer += chunk
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(msg, dict):
                        self.from_agent(msg)
            if fd in ready:
                data = os.read(fd, 1024)
                if not data:
                    break
                self.key(data)
            self.draw()
        self.agent.terminate()
        try:
            self.agent.wait(2)
        except subprocess.TimeoutExpired:
            self.agent.kill()


def main():
    args = sys.argv[1:]
    if args == ["--version"]:
        print("tui-demo 0.1.0")
        return 0
    if MUTANT and MUTANT not in MUTANTS:
        print("tui-demo: unknown TUI_DEMO_MUTANT %r (one of %s)" % (MUTANT, ", ".join(MUTANTS)),
              file=sys.stderr)
        return 2
    if "--" in args:
        agent = args[args.index("--") + 1:]
    else:
        agent = json.loads(os.environ.get("ACP_HARNESS_AGENT", "[]"))
    if not agent:
        print("tui-demo: no agent command (ACP_HARNESS_AGENT or -- <argv>)", file=sys.stderr)
        return 2
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    write("\x1b[?1049h")
    try:
        App(agent).run()
    finally:
        write("\x1b[?1049l")
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
