"""``scripts/install-shim`` (run by ``scripts/demo``) puts a bare ``gridbench`` on PATH for
a new shell, and never overwrites a ``gridbench`` it did not make."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIM = ROOT / "scripts" / "install-shim"


def shim(bin_dir: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRIDBENCH_BIN_DIR": str(bin_dir), "PATH": path}
    return subprocess.run([str(SHIM)], env=env, capture_output=True, text=True, timeout=60)


def test_a_new_shell_runs_bare_gridbench(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    path = f"{bin_dir}:/usr/bin:/bin"
    p = shim(bin_dir, path)
    assert p.returncode == 0, p.stderr
    assert "is on PATH" in p.stdout
    link = bin_dir / "gridbench"
    assert link.is_symlink() and Path(os.readlink(link)) == ROOT / ".venv" / "bin" / "gridbench"
    run = subprocess.run(
        ["bash", "-c", "cd / && gridbench --version"],
        env={"PATH": path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("gridbench ")


def test_a_folder_off_path_gets_the_line_to_add(tmp_path: Path) -> None:
    bin_dir = tmp_path / "elsewhere"
    p = shim(bin_dir, "/usr/bin:/bin")
    assert p.returncode == 0, p.stderr
    assert f'export PATH="{bin_dir}:$PATH"' in p.stdout
    assert (bin_dir / "gridbench").is_symlink()


def test_a_gridbench_it_did_not_make_is_left_alone(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mine = bin_dir / "gridbench"
    mine.write_text("#!/bin/sh\necho mine\n")
    p = shim(bin_dir, f"{bin_dir}:/usr/bin:/bin")
    assert p.returncode == 0
    assert "left alone" in p.stderr
    assert mine.read_text() == "#!/bin/sh\necho mine\n" and not mine.is_symlink()
