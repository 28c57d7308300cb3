"""docker-compose.yml keeps the broker private: Redis needs a password from the environment
(compose refuses to start without one), is not published, and every broker URL carries it."""

from __future__ import annotations

from pathlib import Path

import yaml

COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
REQUIRED = "${FORGETMAP_REDIS_PASSWORD:?"


def test_redis_requires_a_password_from_the_environment_and_is_not_published():
    redis = COMPOSE["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--requirepass") + 1].startswith(REQUIRED)
    assert "ports" not in redis and "network_mode" not in redis


def test_every_broker_url_carries_the_password():
    for name in ("app", "worker"):
        url = COMPOSE["services"][name]["environment"]["FORGETMAP_BROKER_URL"]
        assert url.startswith("redis://:" + REQUIRED) and url.endswith("@redis:6379/0"), name


def test_the_worker_token_is_a_worker_token():
    token = COMPOSE["services"]["worker"]["environment"]["FORGETMAP_API_TOKEN"]
    assert "--role worker" in token
