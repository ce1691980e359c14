"""The management schema as the tools see it: entity type names and the type
of each attribute, read from the one schema data file
(router/config/schema.json in the source tree; installed next to this module
as schema.json).

The tools need little of it: qdmanage's `--type` expansion and turning
`name=value` arguments into integers where the schema says integer. When the
file cannot be found the tools still work; values then stay strings.
"""

import json
import os

PREFIX = "org.apache.qpid.dispatch"

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = (
    os.path.join(_HERE, "schema.json"),
    os.path.join(_HERE, "..", "..", "router", "config", "schema.json"),
)

_schema = None


def load():
    """The parsed schema (a dict), or {} when no schema file is found."""
    global _schema
    if _schema is None:
        _schema = {}
        for path in _CANDIDATES:
            try:
                with open(path) as f:
                    _schema = json.load(f)
                break
            except (OSError, ValueError):
                continue
    return _schema


def entity_types():
    """name -> entity type dict, for every type in the schema."""
    types = load().get("entityTypes") or []
    if isinstance(types, dict):
        return types
    return {t["name"]: t for t in types}


def long_type(name):
    """qdmanage's --type expansion: a name with a dot is sent as given; a
    type's short name gives its full name (`linkRoute`, `address`,
    `autoLink`, `exchange`, `binding` are router.config.*); a name that
    follows `router.` in a type's name gives that type (`link`, `node`);
    anything else gets the prefix. Read from the schema, so a type added
    there expands without a change here (without the schema file, only the
    prefix is added)."""
    if not name or "." in name:
        return name
    types = entity_types()
    for t in types.values():
        if t.get("shortName") == name and t.get("fullName"):
            return t["fullName"]
    if "router." + name in types:
        return "%s.router.%s" % (PREFIX, name)
    return "%s.%s" % (PREFIX, name)


def find_type(name):
    """The schema's entity type for a full, prefix-less or short name."""
    if not name:
        return None
    types = entity_types()
    short = name[len(PREFIX) + 1:] if name.startswith(PREFIX + ".") else name
    if short in types:
        return types[short]
    for t in types.values():
        if t.get("shortName") == short or t.get("fullName") == name:
            return t
    return None


def attribute_type(entity_type, attribute):
    """The schema type of an attribute ('integer', 'string', ...) or None."""
    t = find_type(entity_type)
    if not t:
        return None
    attrs = t.get("attributes") or []
    if isinstance(attrs, dict):
        a = attrs.get(attribute)
        return a.get("type") if a else None
    for a in attrs:
        if a.get("name") == attribute or a.get("deprecationName") == attribute:
            return a.get("type")
    return None


def convert_value(entity_type, attribute, text):
    """qdmanage's `name=value` conversion: true/false become booleans, schema
    integers of --type become ints, everything else stays a string."""
    if text == "true":
        return True
    if text == "false":
        return False
    if entity_type and attribute_type(entity_type, attribute) == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("attribute %r of %s is an integer, got %r"
                             % (attribute, entity_type, text))
    return text
