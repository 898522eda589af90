"""What the out-of-process test scripts share (Tests/browser, Tests/desktop): checks that print
ok/FAIL and are counted, child processes that are always stopped, waiting on a condition with a
deadline, and the run that turns an unexpected exception into a failed check."""
import json, subprocess, sys, time

FAILURES = []
PROCESSES = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"  [{detail}]"), flush=True)
    if not ok:
        FAILURES.append(name)


def start(args, **kwargs):
    """A child process, stopped when the run ends."""
    process = subprocess.Popen(args, **kwargs)
    PROCESSES.append(process)
    return process


def wait_for(what, predicate, timeout=20):
    """The first truthy value of predicate(), polled until the deadline (then AssertionError)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def read(path):
    """A file's text, or "" while it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def json_events(path):
    """The JSON lines a process wrote to path so far (a `herald device run --json` log), skipping
    any line that is not JSON (a line still being written)."""
    found = []
    for line in read(path).splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def run(name, main):
    """Runs main(), stops every child, prints the summary and exits 1 if a check failed."""
    try:
        main()
    except Exception as error:  # a timeout or a refusal: a failed check, with what it was
        check(f"the {name} test ran to the end", False, f"{type(error).__name__}: {error}")
    finally:
        for process in PROCESSES:
            process.terminate()
        for process in PROCESSES:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
    print(f"{len(FAILURES)} failed" if FAILURES else f"{name}: all checks passed")
    sys.exit(1 if FAILURES else 0)
