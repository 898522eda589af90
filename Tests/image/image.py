#!/usr/bin/env python3
"""The container image as a new operator runs it (scripts/image.sh, docs/operations.md).

No container runtime works on this machine kind (../shared/FIELD-NOTES.md), so the image is run
the way one would: the docker-archive scripts/image.sh wrote is loaded into buildah's storage,
written as an OCI layout and unpacked with umoci; its entrypoint is started from the unpacked
config (arguments, environment, user, working directory) as PID 1 of its own PID, mount and
network namespaces, as the image's user, with a volume on /var/lib/herald and a YAML file mounted
over the image's (Tests/image/launch.py). `docker exec` is nsenter into those namespaces with the
container's root and user. Checked:

- the image's config: a non-root user, the volume, the ports, the HEALTHCHECK; its files: CA
  certificates, tzdata, the alerting rules and the dashboard, no shell;
- configuration by HERALD_* and a mounted YAML (`--print-config` says where each came from);
- the gateway starts as uid 10001 with no capabilities, the image's HEALTHCHECK command passes;
- a device (`herald device run` in the container) registers and a push (`herald push send`)
  reaches it;
- SIGTERM stops the gateway with status 0; a second container on the same volume knows the
  device's token (a push to it is accepted and held).

Usage (as root): image.py PATH/TO/herald-<version>.tar
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from harness import check, in_scratch_directory, read, run, start, wait_for  # noqa: E402

ARCHIVE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
LAUNCH = os.path.join(HERE, "launch.py")
APP, TEAM = "com.example.app", "TEAM123456"


def sh(*args, **kwargs):
    result = subprocess.run(list(args), capture_output=True, text=True, timeout=kwargs.pop("timeout", 120), **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result.stdout


class Container:
    """One container of the unpacked image: started with launch.py in fresh namespaces."""

    def __init__(self, work, name, bundle, volume, config_file, env):
        self.work, self.name = work, name
        self.out = os.path.join(work, f"{name}.out")
        self.err = os.path.join(work, f"{name}.err")
        args = ["unshare", "--mount", "--pid", "--net", "--fork", "--kill-child", sys.executable, LAUNCH, bundle,
                "--volume", f"{volume}:/var/lib/herald", "--volume", f"{config_file}:/etc/herald/gateway.yaml"]
        for key, value in env.items():
            args += ["--env", f"{key}={value}"]
        self.unshare = start(args, stdout=open(self.out, "w"), stderr=open(self.err, "w"))
        self.ports = json.loads(wait_for(f"the {name} container's start-up line",
                                         lambda: read(self.out).splitlines()[0] if read(self.out).strip() else None, timeout=30))
        # PID 1 of the container: unshare's one child.
        self.pid = int(wait_for("the container's process", lambda: read(f"/proc/{self.unshare.pid}/task/{self.unshare.pid}/children").strip()))

    def exec(self, *args, uid=10001, env=None, background=None):
        """`docker exec`: the command in the container's namespaces, root and working directory,
        as the image's user."""
        command = ["env", "-i", *[f"{k}={v}" for k, v in (env or {}).items()],
                   "nsenter", "--target", str(self.pid), "--mount", "--pid", "--net", "--root", "--wd",
                   "--setuid", str(uid), "--setgid", str(uid), *args]
        if background:
            return start(command, stdout=open(background, "w"), stderr=subprocess.STDOUT)
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    def status(self, field):
        return next((line.split(":", 1)[1].split() for line in read(f"/proc/{self.pid}/status").splitlines()
                     if line.startswith(field + ":")), None)

    def stop(self):
        os.kill(self.pid, 15)
        return self.unshare.wait(timeout=60)


def image_checks(work):
    image_id = sh("buildah", "pull", "--quiet", f"docker-archive:{ARCHIVE}").strip().splitlines()[-1]
    inspect = json.loads(sh("buildah", "inspect", "--type", "image", image_id))
    config = inspect["Docker"]["config"]
    health = (config.get("Healthcheck") or {}).get("Test") or []
    check("the image runs as the non-root user herald (10001)", config.get("User") == "10001:10001", str(config.get("User")))
    check("/var/lib/herald is a volume", "/var/lib/herald" in (config.get("Volumes") or {}), json.dumps(config.get("Volumes")))
    check("the provider and device ports are exposed", {"2197/tcp", "2198/tcp"} <= set(config.get("ExposedPorts") or {}),
          json.dumps(config.get("ExposedPorts")))
    check("the image has a HEALTHCHECK: herald gateway health", health == ["CMD", "/usr/bin/herald", "gateway", "health"], json.dumps(health))
    layout = os.path.join(work, "oci")
    sh("buildah", "push", "--quiet", image_id, f"oci:{layout}:herald")
    bundle = os.path.join(work, "bundle")
    sh("umoci", "unpack", "--image", f"{layout}:herald", bundle)
    rootfs = os.path.join(bundle, "rootfs")
    for path, what in (("etc/ssl/certs/ca-certificates.crt", "CA certificates"), ("usr/share/zoneinfo/Asia/Kolkata", "tzdata"),
                       ("usr/share/herald/prometheus/herald.rules.yml", "the alerting rules"),
                       ("usr/share/herald/grafana/herald.json", "the dashboard")):
        check(f"the image carries {what}", os.path.isfile(os.path.join(rootfs, path)), path)
    check("the image has no shell (from scratch: herald, its libraries and data only)", not os.path.exists(os.path.join(rootfs, "bin/sh")))
    return bundle, health[1:]


def scenario(work):
    bundle, healthcheck = image_checks(work)
    volume = os.path.join(work, "volume")
    os.makedirs(volume, mode=0o700)
    os.chown(volume, 10001, 10001)
    config_file = os.path.join(work, "gateway.yaml")
    image_config = read(os.path.join(bundle, "rootfs", "etc", "herald", "gateway.yaml"))
    with open(config_file, "w") as f:  # the operator's own file: the image's, at another log level
        f.write(image_config.replace("log-level: info", "log-level: notice"))

    # Where each setting comes from, in the container.
    printed = subprocess.run(["unshare", "--mount", "--pid", "--net", "--fork", "--kill-child", sys.executable, LAUNCH, bundle,
                              "--volume", f"{config_file}:/etc/herald/gateway.yaml", "--env", "HERALD_RECEIPT_DAYS=5",
                              "--", "gateway", "--config", "/etc/herald/gateway.yaml", "--print-config"],
                             capture_output=True, text=True, timeout=60).stdout
    check("configuration: the mounted YAML's setting applies", "log-level = notice  (file /etc/herald/gateway.yaml" in printed, printed)
    check("configuration: a HERALD_* variable applies", "receipt-days = 5  (environment HERALD_RECEIPT_DAYS)" in printed, printed)
    check("configuration: the image listens on every address of its namespace, the admin port on loopback",
          'host = ::  (file' in printed and "admin-host = 127.0.0.1  (default)" in printed, printed)

    first = Container(work, "first", bundle, volume, config_file, {"HERALD_RECEIPT_DAYS": "5"})
    check("the gateway's ports are the image's", (first.ports["provider_port"], first.ports["device_port"], first.ports["admin_port"]) == (2197, 2198, 9090),
          json.dumps(first.ports))
    uid, cap = first.status("Uid"), first.status("CapEff")
    check("the gateway runs as uid 10001 with no capabilities", uid == ["10001"] * 4 and cap == ["0000000000000000"], f"{uid} {cap}")
    check("the gateway is PID 1 of its namespace", (first.status("NSpid") or [])[-1:] == ["1"], str(first.status("NSpid")))
    healthy = first.exec(*healthcheck)
    check("the image's HEALTHCHECK passes", healthy.returncode == 0 and "ok" in healthy.stdout, healthy.stdout + healthy.stderr)

    phone_log = os.path.join(work, "phone.log")
    first.exec("/usr/bin/herald", "device", "run", "--data-dir", "/tmp/phone", "--gateway", "wss://localhost:2198",
               "--ca", "/var/lib/herald/tls/ca.pem", "--app", APP, "--json", background=phone_log)

    def registered():
        for line in read(phone_log).splitlines():
            if '"registered"' in line:
                return json.loads(line)["token"]
        return None
    token = wait_for("the device's token", registered, timeout=30)
    key_id = first.exec("/usr/bin/herald", "keys", "create", "--data-dir", "/var/lib/herald", "--team", TEAM, "--topic", APP,
                        "--out", "/tmp/key.p8")
    check("a provider key is made in the container", key_id.returncode == 0, key_id.stderr)

    def push(container, alert):
        return container.exec("/usr/bin/herald", "push", "send", "--gateway", "https://localhost:2197", "--ca", "/var/lib/herald/tls/ca.pem",
                              "--key", "/tmp/key.p8", "--key-id", key_id.stdout.strip(), "--team", TEAM, "--topic", APP,
                              "--token", token, "--alert", alert)
    sent = push(first, "Hello from the image")
    check("a push is accepted by the gateway in the image", sent.returncode == 0, sent.stdout + sent.stderr)
    wait_for("the push at the device", lambda: "Hello from the image" in read(phone_log))
    check("the device in the container receives the push", True)
    code = first.stop()
    check("SIGTERM stops the gateway with status 0", code == 0, f"status {code}: {read(first.err)[-1500:]}")

    # The key file was in the first container's /tmp: make one again in the second's.
    second = Container(work, "second", bundle, volume, config_file, {})
    key_id = second.exec("/usr/bin/herald", "keys", "create", "--data-dir", "/var/lib/herald", "--team", TEAM, "--topic", APP,
                         "--out", "/tmp/key.p8")
    check("a provider key is made in the second container", key_id.returncode == 0, key_id.stderr)
    again = push(second, "Still here")
    check("a second container on the same volume knows the device's token (the push is accepted and held)",
          again.returncode == 0, again.stdout + again.stderr)
    check("the second container stops with status 0", second.stop() == 0, read(second.err)[-1500:])


def main():
    if os.geteuid() != 0:
        raise AssertionError("run as root: the image is unpacked and started in namespaces (the gateway itself runs as uid 10001)")
    for tool, package in (("buildah", "buildah"), ("umoci", "umoci"), ("unshare", "util-linux"), ("nsenter", "util-linux"), ("ip", "iproute2")):
        if shutil.which(tool) is None:
            raise AssertionError(f"{tool} is not installed (apt-get install {package})")
    in_scratch_directory("herald-image.", scenario)


if __name__ == "__main__":
    run("image", main)
