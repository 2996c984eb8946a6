"""The Python client is ready to publish: `python -m build` makes an sdist and a wheel from
clients/python (offline, no build isolation: setuptools is in the test extra), `twine check
--strict` passes, and the metadata carries the readme, the license and the classifiers."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import hitl_bridge_client

CLIENT_DIR = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_build_and_twine_check_pass(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out),
                    str(source)], check=True, capture_output=True, text=True, timeout=300)
    version = hitl_bridge_client.__version__
    built = sorted(p.name for p in out.iterdir())
    assert built == [f"hitl_bridge_client-{version}-py3-none-any.whl", f"hitl_bridge_client-{version}.tar.gz"], built
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(out / built[0]) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(wheel.read(name).decode())
    assert meta["Version"] == version and meta["Description-Content-Type"] == "text/markdown"
    assert "# hitl-bridge-client" in (meta.get_payload() or "")  # the readme is the long description
    classifiers = meta.get_all("Classifier") or []
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers and "Typing :: Typed" in classifiers
