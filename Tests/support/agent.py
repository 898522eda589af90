"""An app on a running `herald device run`, over its agent socket (docs/device-agent.md): what
Tests/webpush/device.py, provider.py and Tests/focus/focus.py drive."""
import json
import socket
import threading

from harness import check_schema


class Agent:
    """One app connection on the device's agent socket: requests answered by id, and the events
    the runtime sends the app collected as they come."""

    def __init__(self, path, app=None, state="background", **hello_fields):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.events, self.answers, self.number = [], {}, 0
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        # In the background, as a chat app is most of the time: what the device presents is
        # then its own decision, not the app's willPresent answer. Without an app: the person
        # holding the device (`user` and `device` messages).
        if app is not None:
            hello = self.call({"op": "hello", "app": app, "state": state, **hello_fields})
            assert hello.get("ok"), hello

    def _read(self):
        buffer = b""
        while True:
            try:
                chunk = self.socket.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                with self.lock:
                    if "event" in message:
                        check_schema("agent-callback-" + str(message["event"]), f"the agent's {message['event']} callback", message)
                        self.events.append(message)
                    else:
                        self.answers[message.get("id")] = message
                    self.lock.notify_all()

    def call(self, message):
        with self.lock:
            self.number += 1
            number = self.number
        self.socket.sendall((json.dumps({"id": number, **message}) + "\n").encode())
        with self.lock:
            if not self.lock.wait_for(lambda: number in self.answers, timeout=15):
                raise AssertionError(f"no answer to {message}")
            answer = self.answers.pop(number)
        op = str(message.get("op"))
        check_schema("agent-answer-" + op if answer.get("ok") else "agent-error", f"the agent's answer to {op}", answer)
        if answer.get("ok"):
            # What the agent accepted is what the schema describes (the app libraries' types come from it).
            check_schema("agent-request-" + op, f"the {op} request the agent accepted", {"id": number, **message})
        return answer

    def ask(self, op, **fields):
        """A request and its answer, `ok` or not."""
        return self.call({"op": op, **fields})

    def take(self, kind, timeout=15):
        """The oldest callback of `kind` not taken yet, waiting for it."""
        with self.lock:
            if not self.lock.wait_for(lambda: any(e.get("event") == kind for e in self.events), timeout=timeout):
                raise AssertionError(f"no {kind} callback")
            found = next(e for e in self.events if e.get("event") == kind)
            self.events.remove(found)
            return found

    def event(self, kind, where=lambda e: True):
        with self.lock:
            return next((e for e in self.events if e.get("event") == kind and where(e)), None)

    def close(self):
        # shutdown first: a close alone does not end the reader thread's recv.
        self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()

