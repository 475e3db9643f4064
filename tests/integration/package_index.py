"""A stand-in for the internet and for PyPI, on this machine: an HTTP server on 127.0.0.2 (port
chosen by the kernel) whose / answers PAGE and whose /simple/ is a PEP 503 simple index of
packages the test builds by hand from tiny projects (no build tools, no network): wheels, and
source distributions whose build fails."""

import base64
import hashlib
import http.server
import io
import os
import re
import tarfile
import tempfile
import threading
import zipfile

PAGE = "hello from the internet stand-in"


def build_wheel(directory, name="tinypkg", version="1.0", source="VALUE = 42\n", requires=()):
    """A minimal pure-Python wheel of module `name`, written by hand."""
    dist = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": source,
        f"{dist}/METADATA": metadata,
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = []
    for path, body in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(body)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    wheel = os.path.join(directory, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel, "w") as z:
        for path, body in files.items():
            z.writestr(path, body)
    return os.path.basename(wheel)


def build_broken_sdist(directory, name, version="1.0"):
    """A source distribution whose in-tree build backend (no build requirements, so nothing is
    fetched) fails, saying so."""
    top = f"{name}-{version}"
    failing = ("def _fail(*args, **kwargs):\n"
               f"    raise RuntimeError('{name} cannot be built: its compiler is missing')\n\n"
               "get_requires_for_build_wheel = build_wheel = build_sdist = _fail\n"
               "prepare_metadata_for_build_wheel = _fail\n")
    files = {
        f"{top}/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                 'backend-path = ["."]\n',
        f"{top}/backend.py": failing,
        f"{top}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    sdist = os.path.join(directory, f"{top}.tar.gz")
    with tarfile.open(sdist, "w:gz") as t:
        for path, body in files.items():
            data = body.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return os.path.basename(sdist)


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Index:
    """The server. `files` lists what /simple/ offers; `hits` every path asked for."""

    def __init__(self, wheels=(("tinypkg", "1.0", "VALUE = 42\n", ()),), broken=()):
        self.dir = tempfile.TemporaryDirectory(prefix="byd-index-")
        self.files = {}  # normalized project name -> file names
        for name, version, source, requires in wheels:
            f = build_wheel(self.dir.name, name, version, source, requires)
            self.files.setdefault(normalize(name), []).append(f)
        for name in broken:
            self.files.setdefault(normalize(name), []).append(
                build_broken_sdist(self.dir.name, name))
        self.wheel = next(iter(self.files.values()))[0]
        self.hits = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits.append(self.path)
                project = re.fullmatch(r"/simple/([^/]+)/", self.path)
                if self.path == "/":
                    body, kind = PAGE.encode(), "text/plain"
                elif self.path == "/simple/":
                    links = "".join(f'<a href="/simple/{p}/">{p}</a>' for p in outer.files)
                    body, kind = f"<html><body>{links}</body></html>".encode(), "text/html"
                elif project and project.group(1) in outer.files:
                    links = "".join(f'<a href="/files/{f}">{f}</a>'
                                    for f in outer.files[project.group(1)])
                    body, kind = f"<html><body>{links}</body></html>".encode(), "text/html"
                elif self.path.startswith("/files/") and any(
                        self.path[7:] in fs for fs in outer.files.values()):
                    with open(os.path.join(outer.dir.name, self.path[7:]), "rb") as f:
                        body, kind = f.read(), "application/octet-stream"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.2:{self.port}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def downloads(self, name):
        """How many times a file of project `name` was fetched."""
        return sum(1 for h in self.hits
                   if h.startswith("/files/") and h[7:] in self.files.get(normalize(name), []))

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.dir.cleanup()
