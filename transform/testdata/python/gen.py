#!/usr/bin/env python3
"""Writes the Python reference vectors of transform's reverse encoders.

Run from this folder with Debian's python3 (3.11):  TZ=UTC python3 gen.py

  json.jsonl    {"in": JSON text, "out": json.dumps(json.loads(in))}
  floats.jsonl  {"bits": 16 hex digits of an IEEE 754 double, "repr": repr(float)}
  times.jsonl   {"t": the time (RFC 3339, UTC, microseconds), "iso": dt.isoformat(),
                 "reverseTs": 9999999999999 - int(dt.timestamp() * 1000)}

The tests read these files; they never run Python. The output is
deterministic (fixed seeds), so running this again must not change them.
"""
import datetime
import json
import os
import random
import struct

assert os.environ.get("TZ") == "UTC", "run with TZ=UTC: dt.timestamp() of a naive datetime uses local time"

HAND = [
    '{}', '[]', '""', '0', '-0', '1', '-1', '12345678901234567890', '-9223372036854775809',
    '0.0', '-0.0', '5.0', '1.50', '1E5', '1e5', '1e+5', '1e-5', '1.5e-7', '0.0001', '0.00001',
    '1e15', '1e16', '1e17', '123456789012345678', '123456789012345678.0', '1234567890123456.0',
    '12345678901234567.0', '0.1', '0.2', '0.30000000000000004', '1e300', '1e-300', '5e-324',
    '1.7976931348623157e308', '2.2250738585072014e-308', '1e22', '1e21', '9007199254740993',
    '9007199254740993.0', '100', '100.0', '3.141592653589793', '-2.5e-10', '1e-400',
    'true', 'false', 'null',
    '"plain ascii"', '"slash / and back \\\\ slash"', '"quote \\" inside"',
    '"\\b\\f\\n\\r\\t"', '"\\u0000\\u0001\\u001f\\u007f\\u0080\\u009f\\u00a0"',
    '"caf\u00e9 \u00fc\u00df \u20ac \u2028 \u2029 \ufeff \uffff"', '"\\ud83d\\ude00 \U0001F600 \U00010000 \U0010FFFF"',
    '"\\/ escaped slash"', '"<html> & \'apostrophe\'"', '"~ tilde and space  "',
    '{"a": 1, "b": [true, false, null], "c": "\\u00e9\\ud83d\\ude00\\n"}',
    '{"z": 1, "a": 2, "m": {"y": [], "b": {}}}',
    '{"a":1,"a":2,"b":3}', '{"b":1,"a":{"x":1,"x":[2]}}',
    '{"users": ["a@fabrikam.example", "b@fabrikam.example"]}',
    '{"mailboxes":[{"mailbox":"user00000@fabrikam.example","sizeMb":1.5}],"total":1}',
    '  {"spaced" :  [ 1 , 2.0 , "x" ] }  ', '[[[[[]]]]]', '[{"k\u00e9y": "v\u00e4l"}]',
    '{"\\u0000": "nul key", "": "empty key", "\\"": "quote key"}',
    '{"newEditor": true, "beta": ["forms", "oauth"], "rollout": 0.25}',
    '[1, 1.0, -1, -1.0, 10, 10.0, 1e1, 1e0, 1E-0, 0e0, -0e0, 0.5e1]',
]

CHARS = ("abcXYZ019 ~!@#$%^&*()_+-=[]{}|;:,.<>?/'\"\\\n\r\t\b\f\x00\x01\x1f\x7f\x80\x9f"
         "\u00e9\u00fc\u00df\u20ac\u2028\u4e2d\u6587\ud7ff\ue000\ufffd\U0001F600\U0001D11E\U0010FFFF")


def rand_str(r):
    return "".join(r.choice(CHARS) for _ in range(r.randint(0, 12)))


def rand_number_text(r):
    k = r.randint(0, 6)
    if k == 0:
        return str(r.randint(-10**20, 10**20))
    if k == 1:
        return str(r.randint(-1000, 1000))
    if k == 2:
        return repr(r.uniform(-1e6, 1e6))
    if k == 3:
        return "%.*e" % (r.randint(0, 17), r.uniform(-10, 10) * 10 ** r.randint(-30, 30))
    if k == 4:
        return "%d.%s" % (r.randint(-99, 99), "".join(r.choice("0123456789") for _ in range(r.randint(1, 20))))
    if k == 5:
        return "%dE%+d" % (r.randint(1, 9), r.randint(-20, 25))
    f = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
    while f != f or f in (float("inf"), float("-inf")):
        f = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
    return repr(f)


def rand_value_text(r, depth):
    k = r.randint(0, 9 if depth < 4 else 5)
    if k <= 1:
        return rand_number_text(r)
    if k == 2:
        return r.choice(["true", "false", "null"])
    if k <= 5:
        return json.dumps(rand_str(r), ensure_ascii=r.random() < 0.5)
    sep = r.choice([",", ", ", " ,\n "])
    col = r.choice([":", ": ", " : "])
    if k <= 7:
        return "[" + sep.join(rand_value_text(r, depth + 1) for _ in range(r.randint(0, 4))) + "]"
    members = []
    for _ in range(r.randint(0, 4)):
        members.append(json.dumps(rand_str(r), ensure_ascii=r.random() < 0.5) + col + rand_value_text(r, depth + 1))
    return "{" + sep.join(members) + "}"


def write_json():
    r = random.Random(20261121)
    inputs = list(HAND) + [rand_value_text(r, 0) for _ in range(400)]
    with open("json.jsonl", "w") as f:
        for s in inputs:
            v = json.loads(s)
            if has_inf(v):
                continue  # transform's decoder rejects numbers beyond a double
            f.write(json.dumps({"in": s, "out": json.dumps(v)}) + "\n")


def has_inf(v):
    if isinstance(v, float):
        return v in (float("inf"), float("-inf"))
    if isinstance(v, list):
        return any(has_inf(e) for e in v)
    if isinstance(v, dict):
        return any(has_inf(e) for e in v.values())
    return False


def write_floats():
    r = random.Random(7)
    vals = [0.0, -0.0, 5.0, 0.1, 1e16, 1e15, 1e-4, 1e-5, 1.5e-7, 1e300, 5e-324, 1.7976931348623157e308,
            123456789012345678.0, 1234567890123456.0, 9999999999999998.0, 0.30000000000000004, 2.0 ** 53,
            2.0 ** 53 + 2, 1e21, 1e22, 1e23, 4.35, 2.675, 1 / 3, 2 / 3, 100.0, 1e-7, 9.999999999999999e-05]
    for e in range(-30, 31):
        vals.append(10.0 ** e)
        vals.append(1.5 * 10.0 ** e)
        vals.append(-(2.0 ** e))
    while len(vals) < 3000:
        f = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
        if f != f or f in (float("inf"), float("-inf")):
            continue
        vals.append(f)
        vals.append(r.uniform(-1e6, 1e6))
        vals.append(round(r.uniform(-1000, 1000), r.randint(0, 6)))
    with open("floats.jsonl", "w") as f:
        for v in vals:
            f.write(json.dumps({"bits": struct.pack(">d", v).hex(), "repr": repr(v)}) + "\n")


def write_times():
    r = random.Random(11)
    epoch = datetime.datetime(1970, 1, 1)
    dts = [
        datetime.datetime(2026, 11, 20, 14, 3, 12, 345678), datetime.datetime(2026, 11, 20, 14, 3, 12),
        datetime.datetime(2026, 11, 19, 10, 0, 0, 500000), datetime.datetime(2026, 11, 20, 2, 0, 0, 4211),
        datetime.datetime(2026, 11, 17, 9, 0, 0, 1), datetime.datetime(1970, 1, 1),
        datetime.datetime(1999, 12, 31, 23, 59, 59, 999999), datetime.datetime(2000, 2, 29, 12, 0, 0, 100),
        datetime.datetime(2038, 1, 19, 3, 14, 8), datetime.datetime(2100, 1, 1, 0, 0, 0, 1000),
    ]
    # Start times where the double arithmetic is a millisecond below the exact value.
    found = 0
    while found < 40:
        s = r.randint(0, 4000000000)
        us = r.randint(0, 999) * 1000
        dt = epoch + datetime.timedelta(seconds=s, microseconds=us)
        if int(dt.timestamp() * 1000) != s * 1000 + us // 1000:
            dts.append(dt)
            found += 1
    for _ in range(400):
        dts.append(epoch + datetime.timedelta(seconds=r.randint(1600000000, 2000000000),
                                              microseconds=r.choice([0, r.randint(0, 999999), r.randint(0, 999) * 1000])))
    with open("times.jsonl", "w") as f:
        for dt in dts:
            t = dt.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % dt.microsecond
            f.write(json.dumps({"t": t, "iso": dt.isoformat(),
                                "reverseTs": 9999999999999 - int(dt.timestamp() * 1000)}) + "\n")


if __name__ == "__main__":
    write_json()
    write_floats()
    write_times()
