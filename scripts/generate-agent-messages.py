#!/usr/bin/env python3
"""Writes Sources/HeraldNotifications/Generated/AgentMessages.swift and
clients/python/herald_notifications/messages.py, the agent socket's messages as Swift types and
Python TypedDicts, from their one description: docs/device-events.schema.json (`agent-request-<op>`,
`agent-answer-<op>`, `agent-callback-<event>` and the definitions they refer to). The library
HeraldNotifications speaks the socket only through these types, so it cannot drift from the
runtime: the runtime's answers and callbacks are checked against the same schema by every test
suite that drives an app (Tests/support/agent.py), and its requests by the same suites before
they are sent.

    scripts/generate-agent-messages.py           regenerate
    scripts/generate-agent-messages.py --check   fail (exit 1) if a committed file is stale (CI)

The schema subset it reads (anything else stops it with the definition's name): objects with
`properties` (`required` ones are non-optional), string, integer, number and boolean, a type with
"null" (optional), `enum` of strings (a Swift enum named by `x-swift-name`, or the property's name),
arrays, `$ref`, `anyOf` of one reference and null, and free JSON (`{}` or an object without
properties: `AgentJSON`). `const` members (`op`, `ok`, `event`) and a message's `id` are the
library's envelope, not fields.
"""
import json, keyword, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "docs", "device-events.schema.json")
OUTPUT = os.path.join(ROOT, "Sources", "HeraldNotifications", "Generated", "AgentMessages.swift")
PYTHON_OUTPUT = os.path.join(ROOT, "clients", "python", "herald_notifications", "messages.py")
SWIFT_KEYWORDS = {"repeat", "default", "protocol", "self", "Type", "class", "struct", "enum", "case", "in", "is", "as", "func", "var", "let", "import", "return", "where", "while", "for", "if", "else", "switch", "do", "try", "throw", "extension", "operator", "static", "public", "private", "internal", "init", "deinit", "subscript", "super", "nil", "true", "false", "Any"}


class SchemaError(Exception):
    pass


def camel(name):
    parts = re.split(r"[-_]", name)
    words = [parts[0]] + [p[:1].upper() + p[1:] for p in parts[1:]]
    text = "".join(words)
    return re.sub(r"Id$", "ID", text)


def upper_camel(name):
    text = camel(name)
    return text[:1].upper() + text[1:]


def identifier(name):
    return f"`{name}`" if name in SWIFT_KEYWORDS else name


def doc(text, indent):
    if not text:
        return ""
    return "".join(f"{indent}/// {line}\n" for line in text.splitlines())


class Generator:
    def __init__(self, schema):
        self.defs = schema["$defs"]
        self.enums = {}          # swift name -> values (top level)
        self.shared = []         # definition names emitted as top-level structs
        self.names = {}          # definition name -> swift name
        self.message_names = {upper_camel(k.split("-", 2)[2]) for k in self.defs if k.count("-") >= 2 and k.startswith("agent-")}

    def swift_name_of_def(self, name):
        if name in self.names:
            return self.names[name]
        definition = self.defs.get(name)
        if definition is None:
            raise SchemaError(f"$ref to an unknown definition {name}")
        swift = definition.get("x-swift-name")
        if not swift:
            raise SchemaError(f"definition {name} is referred to by an agent message but has no x-swift-name")
        self.names[name] = swift
        self.shared.append(name)
        return swift

    def enum(self, spec, fallback, where):
        values = spec["enum"]
        nullable = None in values
        values = [v for v in values if v is not None]
        if not all(isinstance(v, str) for v in values):
            raise SchemaError(f"{where}: only enums of strings (and null) are read")
        name = spec.get("x-swift-name") or upper_camel(fallback)
        known = self.enums.get(name)
        if known is not None and known[0] != values:
            raise SchemaError(f"{where}: enum {name} is declared twice with other values ({known[0]} and {values}): give one an x-swift-name")
        self.enums[name] = (values, spec.get("description"))
        return name, nullable

    def type_of(self, spec, property_name, where, nested):
        """(swift type, optional?) of one property's schema; nested collects inline structs."""
        if "$ref" in spec:
            swift = self.swift_name_of_def(spec["$ref"].rsplit("/", 1)[1])
            # A message type of the same name (AgentCallback.WebPushSubscription) would shadow it.
            return (f"HeraldNotifications.{swift}" if swift in self.message_names else swift), False
        if "anyOf" in spec:
            options = spec["anyOf"]
            refs = [o for o in options if "$ref" in o]
            if len(options) == 2 and len(refs) == 1 and {"type": "null"} in options:
                return self.type_of(refs[0], property_name, where, nested)[0], True
            raise SchemaError(f"{where}: anyOf is read only as one $ref or null")
        if "enum" in spec:
            name, nullable = self.enum(spec, property_name, where)
            return name, nullable
        kind = spec.get("type")
        nullable = False
        if isinstance(kind, list):
            nullable = "null" in kind
            rest = [k for k in kind if k != "null"]
            if len(rest) != 1:
                raise SchemaError(f"{where}: a type list is read only as one type or null")
            kind = rest[0]
        if kind is None:
            return "AgentJSON", True
        if kind == "string":
            return "String", nullable
        if kind == "integer":
            return "Int", nullable
        if kind == "number":
            return "Double", nullable
        if kind == "boolean":
            return "Bool", nullable
        if kind == "null":
            return "AgentJSON", True
        if kind == "array":
            item, _ = self.type_of(spec.get("items", {}), singular(property_name), where + "[]", nested)
            return f"[{item}]", nullable
        if kind == "object":
            if not spec.get("properties"):
                return "[String: AgentJSON]", nullable
            name = spec.get("x-swift-name") or upper_camel(property_name)
            nested.append((name, spec))
            return name, nullable
        raise SchemaError(f"{where}: type {kind} is not read")

    def struct(self, name, spec, where, indent, conformances, skip=(), extra_lines=()):
        nested = []
        fields = []
        required = set(spec.get("required", []))
        for key, value in spec.get("properties", {}).items():
            if key in skip or "const" in value:
                continue
            swift_type, nullable = self.type_of(value, key, f"{where}.{key}", nested)
            optional = nullable or key not in required
            fields.append((key, camel(key), swift_type, optional, value.get("description")))
        lines = []
        if spec.get("description"):
            lines.append(doc(spec["description"], indent).rstrip("\n"))
        lines.append(f"{indent}public struct {name}: {conformances} {{")
        for line in extra_lines:
            lines.append(f"{indent}    {line}")
        for key, swift, swift_type, optional, description in fields:
            if description:
                lines.append(doc(description, indent + "    ").rstrip("\n"))
            lines.append(f"{indent}    public var {identifier(swift)}: {swift_type}{'?' if optional else ''}")
        if fields:
            parameters = ", ".join(f"{identifier(swift)}: {t}{'? = nil' if o else ''}" for _, swift, t, o, _ in fields)
            lines.append("")
            lines.append(f"{indent}    public init({parameters}) {{")
            for _, swift, _, _, _ in fields:
                lines.append(f"{indent}        self.{identifier(swift)} = {identifier(swift)}")
            lines.append(f"{indent}    }}")
            lines.append("")
            lines.append(f"{indent}    enum CodingKeys: String, CodingKey {{")
            for key, swift, _, _, _ in fields:
                lines.append(f"{indent}        case {identifier(swift)}" + (f' = "{key}"' if key != swift else ""))
            lines.append(f"{indent}    }}")
        else:
            lines.append(f"{indent}    public init() {{}}")
        for nested_name, nested_spec in nested:
            lines.append("")
            lines.extend(self.struct(nested_name, nested_spec, f"{where}.{nested_name}", indent + "    ", "Codable, Sendable, Hashable"))
        lines.append(f"{indent}}}")
        return lines


def singular(name):
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def generate():
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    defs = schema["$defs"]
    g = Generator(schema)
    requests = {k[len("agent-request-"):]: v for k, v in defs.items() if k.startswith("agent-request-")}
    answers = {k[len("agent-answer-"):]: v for k, v in defs.items() if k.startswith("agent-answer-")}
    callbacks = {k[len("agent-callback-"):]: v for k, v in defs.items() if k.startswith("agent-callback-")}
    if set(requests) != set(answers):
        raise SchemaError(f"every request needs its answer and every answer its request: only requests {sorted(set(requests) - set(answers))}, only answers {sorted(set(answers) - set(requests))}")
    out = []
    for op, spec in requests.items():
        out.append("")
        out.extend(g.struct(upper_camel(op), spec, f"agent-request-{op}", "    ", "AgentRequestMessage",
                            skip=("id", "op"), extra_lines=(f'public static let op = "{op}"', f"public typealias Answer = AgentAnswer.{upper_camel(op)}", "")))
    answer_lines = []
    for op, spec in answers.items():
        answer_lines.append("")
        answer_lines.extend(g.struct(upper_camel(op), spec, f"agent-answer-{op}", "    ", "Decodable, Sendable, Hashable", skip=("id", "ok")))
    callback_lines = []
    for event, spec in callbacks.items():
        callback_lines.append("")
        callback_lines.extend(g.struct(upper_camel(event), spec, f"agent-callback-{event}", "    ", "Decodable, Sendable, Hashable", skip=("event",)))
    shared_lines = []
    done = set()
    while len(done) < len(g.shared):
        for name in list(g.shared):
            if name in done:
                continue
            done.add(name)
            shared_lines.append("")
            shared_lines.extend(g.struct(g.names[name], defs[name], name, "", "Codable, Sendable, Hashable"))
    enum_lines = []
    for name, (values, description) in sorted(g.enums.items()):
        enum_lines.append("")
        if description:
            enum_lines.append(doc(description, "").rstrip("\n"))
        enum_lines.append(f"public enum {name}: String, Codable, Sendable, Hashable, CaseIterable {{")
        for value in values:
            swift = camel(value)
            enum_lines.append(f"    case {identifier(swift)}" + (f' = "{value}"' if swift != value else ""))
        enum_lines.append("}")
    events = [(upper_camel(e), e) for e in callbacks]
    event_enum = ["", "/// Every callback the runtime writes to an app's connection, told apart by its `event`.",
                  "public enum AgentCallbackEvent: Sendable, Hashable {"]
    for swift, event in events:
        event_enum.append(f"    case {identifier(camel(event))}(AgentCallback.{swift})")
    event_enum += ["", "    /// The callback named `event`, decoded from its line; nil for an event this library does not know.",
                   "    static func decode(event: String, from line: Data, with decoder: JSONDecoder) throws -> AgentCallbackEvent? {",
                   "        switch event {"]
    for swift, event in events:
        event_enum.append(f'        case "{event}": return .{identifier(camel(event))}(try decoder.decode(AgentCallback.{swift}.self, from: line))')
    event_enum += ["        default: return nil", "        }", "    }", "}"]
    text = "\n".join([
        "// Generated by scripts/generate-agent-messages.py from docs/device-events.schema.json; do not edit.",
        "import Foundation",
        "",
        "/// The requests an app sends on the agent socket (docs/device-agent.md), one type an op.",
        "public enum AgentRequest {",
        *out,
        "}",
        "",
        "/// The answers to the requests, one type an op (`AgentRequestMessage.Answer`).",
        "public enum AgentAnswer {",
        *answer_lines,
        "}",
        "",
        "/// The callbacks the runtime writes to an app's connection, one type an event.",
        "public enum AgentCallback {",
        *callback_lines,
        "}",
        *shared_lines,
        *enum_lines,
        *event_enum,
        "",
    ])
    return "\n".join(line.rstrip() for line in text.replace("// swiftlint:disable all\n", "").split("\n"))


class PythonGenerator:
    """The same messages as TypedDicts (keys as on the wire) and Literal aliases."""

    def __init__(self, schema):
        self.defs = schema["$defs"]
        self.blocks = []          # (name, text) in dependency order
        self.done = set()
        self.literals = {}

    def def_name(self, name):
        swift = self.defs[name].get("x-swift-name")
        if not swift:
            raise SchemaError(f"definition {name} has no x-swift-name")
        if name not in self.done:
            self.done.add(name)
            self.typed_dict(swift, self.defs[name], name)
        return swift

    def type_of(self, spec, property_name, owner, where):
        if "$ref" in spec:
            return self.def_name(spec["$ref"].rsplit("/", 1)[1])
        if "anyOf" in spec:
            ref = next(o for o in spec["anyOf"] if "$ref" in o)
            return f"{self.type_of(ref, property_name, owner, where)} | None"
        if "enum" in spec:
            values = spec["enum"]
            name = spec.get("x-swift-name") or upper_camel(property_name)
            literal = "Literal[" + ", ".join(json.dumps(v) for v in values if v is not None) + "]"
            self.literals[name] = literal
            return name + (" | None" if None in values else "")
        kind = spec.get("type")
        nullable = isinstance(kind, list) and "null" in kind
        if isinstance(kind, list):
            kind = next(k for k in kind if k != "null")
        suffix = " | None" if nullable else ""
        if kind is None or kind == "null":
            return "Any"
        simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
        if kind in simple:
            return simple[kind] + suffix
        if kind == "array":
            return f"list[{self.type_of(spec.get('items', {}), singular(property_name), owner, where)}]" + suffix
        if kind == "object":
            if not spec.get("properties"):
                return "dict[str, Any]" + suffix
            name = owner + (spec.get("x-swift-name") or upper_camel(property_name))
            self.typed_dict(name, spec, where + "." + property_name)
            return name + suffix
        raise SchemaError(f"{where}: type {kind} is not read")

    def typed_dict(self, name, spec, where, skip=()):
        required = set(spec.get("required", []))
        fields = []
        for key, value in spec.get("properties", {}).items():
            if key in skip:
                continue
            if "const" in value:
                fields.append((key, f"Literal[{json.dumps(value['const']) if isinstance(value['const'], str) else repr(value['const'])}]", key in required))
                continue
            fields.append((key, self.type_of(value, key, name, f"{where}.{key}"), key in required))
        body = ", ".join(f"{json.dumps(k)}: {t if r else f'NotRequired[{t}]'}" for k, t, r in fields)
        text = f"{name} = TypedDict({json.dumps(name)}, {{{body}}})"
        if spec.get("description"):
            text = "# " + spec["description"].replace("\n", " ") + "\n" + text
        self.blocks.append(text)

    def generate(self):
        prefixes = [("agent-request-", "Request"), ("agent-answer-", "Answer"), ("agent-callback-", "Callback")]
        ops = []
        for key, spec in self.defs.items():
            for prefix, kind in prefixes:
                if key.startswith(prefix):
                    name = upper_camel(key[len(prefix):]) + kind
                    self.typed_dict(name, spec, key)
                    if kind == "Request":
                        ops.append(key[len(prefix):])
        literals = [f"{name} = {value}" for name, value in sorted(self.literals.items())]
        callbacks = [upper_camel(k[len("agent-callback-"):]) + "Callback" for k in self.defs if k.startswith("agent-callback-")]
        return "\n".join([
            '"""The device agent\'s messages (docs/device-agent.md) as TypedDicts, keys as on the wire.',
            "",
            "Generated by scripts/generate-agent-messages.py from docs/device-events.schema.json; do not edit.",
            '"""',
            "from typing import Any, Literal, NotRequired, TypedDict",
            "",
            *literals,
            "",
            *[block + "\n" for block in self.blocks],
            "OPS: tuple[str, ...] = (" + ", ".join(json.dumps(op) for op in ops) + ",)",
            "",
            "AnyCallback = " + " | ".join(callbacks),
            "",
        ])


def main():
    try:
        with open(SCHEMA, encoding="utf-8") as f:
            schema = json.load(f)
        outputs = {OUTPUT: generate(), PYTHON_OUTPUT: PythonGenerator(schema).generate()}
    except SchemaError as error:
        sys.exit(f"docs/device-events.schema.json: {error}")
    if "--check" in sys.argv:
        for path, text in outputs.items():
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != text:
                sys.exit(f"{os.path.relpath(path, ROOT)} is stale: run scripts/generate-agent-messages.py")
        print("the agent's Swift and Python messages match docs/device-events.schema.json")
        return
    for path, text in outputs.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


main()
