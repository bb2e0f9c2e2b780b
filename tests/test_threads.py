"""OpenMP's idle threads sleep instead of spinning where chunkmark runs torch (chunkmark.threads).

GNU libgomp (torch's OpenMP in the Linux wheels) reports the settings it read when it loaded
with ``OMP_DISPLAY_ENV=VERBOSE``: its own account, not chunkmark's, is what the integration
tests check. Its spin count is 300000 polls by default and 0 when ``OMP_WAIT_POLICY=PASSIVE``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from chunkmark.threads import WAIT_SETTINGS, passive_openmp


def test_sets_passive_waiting_when_the_environment_does_not_choose() -> None:
    env = {"PATH": "/usr/bin"}
    assert passive_openmp(env) is True
    assert env == {"PATH": "/usr/bin", "OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize(
    "setting",
    [("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "300000"), ("KMP_BLOCKTIME", "200")],
)
def test_leaves_a_users_own_setting_alone(setting: tuple[str, str]) -> None:
    env = dict([setting])
    assert passive_openmp(env) is False
    assert env == dict([setting])


def _libgomp_spin_count(code: str, **extra: str) -> str:
    """What libgomp says its spin count is, in a fresh process running ``code``."""
    env = {k: v for k, v in os.environ.items() if k not in WAIT_SETTINGS}
    env.update(OMP_DISPLAY_ENV="VERBOSE", HF_HUB_OFFLINE="1", **extra)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    found = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)
    assert found, f"libgomp printed no settings: {done.stderr[-2000:]}"
    return found[-1]


@pytest.mark.integration
def test_the_sentence_transformers_embedder_loads_torch_with_passive_waiting() -> None:
    load = (
        "from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder;"
        "SentenceTransformerEmbedder().supports_model_inputs()"  # loads the model and torch
    )
    assert _libgomp_spin_count(load) == "0"
    # The reference: torch loaded without chunkmark's setting spins (libgomp's default).
    assert _libgomp_spin_count("import torch") == "300000"
    # A user's own choice wins.
    assert _libgomp_spin_count(load, GOMP_SPINCOUNT="12345") == "12345"


@pytest.mark.integration
def test_the_command_line_sets_passive_waiting_before_anything_loads_torch() -> None:
    code = (
        "import sys; sys.argv = ['chunkmark', '--version'];"
        "from chunkmark.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import torch"
    )
    assert _libgomp_spin_count(code) == "0"
