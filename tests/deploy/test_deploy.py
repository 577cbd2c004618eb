"""The docker-compose deployment, checked as data against lorelab itself.

Docker cannot run here, so these tests read docker-compose.yml (with the values of
deploy/lorelab.env.example put in, as Compose would), the Dockerfile and deploy/config.toml, and
hold them against what lorelab does: its config loader, its CLI, a real Celery worker on Redis.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import itertools
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bot.config import Settings, load_settings
from bot.config.lab_hosts import queue_names
from bot.config.report import PASSWORD_ENV
from tests.cli import Lorelab
from tests.support.paths import REPO
from tests.support.redis_broker import private_broker

pytestmark = pytest.mark.slow  # end to end: CI, not the fast loop

ROOT = REPO
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / "deploy" / "lorelab.env.example"
CONFIG = ROOT / "deploy" / "config.toml"

LORELAB_SERVICES = ("migrate", "web", "scheduler", "build-worker", "lab-worker")
LAB_PACKAGES = ("qemu-system-x86", "busybox-static", "rt-tests", "memcached",
                "libmemcached-tools", "e2fsprogs")

_VARIABLE = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


def env_example() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def interpolate(text: str, values: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error}; `$$` is a literal `$`."""

    def value(match: re.Match[str]) -> str:
        name, kind, default = match.groups()
        if name in values:
            return values[name]
        if kind == "-":
            return default
        raise KeyError(f"docker-compose.yml uses ${{{name}}}, which has no value")

    escaped = text.replace("$$", "\0")
    return _VARIABLE.sub(value, escaped).replace("\0", "$")


@functools.cache
def compose() -> dict[str, Any]:
    return yaml.safe_load(interpolate(COMPOSE.read_text(), env_example()))


def service(name: str) -> dict[str, Any]:
    return compose()["services"][name]


def mounts(name: str) -> dict[str, tuple[str, str]]:
    """A service's volumes as {target: (source, mode)}."""
    found = {}
    for entry in service(name).get("volumes", []):
        source, target, *mode = entry.split(":")
        found[target] = (source, mode[0] if mode else "rw")
    return found


def environment(name: str) -> dict[str, str]:
    return {key: str(value) for key, value in service(name).get("environment", {}).items()}


def settings_of(name: str) -> Settings:
    """deploy/config.toml as the service sees it: with the service's environment applied."""
    return load_settings(CONFIG, env=environment(name))


def dockerfile_stages() -> dict[str, tuple[str, str]]:
    """{stage name: (what it is FROM, its instructions)}."""
    stages: dict[str, tuple[str, str]] = {}
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    for block in re.split(r"(?m)^(?=FROM )", text)[1:]:
        header = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", block, re.IGNORECASE)
        assert header, f"every stage is named: {block.splitlines()[0]}"
        stages[header.group(2)] = (header.group(1), block)
    return stages


def stage_chain(stages: dict[str, tuple[str, str]], name: str) -> str:
    """The instructions of a stage and every stage it is built on, oldest first."""
    parent, text = stages[name]
    return (stage_chain(stages, parent) if parent in stages else "") + text


def celery_workers() -> dict[str, dict[str, Any]]:
    """{service: {"app", "queues", "concurrency", "node"}} of each service running a worker."""
    workers = {}
    for name, spec in compose()["services"].items():
        command = spec.get("command") or []
        if command[:1] != ["celery"]:
            continue
        options = dict(zip(command, command[1:], strict=False))
        assert command[3] == "worker", command
        workers[name] = {"app": options["-A"], "queues": set(options["-Q"].split(",")),
                         "concurrency": int(options["-c"]), "node": options["-n"]}
    return workers


def test_the_deployment_has_its_services_and_they_start_in_order() -> None:
    services = compose()["services"]
    assert {"postgres", "redis", *LORELAB_SERVICES} <= set(services)
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    for name in ("postgres", "redis"):
        assert services[name]["healthcheck"]["test"], name
    for name in LORELAB_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy", name
        if name != "migrate":  # everything else waits for the schema to be up to date
            assert depends["redis"]["condition"] == "service_healthy", name
            assert depends["migrate"]["condition"] == "service_completed_successfully", name
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["command"] == ["lorelab", "db", "upgrade"]


def test_lorelab_services_share_one_image_per_dockerfile_target() -> None:
    stages = dockerfile_stages()
    targets = {}
    for name in LORELAB_SERVICES:
        build = service(name)["build"]
        assert (build["context"], build["dockerfile"]) == (".", "Dockerfile"), name
        assert build["target"] in stages, f"{name}: no stage {build['target']} in the Dockerfile"
        targets.setdefault(build["target"], set()).add(service(name)["image"])
    assert {s: service(s)["build"]["target"] for s in LORELAB_SERVICES} == {
        "migrate": "app", "web": "app", "scheduler": "app", "build-worker": "app",
        "lab-worker": "lab-worker"}
    assert all(len(images) == 1 for images in targets.values()), targets  # one image a target
    assert targets["app"] != targets["lab-worker"]
    assert stages["base"][0] == "python:3.11-slim-bookworm"
    # QEMU and the benchmark programs only in the lab worker's image.
    for package in LAB_PACKAGES:
        assert package in stages["lab-worker"][1], package
        assert package not in stage_chain(stages, "app"), package
    # Every service runs as the unprivileged user: the last USER of each target's chain.
    for target in ("app", "lab-worker"):
        users = re.findall(r"(?m)^USER\s+(\S+)", stage_chain(stages, target))
        assert users and users[-1] == "lorelab", (target, users)


def test_every_compose_variable_is_in_the_env_example_and_the_secrets_stay_out() -> None:
    used = {m.group(1) for m in _VARIABLE.finditer(COMPOSE.read_text().replace("$$", ""))}
    defined = set(env_example())
    assert used - defined == set(), "used in docker-compose.yml, not in the env example"
    assert defined - used == set(), "in the env example, used nowhere"
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "deploy/lorelab.env"])
    assert ignored.returncode == 0, ".gitignore must keep deploy/lorelab.env out of git"
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    parts = Path("deploy/lorelab.env").parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    assert any(fnmatch.fnmatch(p, pattern) for p in prefixes for pattern in patterns), \
        ".dockerignore must keep deploy/lorelab.env out of every image"


def test_each_secret_reaches_only_the_service_that_needs_it() -> None:
    example = env_example()
    for name in compose()["services"]:
        assert "env_file" not in service(name), f"{name}: env_file would hand it every secret"
    holders = {
        secret: {name for name in compose()["services"] if example[secret] in str(service(name))}
        for secret in ("POSTGRES_PASSWORD", "REDIS_PASSWORD", "LORELAB_SMTP_PASSWORD",
                       "LORELAB_WEB_ADMIN_TOKEN")
    }
    assert holders["LORELAB_SMTP_PASSWORD"] == {"scheduler"}
    assert holders["LORELAB_WEB_ADMIN_TOKEN"] == {"web"}
    assert holders["POSTGRES_PASSWORD"] == {"postgres", *LORELAB_SERVICES}
    assert holders["REDIS_PASSWORD"] == {"redis", *LORELAB_SERVICES}


def test_the_deployed_config_loads_and_points_at_the_compose_services() -> None:
    example = env_example()
    postgres = environment("postgres")
    file_settings = load_settings(CONFIG, env={})
    file_url = sa.engine.make_url(file_settings.database.url)
    for name in LORELAB_SERVICES:
        env = environment(name)
        assert mounts(name)[env["LORELAB_CONFIG"]] == ("./deploy/config.toml", "ro"), name
        cfg = settings_of(name)
        assert cfg.source == CONFIG
        url = sa.engine.make_url(cfg.database.url)
        assert (url.drivername, url.host, url.port) == ("postgresql+psycopg", "postgres", 5432)
        assert (url.username, url.password, url.database) == (
            postgres["POSTGRES_USER"], example["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"])
        # the environment adds the password to the file's URL, and changes nothing else
        same = ("drivername", "username", "host", "port", "database", "query")
        assert [getattr(url, key) for key in same] == [getattr(file_url, key) for key in same]
        broker = urlsplit(cfg.celery.broker_url)
        assert (broker.scheme, broker.hostname, broker.port) == ("redis", "redis", 6379)
        assert broker.password == example["REDIS_PASSWORD"]
        assert broker._replace(netloc="redis:6379").geturl() == file_settings.celery.broker_url
    # the secrets' variables are the names lorelab reads
    assert settings_of("web").web.admin_token == example["LORELAB_WEB_ADMIN_TOKEN"]
    assert environment("scheduler")[PASSWORD_ENV] == example["LORELAB_SMTP_PASSWORD"]
    scheduler = settings_of("scheduler")
    scheduler.report.validate()
    assert scheduler.report.mode == "smtp" and scheduler.report.moderation
    assert scheduler.sources, "the scheduler's `lorelab run` needs [[sources]]"


def test_volumes_are_mounted_where_the_config_puts_things() -> None:
    cfg = settings_of("build-worker")
    work = cfg.build.work_dir
    build = mounts("build-worker")
    assert build[work] == ("work", "rw")
    # where workers/kernel/build.py puts it
    assert build[str(Path(work) / "ccache")] == ("ccache", "rw")
    trees = next(target for target, (source, _) in build.items() if source == "trees")
    assert cfg.trees and all(Path(t.path).parent == Path(trees) for t in cfg.trees)
    assert mounts("lab-worker")[work] == ("work", "ro")  # the kernels it boots
    data_dir = environment("scheduler")["LORELAB_DATA_DIR"]
    assert mounts("scheduler")[data_dir] == ("data", "rw")  # the outbox, among others
    assert mounts("lab-worker")[data_dir] == ("data", "rw")  # the ssh runner's known_hosts
    assert mounts("postgres")["/var/lib/postgresql/data"] == ("pgdata", "rw")
    assert mounts("redis")["/data"] == ("redisdata", "rw")
    declared = set(compose()["volumes"])
    used = {source for name in compose()["services"] for source, _ in mounts(name).values()
            if not source.startswith(".")}
    assert used == declared
    # A new volume takes its owner from the image's directory: the lorelab user must own every
    # mount point, or the services cannot write their volumes.
    owned = re.search(r"install -d -o lorelab -g lorelab ([^\n]+)",
                      DOCKERFILE.read_text().replace("\\\n", " ")).group(1).split()
    for name in LORELAB_SERVICES:
        for target, (source, _) in mounts(name).items():
            if not source.startswith("."):
                assert target in owned, f"{name}: {target} is not made for the lorelab user"


def test_each_lab_host_has_one_worker_that_runs_one_benchmark_at_a_time() -> None:
    workers = celery_workers()
    cfg = settings_of("lab-worker")
    assert {w["app"] for w in workers.values()} == {"workers.app"}
    assert workers["build-worker"]["queues"] == {"git", "build"}
    assert workers["build-worker"]["concurrency"] == 1
    lab_queues = {h.queue_name for h in cfg.lab_hosts}
    assert lab_queues == {"lab.vm1"}
    served = [q for w in workers.values() for q in w["queues"] if q.startswith("lab.")]
    assert sorted(served) == sorted(lab_queues), "each lab host served exactly once"
    for name, worker in workers.items():
        assert worker["queues"] <= set(queue_names(settings_of(name).lab_hosts)), name
        if worker["queues"] & lab_queues:
            assert worker["concurrency"] == 1, name
            assert worker["queues"] <= lab_queues, f"{name}: a lab worker must not also build"


def test_only_the_lab_worker_opens_dev_kvm_and_nothing_is_privileged() -> None:
    for name, spec in compose()["services"].items():
        assert not spec.get("privileged"), name
        assert not spec.get("cap_add"), name
        has_kvm = any(d.split(":")[0] == "/dev/kvm" for d in spec.get("devices", []))
        assert has_kvm == (name == "lab-worker"), name
    assert service("lab-worker")["group_add"] == [env_example()["KVM_GID"]]
    # What workers/kernel/sandbox.py needs to make its namespaces as an unprivileged user, and no
    # more.
    assert sorted(service("build-worker")["security_opt"]) == [
        "apparmor=unconfined", "seccomp=unconfined", "systempaths=unconfined"]
    others = [n for n, s in compose()["services"].items() if s.get("security_opt")]
    assert others == ["build-worker"]


LORELAB_COMMANDS = [name for name in LORELAB_SERVICES
                    if service(name)["command"][0] == "lorelab"]


@pytest.mark.parametrize("name", LORELAB_COMMANDS)
def test_the_compose_commands_are_real_lorelab_commands(name: str, tmp_path: Path) -> None:
    command = service(name)["command"][1:]
    words = tuple(itertools.takewhile(lambda word: not word.startswith("-"), command))
    cli = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    help_text = cli.run(*words, "--help").stdout.decode()
    for option in (word for word in command if word.startswith("--")):
        assert option in help_text, f"`lorelab {' '.join(words)}` has no {option}"


def test_the_image_gets_every_file_lorelab_reads_at_run_time() -> None:
    """The Dockerfile installs the package (not the source tree): every file beside the code
    must be package data, and every package directory must be copied in and not ignored."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = [pattern.rstrip("*") for pattern in project["packages"]["find"]["include"]]
    copied = re.findall(r"(?m)^COPY\s+(\S+)\s", DOCKERFILE.read_text())
    ignored = (ROOT / ".dockerignore").read_text().split()
    for root in roots:
        assert root in copied and root not in ignored, root
    packaged = {
        path
        for package, patterns in project["package-data"].items()
        for pattern in patterns
        for path in (ROOT / package.replace(".", "/")).glob(pattern)
    }
    for root in roots:
        for path in (ROOT / root).rglob("*"):
            if (path.is_file() and path.suffix not in (".py", ".pyc") and path.name != "py.typed"
                    and "__pycache__" not in path.parts):
                assert path in packaged, f"{path.relative_to(ROOT)} is not package data"


def installed_closure(requirements: list[str]) -> set[str]:
    """The distributions `pip install` of `requirements` brings in, as installed here."""
    found: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        req = pending.pop()
        name = canonicalize_name(req.name)
        if name in found:
            continue
        found.add(name)
        for text in metadata.requires(req.name) or []:
            dep = Requirement(text)
            if dep.marker is None or any(dep.marker.evaluate({"extra": extra})
                                         for extra in req.extras or {""}):
                pending.append(dep)
    return found


def test_the_image_installs_every_library_lorelab_imports() -> None:
    """The Dockerfile installs pyproject.toml's dependencies and nothing else."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    installed = installed_closure(dependencies)
    owners = metadata.packages_distributions()
    missing = {}
    sources = [p for root in ("bot", "workers", "migrations") for p in (ROOT / root).rglob("*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top in sys.stdlib_module_names or top in ("bot", "workers", "migrations"):
                    continue
                if not {canonicalize_name(d) for d in owners.get(top, [top])} & installed:
                    missing[top] = str(path.relative_to(ROOT))
    assert missing == {}, "imported, but not installed by pyproject.toml's dependencies"


def _redis_reason() -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2):
            return None
    except OSError as exc:
        return f"Redis at 127.0.0.1:6379 is not reachable: {exc}"


@pytest.mark.redis
def test_the_compose_celery_workers_start_and_serve_their_queues(tmp_path: Path) -> None:
    reason = _redis_reason()
    if reason:
        pytest.skip(reason)
    from celery import Celery

    broker = private_broker()  # no other test's worker shares its queues
    procs = []
    try:
        for name in celery_workers():
            env = {**{k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")},
                   **environment(name),
                   "LORELAB_CONFIG": str(CONFIG), "LORELAB_DATA_DIR": str(tmp_path / name),
                   "LORELAB_CELERY_BROKER_URL": broker,
                   "LORELAB_DATABASE_URL": f"sqlite:///{tmp_path / 'lorelab.db'}"}
            argv = [sys.executable, "-m", *service(name)["command"],
                    "--without-heartbeat", "--without-gossip", "--without-mingle"]
            with open(tmp_path / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=log,
                                              stderr=subprocess.STDOUT))
        client = Celery(broker=broker)
        expected = {w["node"].replace("%h", socket.gethostname()): w
                    for w in celery_workers().values()}
        deadline = time.monotonic() + 60
        active: dict[str, Any] = {}
        while set(active) != set(expected) and time.monotonic() < deadline:
            active = client.control.inspect(timeout=1).active_queues() or {}
        logs = "\n".join(f"{log.name}: {log.read_text()[-2000:]}"
                         for log in tmp_path.glob("*.log"))
        assert set(active) == set(expected), f"workers that answered: {sorted(active)}\n{logs}"
        stats = client.control.inspect(timeout=2).stats() or {}
        client.close()
        for node, worker in expected.items():
            assert {q["name"] for q in active[node]} == worker["queues"], node
            assert stats[node]["pool"]["max-concurrency"] == worker["concurrency"], node
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
