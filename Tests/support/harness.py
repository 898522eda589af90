"""What the out-of-process test scripts share (Tests/browser, Tests/desktop): checks that print
ok/FAIL and are counted, child processes that are always stopped, waiting on a condition with a
deadline, and the run that turns an unexpected exception into a failed check."""
import json, os, shutil, subprocess, sys, tempfile, time

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


def in_scratch_directory(prefix, scenario, logs=(".err", ".log")):
    """Runs scenario(work) in a fresh directory, removed afterwards; when it fails, the tail of
    each of its files ending in one of `logs` goes to standard error first."""
    work = tempfile.mkdtemp(prefix=prefix)
    os.chmod(work, 0o755)
    try:
        scenario(work)
    except BaseException:
        for name in sorted(os.listdir(work)):
            text = read(os.path.join(work, name)) if name.endswith(logs) else ""
            if text.strip():
                print(f"--- {name}\n{text[-3000:]}", file=sys.stderr)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "device-events.schema.json")
_schema = None
_validators = {}
_schema_failures = set()


def _validator(key):
    """The validator of one definition of docs/device-events.schema.json (None: no such one)."""
    global _schema
    import jsonschema_rs  # installed with schemathesis (scripts/test-deps.sh)
    if _schema is None:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            _schema = json.load(f)
    if key not in _validators:
        _validators[key] = jsonschema_rs.validator_for({"$ref": "#/$defs/" + key, "$defs": _schema["$defs"]}) if key in _schema["$defs"] else None
    return _validators[key]


def check_schema(key, what, message):
    """Checks a message against its definition (`key`), so that an error names the field; each
    distinct failure is reported once."""
    validator = _validator(key)
    errors = [f"{what} is not described"] if validator is None else [f"{e.message} at /{'/'.join(map(str, e.instance_path))}" for e in validator.iter_errors(message)]
    for error in errors:
        if (key, error) not in _schema_failures:
            _schema_failures.add((key, error))
            check(f"{what} matches docs/device-events.schema.json", False, f"{error}: {json.dumps(message)[:300]}")


def check_event_schema(event):
    """A `herald device run --json` line."""
    check_schema("event-" + str(event.get("event")), f"the {event.get('event')} event", event)


def json_events(path):
    """The JSON lines a process wrote to path so far (a `herald device run --json` log), skipping
    any line that is not JSON (a line still being written). Each event is checked against its
    schema (``check_event_schema``)."""
    found = []
    for line in read(path).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            check_event_schema(event)
        found.append(event)
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
