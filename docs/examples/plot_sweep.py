#!/usr/bin/env python3
"""Accuracy against budget per method, from a sweep's export.

    kvlens sessions export SESSION sweep.jsonl --format jsonl --store DIR/merged.db
    python3 docs/examples/plot_sweep.py sweep.jsonl accuracy.png

Needs pandas and matplotlib (Debian: python3-pandas python3-matplotlib).
"""
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt
import pandas as pd

rows = pd.read_json(sys.argv[1], lines=True)
niah = rows[(rows["kind"] == "niah") & (rows["method"] != "full")].copy()
niah["budget"] = pd.to_numeric(niah["budget"], errors="coerce")  # entries per head; "25%" budgets: NaN
niah = niah.dropna(subset=["budget"])  # (plot a ratio sweep by its own column instead)
table = niah.groupby(["method", "budget"])["contains"].mean().unstack("method")
print(table.round(3).to_string())

ax = table.plot(marker="o")
full = rows[(rows["kind"] == "niah") & (rows["method"] == "full")]["contains"]
if len(full):
    ax.axhline(full.mean(), color="gray", linestyle="--", label="full cache")
ax.set_xlabel("budget (KV entries per head)")
ax.set_ylabel("needle found (contains)")
ax.set_ylim(0, 1.05)
ax.legend()
plt.savefig(sys.argv[2], dpi=120, bbox_inches="tight")
