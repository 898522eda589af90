#!/usr/bin/env python3
"""Starts a process of an unpacked image the way a container runtime does, for Tests/image where
no runtime works (../shared/FIELD-NOTES.md: podman fails on this machine kind's cgroups).

Run as root inside fresh namespaces, so that the process is PID 1 of its own PID namespace, with a
network namespace of its own (loopback only) and a mount namespace that nothing leaks from:

    unshare --mount --pid --net --fork --kill-child python3 launch.py BUNDLE [--volume SRC:DST]... [--env K=V]... [-- ARGS...]

BUNDLE is what `umoci unpack` made (config.json and rootfs/). From config.json, as an OCI
runtime reads it: the arguments (replaced by ARGS when given), the environment (with --env added
or replacing), the working directory and the user. The process gets /proc (its namespace's), a
/dev with null, zero, full, random, urandom and tty, a /tmp of its own, the volumes bound in, then the root file
system as its root, no supplementary groups, the image's uid and gid (so no capabilities), and is
exec'd in place of this script.
"""
import json
import os
import subprocess
import sys


def mount(*args):
    subprocess.run(["mount", *args], check=True)


def main(argv):
    bundle = argv[0]
    volumes, overrides, args = [], {}, None
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--volume":
            source, target = rest.pop(0).split(":", 1)
            volumes.append((source, target))
        elif flag == "--env":
            key, value = rest.pop(0).split("=", 1)
            overrides[key] = value
        elif flag == "--":
            args = rest
            rest = []
        else:
            raise SystemExit(f"launch.py: unknown argument {flag}")
    config = json.load(open(os.path.join(bundle, "config.json")))
    process = config["process"]
    rootfs = os.path.join(bundle, config.get("root", {}).get("path", "rootfs"))
    env = dict(item.split("=", 1) for item in process.get("env", []))
    env.update(overrides)
    argv_image = process["args"]
    if args is not None:
        argv_image = [argv_image[0], *args]

    mount("--make-rprivate", "/")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    os.makedirs(f"{rootfs}/proc", exist_ok=True)
    mount("-t", "proc", "proc", f"{rootfs}/proc")
    os.makedirs(f"{rootfs}/dev", exist_ok=True)
    mount("-t", "tmpfs", "-o", "mode=755,nosuid", "tmpfs", f"{rootfs}/dev")
    for node in ("null", "zero", "full", "random", "urandom", "tty"):
        open(f"{rootfs}/dev/{node}", "w").close()
        mount("--bind", f"/dev/{node}", f"{rootfs}/dev/{node}")
    # Each container's /tmp its own (the unpacked root file system is shared by every container
    # of the test, where a runtime gives each a layer of its own).
    mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", f"{rootfs}/tmp")
    for source, target in volumes:
        path = rootfs + target
        if os.path.isdir(source):
            os.makedirs(path, exist_ok=True)
        elif not os.path.exists(path):
            open(path, "w").close()
        mount("--bind", source, path)

    os.chroot(rootfs)
    os.chdir(process.get("cwd", "/"))
    user = process.get("user", {})
    os.setgroups([])
    os.setgid(int(user.get("gid", 0)))
    os.setuid(int(user.get("uid", 0)))
    sys.stdout.flush()
    os.execve(argv_image[0], argv_image, env)


if __name__ == "__main__":
    main(sys.argv[1:])
