"""The cluster deployment's files, validated without a Docker daemon: deploy/compose.yaml through Debian's
`docker-compose config` (services, health checks, volumes, one published port, secrets required),
deploy/haproxy.cfg through `haproxy -c` and against the generator `chatbot serve --workers` uses, and the
Dockerfile's instructions (supported Python, non-root, health check on the port the balancer uses)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from ui.replicas import haproxy_config

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the source checkout
COMPOSE = PROJECT_ROOT / "deploy" / "compose.yaml"
HAPROXY_CFG = PROJECT_ROOT / "deploy" / "haproxy.cfg"
DOCKERFILE = PROJECT_ROOT / "Dockerfile"
LONG_RUNNING = {"postgres", "chroma", "llm", "app1", "app2", "balancer"}


def _tool(name: str, package: str) -> str:
    exe = shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
    if exe is None:
        pytest.fail(f"{name} is not installed: `make system-deps` installs the Debian package {package}")
    return exe


def _compose_config(env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = _tool("docker-compose", "docker-compose")
    clean = {k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"}
    return subprocess.run(
        [exe, "-f", str(COMPOSE), "config"], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def compose() -> dict:
    done = _compose_config({"POSTGRES_PASSWORD": "s3cret"})
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_compose_has_every_server_with_health_checks_and_volumes(compose):
    services = compose["services"]
    assert set(services) == LONG_RUNNING | {"migrate"}
    for name in LONG_RUNNING:
        assert services[name]["healthcheck"]["test"][0] == "CMD", name
        assert services[name]["restart"] == "unless-stopped", name
    assert set(compose["volumes"]) == {"pg-data", "chroma-data", "llm-models"}
    assert services["postgres"]["volumes"] == ["pg-data:/var/lib/postgresql/data:rw"]
    assert services["chroma"]["volumes"] == ["chroma-data:/data/chroma:rw"]
    assert services["llm"]["volumes"] == ["llm-models:/models:ro"]
    published = {name for name, s in services.items() if s.get("ports")}
    assert published == {"balancer"}  # the replicas, the database and the index are reachable inside only


def test_compose_replicas_share_the_database_index_and_llm_and_start_after_the_migrations(compose):
    services = compose["services"]
    for name in ("app1", "app2"):
        app = services[name]
        env = app["environment"]
        assert env["CHATBOT_STORE__URL"] == "postgresql+psycopg://chatbot:s3cret@postgres:5432/chatbot"
        assert env["CHATBOT_INDEX__SERVER_URL"] == "http://chroma:8000"
        assert env["CHATBOT_LLM__BASE_URL"] == "http://llm:8080/v1"
        assert env["CHATBOT_LLM__AUTOSTART"] == "false"
        assert "volumes" not in app  # stateless: nothing a request needs lives in the container
        assert app["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
        assert "7860/api/v1/ready" in " ".join(app["healthcheck"]["test"])
    assert services["migrate"]["environment"] == services["app1"]["environment"]
    assert services["migrate"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "chroma": {"condition": "service_healthy"},
    }
    assert set(services["balancer"]["depends_on"]) == {"app1", "app2"}


def test_compose_refuses_to_start_without_the_database_password():
    done = _compose_config({})
    assert done.returncode != 0
    assert "set POSTGRES_PASSWORD" in done.stderr


def test_the_clusters_haproxy_config_is_the_generators_and_haproxy_accepts_it():
    expected = haproxy_config(8080, [("app1", 7860), ("app2", 7860)], bind_host="0.0.0.0", docker_dns=True)
    assert HAPROXY_CFG.read_text() == expected  # regenerate with ui.replicas.haproxy_config when it changes
    done = subprocess.run([_tool("haproxy", "haproxy"), "-c", "-f", str(HAPROXY_CFG)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    servers = re.findall(r"^\s+server (\S+) (\S+):(\d+)", expected, re.M)
    assert servers == [("r1", "app1", "7860"), ("r2", "app2", "7860")] * 2  # api, then pages


def test_the_local_haproxy_config_is_valid_sticky_for_pages_and_retries_refused_connections(tmp_path):
    cfg = haproxy_config(47810, [("127.0.0.1", 47811), ("127.0.0.1", 47812)])
    path = tmp_path / "haproxy.cfg"
    path.write_text(cfg)
    done = subprocess.run([_tool("haproxy", "haproxy"), "-c", "-f", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "cookie cb_replica insert indirect nocache httponly" in cfg
    assert "retry-on conn-failure empty-response" in cfg and "option redispatch" in cfg
    assert "use_backend api if { path_beg /api/ }" in cfg


def test_the_dockerfile_builds_the_supported_python_runs_as_a_user_and_checks_readiness():
    text = DOCKERFILE.read_text()
    lines = re.sub(r"\\\n\s*", " ", text).splitlines()
    instructions = [ln.split(None, 1) for ln in lines if ln.strip() and not ln.startswith("#")]
    first = instructions[0]
    assert first[0] == "FROM"
    requires = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = re.match(r"python:(\d+\.\d+)", first[1]).group(1)
    assert f">={version}" in requires
    user = [arg for op, arg in instructions if op == "USER"]
    assert user and user[-1] not in ("root", "0")
    assert ["EXPOSE", "7860"] in instructions
    health = next(arg for op, arg in instructions if op == "HEALTHCHECK")
    assert "http://127.0.0.1:7860/api/v1/ready" in health
    for op, arg in instructions:
        if op == "COPY":
            *sources, _dest = arg.split()
            for source in sources:
                assert (PROJECT_ROOT / source).exists(), source


def test_the_dockerfile_installs_the_serving_lock_with_hashes_then_the_project_without_dependencies():
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    runs = [ln.split(None, 1)[1] for ln in text.splitlines() if ln.startswith("RUN ")]
    installs = [cmd for run in runs for cmd in run.split("&&") if "pip install" in cmd]
    assert len(installs) == 2, installs
    assert "--require-hashes" in installs[0] and "-r requirements/serve.lock" in installs[0]
    assert "--no-deps" in installs[1] and re.search(r"-e \.\s*$", installs[1]), installs[1]
    assert (PROJECT_ROOT / "requirements" / "serve.lock").is_file()
