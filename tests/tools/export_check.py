#!/usr/bin/env python3
"""Checks `kvlens sessions export --format jsonl|csv` against the store itself.

Usage: export_check.py STORE SESSION EXPORT.jsonl EXPORT.csv [KEPT.jsonl]

Reads the session's rows straight from the SQLite store (Python's own sqlite3, no KV Lens
code) and checks that every exported row of the JSONL and the CSV holds the same values:
the run's method, parameters and metrics, the needle run's scores, answer and expected
values, to the last bit of every double. With KEPT.jsonl (--kept), each run's kept
positions per layer and head are checked against the store's selection_heads counts.
Prints one line and exits 0 when all agree; names the first difference and exits 1.
"""
import csv
import json
import sqlite3
import sys


def fail(what):
    print("export_check: " + what)
    sys.exit(1)


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return float(a) == float(b)
    return a == b


def main():
    store, session, jsonl, csv_path = sys.argv[1:5]
    kept_path = sys.argv[5] if len(sys.argv) > 5 else None
    db = sqlite3.connect("file:" + store + "?mode=ro", uri=True)
    (sid,) = db.execute("SELECT id FROM sessions WHERE name = ?", (session,)).fetchone()
    niah = {}
    for row in db.execute(
            "SELECT id, task, task_seed, length, tokens, depth, sample, question_after, new_tokens, method, budget, "
            "params, contains_score, exact_score, needle_kept, agreement, mean_kl, answer, expected "
            "FROM niah_runs WHERE session_id = ?", (sid,)):
        niah[row[0]] = dict(zip(
            ["id", "task", "task_seed", "length", "tokens", "depth", "sample", "question_after", "new_tokens",
             "method", "budget", "params", "contains", "exact", "needle_kept", "agreement", "mean_kl", "answer",
             "expected"], row))
        niah[row[0]]["question_after"] = bool(row[7])
        niah[row[0]]["expected"] = json.loads(row[18])
    runs = {}
    for row in db.execute(
            "SELECT r.id, r.method, m.token_agreement, m.mean_kl, m.bytes, m.full_bytes, m.top1_agreement "
            "FROM runs r JOIN metrics m ON m.run_id = r.id WHERE r.session_id = ?", (sid,)):
        runs[row[0]] = dict(zip(["id", "method", "token_agreement", "mean_kl", "kv_bytes", "kv_bytes_full",
                                 "top1_agreement"], row))

    def check(rows, source, parse):
        seen = {"niah": set(), "run": set()}
        for n, row in enumerate(rows, 1):
            kind, rid = row["kind"], int(row["id"])
            want = (niah if kind == "niah" else runs).get(rid)
            if want is None:
                fail("%s row %d: %s %d is not in the store" % (source, n, kind, rid))
            if row["session"] != session:
                fail("%s row %d: session %r" % (source, n, row["session"]))
            for key, value in want.items():
                got = parse(key, row.get(key))
                if not same(got, value):
                    fail("%s row %d (%s %d): %s is %r, the store has %r" % (source, n, kind, rid, key, got, value))
            if rid in seen[kind]:
                fail("%s row %d: %s %d twice" % (source, n, kind, rid))
            seen[kind].add(rid)
        if seen["niah"] != set(niah) or seen["run"] != set(runs):
            fail("%s: %d niah runs and %d runs, the store has %d and %d" %
                 (source, len(seen["niah"]), len(seen["run"]), len(niah), len(runs)))

    with open(jsonl) as f:
        check([json.loads(line) for line in f], jsonl, lambda key, v: v)

    numbers = {"id", "task_seed", "length", "tokens", "sample", "new_tokens", "kv_bytes", "kv_bytes_full"}
    reals = {"depth", "contains", "exact", "needle_kept", "agreement", "mean_kl", "token_agreement",
             "top1_agreement"}

    def from_csv(key, v):
        if v is None or v == "" and key not in ("answer", "budget", "params", "task", "method"):
            return None
        if key in numbers:
            return int(v)
        if key in reals:
            return float(v)
        if key == "question_after":
            return v == "true"
        if key == "expected":
            return json.loads(v)
        return v

    with open(csv_path, newline="") as f:
        check(list(csv.DictReader(f)), csv_path, from_csv)

    kept_runs = 0
    if kept_path:
        with open(kept_path) as f:
            for n, line in enumerate(f, 1):
                row = json.loads(line)
                if row["kind"] != "run":
                    continue
                counts = {(layer, head): count for layer, head, count in db.execute(
                    "SELECT layer, head, count FROM selection_heads WHERE run_id = ?", (row["id"],))}
                for layer, heads in enumerate(row["kept"]):
                    for head, positions in enumerate(heads):
                        if len(positions) != counts.get((layer, head), -1):
                            fail("%s row %d: run %d layer %d head %d keeps %d, the store %r" %
                                 (kept_path, n, row["id"], layer, head, len(positions), counts.get((layer, head))))
                        if positions != sorted(set(positions)) or (positions and positions[-1] >= len(row["prompt_ids"])):
                            fail("%s row %d: run %d layer %d head %d: positions not ascending inside the prompt" %
                                 (kept_path, n, row["id"], layer, head))
                kept_runs += 1
    print("export_check: %d niah runs and %d runs agree with the store%s" %
          (len(niah), len(runs), ", kept positions of %d runs" % kept_runs if kept_path else ""))


main()
