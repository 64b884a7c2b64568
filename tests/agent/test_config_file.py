"""The session tools' home, read without the settings' validation, agrees with the settings."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agent.config_file import SettingsError, configured_home
from agent.settings import load_settings


@pytest.mark.parametrize(
    ("flag", "env", "file"), list(itertools.product([None, "f"], [None, "e"], [None, "c"]))
)
def test_configured_home_is_the_home_the_settings_say(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str | None,
    env: str | None,
    file: str | None,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"home = {str(tmp_path / file)!r}\n" if file else "")
    monkeypatch.setenv("REEFLINE_CONFIG", str(config))
    if env:
        monkeypatch.setenv("REEFLINE_HOME", str(tmp_path / env))
    else:
        monkeypatch.delenv("REEFLINE_HOME", raising=False)
    flagged = tmp_path / flag if flag else None
    expected = load_settings({"home": flagged}).home
    assert configured_home(flagged) == expected
    assert expected == (flagged or (tmp_path / env if env else None) or (
        tmp_path / file if file else None
    ))  # fmt: skip


def test_configured_home_refuses_what_the_settings_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REEFLINE_HOME", raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("REEFLINE_CONFIG", str(config))
    flag = tmp_path / "flagged"
    for text, says in (("home = 3\n", "`home`"), ("home = [\n", "invalid TOML")):
        config.write_text(text)
        for load in (
            lambda: configured_home(None),
            lambda: load_settings({}),
            lambda: configured_home(flag),  # a flag does not skip the file's checks
            lambda: load_settings({"home": flag}),
        ):
            with pytest.raises(SettingsError) as caught:
                load()
            assert str(config) in str(caught.value) and says in str(caught.value)
    monkeypatch.setenv("REEFLINE_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(SettingsError, match="does not exist"):
        configured_home(None)
