"""Headless Chromium driven over the DevTools protocol, with every network lookup failing.

Used by the website's browser test and by the explorers' redraw benchmark: open a page from
disk, run JavaScript in it, press real keys (trusted events, as a reader's keyboard sends),
resize the window (a phone's width) and take screenshots. The protocol runs over a pipe
(``--remote-debugging-pipe``: JSON messages separated by NUL bytes on file descriptors 3 and
4 of the browser), so it needs nothing beyond the standard library.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path

#: Flags that keep the browser off the network: every host name fails to resolve and any proxy
#: use goes nowhere; no background or component traffic.
OFFLINE_FLAGS = (
    "--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
)


def chromium_binary() -> str | None:
    """The Chromium executable on the PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _high_fd(fd: int) -> int:
    """``fd`` moved to a number of at least 10, so that it cannot be the 3 or 4 it is copied to."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class BrowserError(RuntimeError):
    """The browser answered a command with an error, raised an exception in the page, or timed out."""


class Browser:
    """One headless Chromium with one page (tab). Use as a context manager.

    Args:
        width, height: the window size in CSS pixels.
        timeout: seconds to wait for any single answer.
    """

    def __init__(self, width: int = 1200, height: int = 900, timeout: float = 60.0):
        binary = chromium_binary()
        if binary is None:
            raise BrowserError("Chromium is not installed (Debian: apt-get install -y chromium)")
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        to_browser_read, to_browser_write = (_high_fd(fd) for fd in os.pipe())
        from_browser_read, from_browser_write = (_high_fd(fd) for fd in os.pipe())
        arguments = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                     "--remote-debugging-pipe", f"--user-data-dir={self.profile.name}",
                     f"--window-size={width},{height}", *OFFLINE_FLAGS, "about:blank"]
        self.pid = os.posix_spawn(binary, arguments, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, to_browser_read, 3), (os.POSIX_SPAWN_DUP2, from_browser_write, 4),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ])
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._write, self._read = to_browser_write, from_browser_read
        self._buffer, self._next_id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End the browser (politely, then by signal) and remove its profile."""
        try:
            self.call("Browser.close", timeout=10)
        except (BrowserError, OSError):
            pass
        for fd in (self._write, self._read):
            try:
                os.close(fd)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
        self.profile.cleanup()

    def _message(self, timeout: float) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], timeout)
            if not ready:
                raise BrowserError(f"no answer from the browser within {timeout} s")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, timeout: float | None = None, **params) -> dict:
        """Send one protocol command (to the page when ``session``) and return its result;
        events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message(timeout or self.timeout)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def wait_for_event(self, method: str, timeout: float | None = None) -> dict:
        """Return the first event named ``method`` (already received or arriving within ``timeout``)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no {method} event within {timeout or self.timeout} s")
            self.events.append(self._message(left))

    def page_errors(self) -> list[str]:
        """The uncaught JavaScript exceptions the page has raised so far."""
        return [event["params"]["exceptionDetails"].get("exception", {}).get("description")
                or event["params"]["exceptionDetails"].get("text", "")
                for event in self.events if event.get("method") == "Runtime.exceptionThrown"]

    def console_errors(self) -> list[str]:
        """Every error the page's console has reported so far: uncaught exceptions (a script that does not
        parse included), ``console.error`` calls, and the browser's own error entries (a resource that
        failed to load, a violated policy)."""
        errors = self.page_errors()
        for event in self.events:
            if event.get("method") == "Runtime.consoleAPICalled" and event["params"]["type"] in ("error", "assert"):
                errors.append("console.error: " + " ".join(str(arg.get("value", arg.get("description", "")))
                                                           for arg in event["params"]["args"]))
            elif event.get("method") == "Log.entryAdded" and event["params"]["entry"]["level"] == "error":
                entry = event["params"]["entry"]
                where = f" ({entry['url']})" if entry.get("url") else ""
                errors.append(f"{entry['source']}: {entry['text']}{where}")
        return errors

    def open(self, page: Path) -> None:
        """Load ``page`` (a file) and wait until its load event."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", session=True, url=Path(page).resolve().as_uri())
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript ``expression`` in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")

    def press(self, key: str, code: int) -> None:
        """Press and release one key (``key`` as in KeyboardEvent.key, ``code`` its Windows key code)
        on the focused element, as a trusted event."""
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", session=True, type=kind, key=key, code=key,
                      windowsVirtualKeyCode=code, nativeVirtualKeyCode=code)

    def resize(self, width: int, height: int, mobile: bool = False) -> None:
        """Emulate a window of ``width`` x ``height`` CSS pixels (``mobile``: a phone's viewport)."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=2 if mobile else 1, mobile=mobile)

    def screenshot(self, path: Path, selector: str | None = None) -> None:
        """Save a PNG of the page (or of the first element matching ``selector``) to ``path``."""
        params = {"format": "png", "captureBeyondViewport": True}
        if selector is not None:
            box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                                ".getBoundingClientRect(); "
                                "return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()")
            params["clip"] = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(base64.b64decode(data))
