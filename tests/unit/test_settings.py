"""Settings: one class per process kind, read from FORGETMAP_* variables."""

import os
from pathlib import Path

import pytest
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import SettingsError, WebSettings
from forgetmap.worker.settings import WorkerSettings


def test_the_worker_reads_its_documented_variables(monkeypatch):
    env = {
        "FORGETMAP_APP_URL": "http://app:8000/",
        "FORGETMAP_API_TOKEN": "fm_x",
        "FORGETMAP_MODEL_ROOTS": "/models:/more:",
        "FORGETMAP_BENCHMARK_DIRS": "",
        "FORGETMAP_BROKER_URL": "redis://r:6379/0",
        "FORGETMAP_QUEUE": "q",
        "FORGETMAP_VISIBILITY_TIMEOUT": "7200",
        "FORGETMAP_TRUST_REMOTE_CODE": "1",
        "VLLM_BATCH_INVARIANT": "1",
        "FORGETMAP_TORCH_THREADS": "",
        "FORGETMAP_WORKER_NAME": "w1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = WorkerSettings.from_env()
    assert settings.app_url == "http://app:8000" and settings.token == "fm_x"
    assert settings.model_roots == (Path("/models"), Path("/more"))
    assert settings.benchmark_dirs == () and settings.torch_threads is None  # empty: unset
    assert (settings.broker.url, settings.broker.queue, settings.broker.visibility_timeout) == (
        "redis://r:6379/0",
        "q",
        7200,
    )
    assert settings.trust_remote_code and settings.batch_invariant and settings.name == "w1"
    assert "fm_x" not in repr(settings)


def test_the_app_reads_its_variables_and_keeps_a_secret(monkeypatch, tmp_path):
    monkeypatch.setenv("FORGETMAP_PRIVATE", "yes")
    monkeypatch.setenv("FORGETMAP_SESSION_DAYS", "0.5")
    monkeypatch.delenv("FORGETMAP_SECRET_KEY", raising=False)
    settings = WebSettings.from_env(tmp_path)
    assert settings.private and settings.session_seconds == 12 * 3600
    assert settings.secret_key == (tmp_path / "secret_key").read_text().strip()
    assert WebSettings.from_env(tmp_path).secret_key == settings.secret_key  # kept, not renewed


def test_the_broker_folder_follows_the_database_unless_named(monkeypatch, tmp_path):
    monkeypatch.delenv("FORGETMAP_DATA_DIR", raising=False)
    monkeypatch.delenv("FORGETMAP_BROKER_URL", raising=False)
    assert BrokerSettings.from_env(data_dir=tmp_path).data_dir == tmp_path
    monkeypatch.setenv("FORGETMAP_DATA_DIR", "/elsewhere")
    assert BrokerSettings.from_env(data_dir=tmp_path).data_dir == Path("/elsewhere")
    assert BrokerSettings.from_env().url is None  # the embedded queue


def test_a_bad_value_names_its_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("FORGETMAP_PRIVATE", "maybe")
    with pytest.raises(SettingsError, match="^FORGETMAP_PRIVATE: Input should be a valid boolean"):
        WebSettings.from_env(tmp_path)
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "perhaps")
    with pytest.raises(SettingsError, match="^VLLM_BATCH_INVARIANT: "):
        WorkerSettings.from_env()


def test_a_mapping_is_read_as_the_environment_would_be(monkeypatch, tmp_path):
    """``read_settings(cls, environ)``: a launcher's own variables, read by the same rules (an
    empty one is unset, aliases, lists of folders, errors naming the variable), with the process's
    environment left as it was."""
    from forgetmap.runtime.config import read_settings
    from forgetmap.web.up import up_environment

    monkeypatch.delenv("FORGETMAP_MODEL_ROOTS", raising=False)
    before = dict(os.environ)
    environ = {
        "FORGETMAP_MODEL_ROOTS": "/models:/more",
        "FORGETMAP_RECONCILE_SECONDS": "1",
        "FORGETMAP_PRIVATE": "",
        "FORGETMAP_BROKER_URL": "redis://r:6379/3",
    }
    web = WebSettings.from_env(tmp_path, environ)
    assert web.model_roots == (Path("/models"), Path("/more")) and web.reconcile_seconds == 1
    assert web.private is False and web.secret_key  # empty: unset; the key kept beside the db
    assert BrokerSettings.from_env(tmp_path, environ).url == "redis://r:6379/3"
    with pytest.raises(SettingsError, match="FORGETMAP_RECONCILE_SECONDS"):
        read_settings(WebSettings, {"FORGETMAP_RECONCILE_SECONDS": "soon"})
    with pytest.raises(SettingsError, match="FORGETMAP_STALE_SECONDS"):
        read_settings(WebSettings, {"FORGETMAP_STALE_SECONDS": "0"})  # must be > 0
    up = up_environment(tmp_path, {"FORGETMAP_BENCHMARK_DIRS": "/bench"})
    assert up["FORGETMAP_MODEL_ROOTS"] == str(tmp_path / "models")
    assert (tmp_path / "models").is_dir() and up["FORGETMAP_BENCHMARK_DIRS"] == "/bench"
    assert up["FORGETMAP_DATA_DIR"] == str(tmp_path)
    assert dict(os.environ) == before
