"""Headless Chromium for the tools' browser checks (tools/flamegraph-browser-check.py, tools/check-perfetto-ui.py):
find_chromium() finds or installs a Chromium, DevTools drives one over the DevTools protocol
(--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4) and serve() serves pages on 127.0.0.1, a real origin
(history.replaceState needs one), on a random port. Standard library only; a script in tools/ imports it after
putting its own directory first in sys.path.
"""
import base64
import functools
import http.server
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse


def find_chromium(who):
    """The path of a Chromium binary (CHROMIUM, else chromium, chromium-browser or google-chrome on PATH), after
    apt-get installing the Debian package `chromium` when none is there and we are root (or have sudo -n); `who`
    prefixes the note on stderr that says so. None when no Chromium can be had: the caller says it skips."""
    for name in filter(None, [os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]):
        path = shutil.which(name)
        if path:
            return path
    if shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
        if sudo is not None:
            print("%s: installing chromium with apt-get" % who, file=sys.stderr, flush=True)
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, capture_output=True)
            subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True)
            return shutil.which("chromium")
    return None


def serve(directory, files=None):
    """Serves `directory` at / on 127.0.0.1 (a random port) from a background thread, and each file of `files`
    ({URL path such as "/trace/a.json": local file}) at its path; returns (server, base URL ending in /). Call
    server.shutdown() when done."""
    files = {path: os.path.abspath(file) for path, file in (files or {}).items()}

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map, **{
            ".wasm": "application/wasm", ".js": "text/javascript", ".json": "application/json"})

        def translate_path(self, path):
            path_only = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
            if path_only in files:
                return files[path_only]
            return super().translate_path(path)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


class DevTools:
    """A headless Chromium driven over --remote-debugging-pipe, on one page (a target attached flat), offline: no
    host but 127.0.0.1 resolves, and URLs matching `blocked_urls` (Network.setBlockedURLs patterns) fail.

    The viewport is width x height. `timeout` is the default wait, in seconds, for an answer (call, eval) and for a
    page load (open). Chromium's stderr goes to `log_path` (default: nowhere). JavaScript dialogs are recorded in
    .dialogs; they are accepted when `accept_dialogs`, or while ctrl_f answers a prompt, and dismissed otherwise.
    Console errors and uncaught exceptions are recorded in .console."""

    def __init__(self, binary, profile_dir, width=1200, height=300, timeout=30, accept_dialogs=False,
                 blocked_urls=(), log_path=None):
        self.timeout, self.accept_dialogs = timeout, accept_dialogs
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def wire():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.stderr = open(log_path, "w") if log_path else None
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--hide-scrollbars",
             "--user-data-dir=" + profile_dir, "--window-size=%d,%d" % (width, height), "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=self.stderr or subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer, self.next_id, self.loaded, self.dialog_answer = b"", 0, False, None
        self.console, self.dialogs = [], []
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        if blocked_urls:
            self.call("Network.enable")
            self.call("Network.setBlockedURLs", {"urls": list(blocked_urls)})
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False})

    def _receive(self, deadline):
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.from_browser], [], [], max(0.0, deadline - time.time()))
            if not ready:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium exited")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        message = json.loads(message)
        method = message.get("method")
        if method == "Page.javascriptDialogOpening":
            self.dialogs.append(message["params"].get("message", ""))
            self._send("Page.handleJavaScriptDialog", {"accept": self.accept_dialogs or self.dialog_answer is not None,
                                                       "promptText": self.dialog_answer or ""})
        elif method == "Page.loadEventFired":
            self.loaded = True
        elif method == "Runtime.consoleAPICalled" and message["params"].get("type") in ("error", "assert"):
            self.console.append(" ".join(str(a.get("value", a.get("description", "")))
                                         for a in message["params"].get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.console.append(details.get("exception", {}).get("description") or details.get("text", ""))
        return message

    def _send(self, method, params, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def call(self, method, params=None, session=True, timeout=None):
        """The result of a DevTools command; RuntimeError when it fails, TimeoutError when no answer comes."""
        ident = self._send(method, params, session)
        deadline = time.time() + (self.timeout if timeout is None else timeout)
        while True:
            message = self._receive(deadline)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message.get("result", {})

    def open(self, url, timeout=None):
        """Navigates to `url` and waits for its load event."""
        self.loaded = False
        self.call("Page.navigate", {"url": url})
        deadline = time.time() + (self.timeout if timeout is None else timeout)
        while not self.loaded:
            self._receive(deadline)

    def eval(self, expression, timeout=None):
        """The value of a JS expression; promises are awaited."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError("script error: %s" % (details.get("exception", {}).get("description")
                                                     or details.get("text")))
        return result["result"].get("value")

    def pump(self, seconds):
        """Handles events (dialogs, console) for a while."""
        deadline = time.time() + seconds
        try:
            while True:
                self._receive(deadline)
        except TimeoutError:
            pass

    def center(self, selector_js):
        """Viewport centre of the element the expression returns."""
        return self.eval("(function(){var r=(%s).getBoundingClientRect();return [r.x+r.width/2,r.y+r.height/2];})()"
                         % selector_js)

    def mouse(self, kind, point):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": point[0], "y": point[1], "button": "left",
                                               "clickCount": 1})

    def click(self, point):
        self.mouse("mousePressed", point)
        self.mouse("mouseReleased", point)

    def ctrl(self, letter):
        """Ctrl and a lower-case letter, pressed and released."""
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "modifiers": 2, "key": letter,
                                                 "code": "Key" + letter.upper(),
                                                 "windowsVirtualKeyCode": ord(letter.upper())})

    def ctrl_f(self, answer):
        """Ctrl-F, answering the prompt it opens with `answer`."""
        self.dialog_answer = answer
        try:
            self.ctrl("f")
        finally:
            self.dialog_answer = None

    def ctrl_i(self):
        self.ctrl("i")

    def screenshot(self, path):
        """A PNG of the viewport."""
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self):
        self.process.kill()
        self.process.wait()
        if self.stderr:
            self.stderr.close()
