"""Fetch the website's JavaScript (MathJax, RequireJS, the ipywidgets HTML manager)
from the npm registry at the versions pinned in ``book/_ext/vendored_assets.json``.

The files land in ``_vendor/`` (git-ignored); the Sphinx extension
``book/_ext/vendored_assets.py`` points the pages at them and copies them into the
built site, so the website needs no CDN. Uses ``npm pack`` (the npm client), so it
needs Node.js/npm and access to the registry. Re-running is cheap: packages already
present at the pinned version are skipped.

Usage: ``python scripts/vendor_assets.py``
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "book" / "_ext" / "vendored_assets.json"
TARGET = ROOT / "_vendor"


def fetch(package: dict, workdir: Path) -> None:
    spec = f"{package['name']}@{package['version']}"
    stamp = TARGET / ".stamps" / spec.replace("/", "__")
    if stamp.exists() and all((TARGET / dest).exists() for dest in package["copy"].values()):
        print(f"{spec}: already vendored")
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("vendor_assets: npm is not installed (Debian: apt-get install -y npm)")
    out = subprocess.run(
        [npm, "pack", spec, "--silent", "--pack-destination", str(workdir)],
        check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    with tarfile.open(workdir / out) as tar:
        tar.extractall(workdir / "unpacked", filter="data")
    unpacked = workdir / "unpacked" / "package"
    for src, dest in package["copy"].items():
        source, destination = unpacked / src, TARGET / dest
        if destination.exists():
            shutil.rmtree(destination) if destination.is_dir() else destination.unlink()
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns("*.map", "*.d.ts"))
        else:
            shutil.copy2(source, destination)
    shutil.rmtree(workdir / "unpacked")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(spec + "\n")
    print(f"{spec}: vendored")


def main() -> None:
    manifest = json.loads(MANIFEST.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for package in manifest["packages"]:
            fetch(package, Path(tmp))


if __name__ == "__main__":
    main()
