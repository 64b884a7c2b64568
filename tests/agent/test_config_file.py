"""The session tools' home, read without the settings' validation, agrees with the settings."""

from __future__ import annotations

import itertools
import os
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


def test_the_environment_layer_sits_between_the_file_and_the_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``REEFLINE_<KEY>`` beats the file and loses to a flag; a table takes JSON or one
    ``__`` entry per variable and is merged key by key with the file's; names in any case."""
    for name in [n for n in os.environ if n.upper().startswith("REEFLINE_")]:
        monkeypatch.delenv(name)
    config = tmp_path / "config.toml"
    config.write_text(
        'model = "from-file"\nmax_steps = 5\n[compaction]\nthreshold_ratio = 0.6\nretries = 1\n'
    )
    monkeypatch.setenv("REEFLINE_CONFIG", str(config))
    monkeypatch.setenv("REEFLINE_MODEL", "from-env")
    monkeypatch.setenv("reefline_max_steps", "7")
    monkeypatch.setenv("REEFLINE_DEMO", "true")
    monkeypatch.setenv("REEFLINE_COMPACTION", '{"retries": 2}')
    monkeypatch.setenv("REEFLINE_COMPACTION__THRESHOLD_RATIO", "0.7")
    monkeypatch.setenv("REEFLINE_CONTEXT_WINDOWS", '{"m": 9000}')
    monkeypatch.setenv("REEFLINE_NOT_A_SETTING", "ignored")
    settings = load_settings({"model": "from-flag", "max_steps": None})
    assert settings.model == "from-flag"  # a flag wins
    assert settings.max_steps == 7 and settings.demo is True  # the environment, converted
    assert settings.compaction == {"threshold_ratio": "0.7", "retries": 2}
    assert settings.context_windows == {"m": 9000}
    for value, says in (("{bad", "JSON expected"), ("[1]", "a JSON object expected")):
        monkeypatch.setenv("REEFLINE_COMPACTION", value)
        with pytest.raises(SettingsError, match=f"REEFLINE_COMPACTION: not a valid value.*{says}"):
            load_settings({})
    monkeypatch.setenv("REEFLINE_COMPACTION", "{}")
    monkeypatch.delenv("reefline_max_steps")
    monkeypatch.setenv("REEFLINE_MAX_STEPS", "many")
    with pytest.raises(SettingsError, match="`max_steps`"):
        load_settings({})


def test_a_bad_value_names_the_flag_or_variable_that_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's errors name the file; a flag's name the flag and what was typed; a
    variable's name the variable as it is spelled, and its value; a flag beats a variable."""
    for name in [n for n in os.environ if n.upper().startswith("REEFLINE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REEFLINE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    with pytest.raises(SettingsError) as caught:
        load_settings({"context_window": -5, "model": None})
    assert str(caught.value).startswith("--context-window -5 (setting `context_window`): ")
    assert "greater than 0" in str(caught.value)
    monkeypatch.setenv("reefline_max_steps", "many")
    monkeypatch.setenv("REEFLINE_CONTEXT_WINDOWS__M", "big")
    with pytest.raises(SettingsError) as caught:
        load_settings({})
    lines = str(caught.value).splitlines()
    for start in (
        "reefline_max_steps='many' (setting `max_steps`): ",
        "REEFLINE_CONTEXT_WINDOWS__M='big' (setting `context_windows.m`): ",
    ):
        assert any(line.startswith(start) for line in lines), (start, lines)
    monkeypatch.delenv("REEFLINE_CONTEXT_WINDOWS__M")
    monkeypatch.setenv("REEFLINE_CONTEXT_WINDOW", "0")
    with pytest.raises(SettingsError) as caught:
        load_settings({"context_window": -1})
    assert "--context-window -1" in str(caught.value) and "REEFLINE_CONTEXT_WINDOW" not in str(
        caught.value
    )
