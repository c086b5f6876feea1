"""Time from a `cog edit "say ok"` process's start to its first model request, against a loopback
OpenAI-compatible server that answers at once (issue 53: ≤ 0.20 s).

    python benchmarks/first_request.py [--runs 7] [--tls-delay 0.1] [--before DIR]

Each round runs ``python -c pass`` and ``cog edit "say ok"`` in a fresh git repository (a copy of
fixtures/calc), with its own HOME and state folders; the server stamps the moment each request
arrives. Printed: medians of the first request's arrival after the process was started, the whole
run, and the same against ``python -c pass``. ``--tls-delay S`` serves over TLS (a self-signed
certificate made for the run, trusted through ``SSL_CERT_FILE``) and holds every handshake S
seconds, to show what connecting early saves. ``--before DIR``: an older ``cogcli`` and
``workspace_tools`` (``git archive BASE cogcli workspace_tools | tar -x -C DIR``) run on
``PYTHONPATH`` in the same rounds, interleaved. The child's CPU time at its model connection and to
its end are printed too (load disturbs them less than wall time; cog runs under a small probe,
``runpy`` of ``cogcli``, that notes the CPU time when it connects). Not a test: times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import resource
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from model_servers import OpenAIServer, RecordedRequest, Reply  # noqa: E402


#: cog run with its CPU time noted at each connection to the model server (the last: the request)
PROBE = """
import runpy, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
connect = socket.socket.connect
def noted(self, address):
    if isinstance(address, tuple) and address[1] == port:
        with open(out, "a") as file:
            file.write(f"{time.process_time()}\\n")
    return connect(self, address)
socket.socket.connect = noted
sys.argv = ["cog", *sys.argv[3:]]
runpy.run_module("cogcli", run_name="__main__")
"""


def make_cert(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the openssl command line)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


def serve_tls(server: OpenAIServer, cert: Path, key: Path, delay: float) -> None:
    """Serve over TLS, each connection's handshake held ``delay`` seconds first (a far provider),
    in the connection's own thread (so a connection that sends nothing holds no other)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = server._httpd  # type: ignore[attr-defined]
    finish = httpd.finish_request

    def finish_request(sock, address):  # type: ignore[no-untyped-def]
        time.sleep(delay)
        try:
            wrapped = context.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError):  # the local-server check: connected, sent nothing, closed
            return
        finish(wrapped, address)

    httpd.finish_request = finish_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tls-delay", type=float, default=None, metavar="S")
    parser.add_argument("--instruction", default="say ok")
    parser.add_argument("--before", type=Path, metavar="DIR", help="an older tree, run in the same rounds")
    parser.add_argument("--fresh-repo", action="store_true",
                        help="a new repository each round (a first run there: no tool specs kept yet); "
                             "default: one repository per tree, warmed by the uncounted first round, as a person runs cog again")
    options = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {options.runs} runs (medians)")
    arrivals: list[float] = []

    def answer(request: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        return Reply("ok")

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COG_", "OPENAI_", "ANTHROPIC_"))}
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
                   XDG_DATA_HOME=str(home / ".data"), XDG_CACHE_HOME=str(home / ".cache"), OPENAI_API_KEY="sk-test")
        server = OpenAIServer([answer] * (options.runs * 4 + 4))
        with server:
            base_url = server.base_url
            if options.tls_delay is not None:
                cert, key = make_cert(Path(tmp))
                serve_tls(server, cert, key, options.tls_delay)
                base_url = base_url.replace("http://", "https://")
                env["SSL_CERT_FILE"] = str(cert)
            env["OPENAI_BASE_URL"] = base_url
            trees = {"after": env}
            if options.before is not None:
                compile_tree(options.before)
                trees = {"before": {**env, "PYTHONPATH": str(options.before.resolve())}, "after": env}
            compile_tree(ROOT)
            first: dict[str, list[float]] = {k: [] for k in trees}
            whole: dict[str, list[float]] = {k: [] for k in trees}
            cpu: dict[str, list[float]] = {k: [] for k in trees}
            cpu_first: dict[str, list[float]] = {k: [] for k in trees}
            bare: list[float] = []
            for i in range(options.runs + 1):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                python = time.perf_counter() - started
                for name, tree_env in trees.items():
                    repo = Path(tmp) / (f"repo-{name}-{i}" if options.fresh_repo else f"repo-{name}")
                    if not repo.exists():
                        make_repo(repo)
                    arrivals.clear()
                    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
                    started = time.perf_counter()
                    noted = Path(tmp) / f"cpu-{name}-{i}"
                    port = base_url.rsplit(":", 1)[1].split("/")[0]
                    done = subprocess.run([sys.executable, "-c", PROBE, port, str(noted), "edit", options.instruction, "--model", "openai:gpt-4o"],
                                          cwd=repo, env=tree_env, capture_output=True, text=True)
                    ended = time.perf_counter() - started
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if done.returncode != 0 or not arrivals:
                        raise SystemExit(f"cog edit failed ({done.returncode}): {done.stdout}{done.stderr}")
                    if i == 0:
                        continue  # the first run warms caches (byte code, the certificate store, the windows)
                    first[name].append(arrivals[0] - started)
                    whole[name].append(ended)
                    cpu[name].append(after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime)
                    cpu_first[name].append(float(noted.read_text().split()[-1]))
                if i:
                    bare.append(python)
    py = statistics.median(bare)
    print(f"python -c pass: {py * 1000:.0f} ms")
    print(f"{'tree':<8} {'first request':>14} {'over python':>12} {'whole run':>10} {'CPU to request':>15} {'CPU, run':>9}")
    for name in first:
        fr = statistics.median(first[name])
        print(f"{name:<8} {fr * 1000:11.0f} ms {(fr - py) * 1000:9.0f} ms {statistics.median(whole[name]) * 1000:7.0f} ms "
              f"{statistics.median(cpu_first[name]) * 1000:12.0f} ms {statistics.median(cpu[name]) * 1000:6.0f} ms   each: "
              + " ".join(f"{x * 1000:.0f}" for x in first[name]))
    if "before" in first:
        print(f"after/before: first request {statistics.median(first['after']) / statistics.median(first['before']):.2f}, "
              f"CPU to it {statistics.median(cpu_first['after']) / statistics.median(cpu_first['before']):.2f}")
    print("target: first request ≤ 200 ms after start")


def make_repo(repo: Path) -> Path:
    shutil.copytree(ROOT / "fixtures" / "calc", repo)
    subprocess.run(["git", "init", "-q", "."], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"], cwd=repo, check=True)
    return repo


def compile_tree(root: Path) -> None:
    """Byte-compile a tree's cog packages (with PYTHONDONTWRITEBYTECODE set, every run would
    otherwise compile them again)."""
    import compileall

    for package in ("cogcli", "workspace_tools"):
        compileall.compile_dir(root / package, quiet=2)


if __name__ == "__main__":
    main()
