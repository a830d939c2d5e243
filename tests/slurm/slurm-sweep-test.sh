#!/usr/bin/env bash
# A sweep on a real Slurm: starts slurmctld, slurmd and munged on localhost (local-slurm.sh,
# everything under WORK), has `kvlens sweep slurm --submit` submit a 3-shard sweep of the
# testbed as a job array plus the merge job, cancels two array tasks (one while it runs),
# checks that the merge job fails naming them, submits again (only those shards run), and
# checks that the merged store holds every run of the grid exactly once, equal to the same
# sweep run here unsharded. Exits 77 (CTest's skip) with one line when Slurm cannot start.
#
#   tests/slurm/slurm-sweep-test.sh KVLENS MODEL WORK
set -euo pipefail
kvlens=$(realpath "$1") model=$(realpath "$2") work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/cluster"
cd "$work"

fail() { echo "slurm-sweep-test: $*" >&2; exit 1; }

if ! started=$("$here/local-slurm.sh" start "$work/cluster" 2>"$work/start.err"); then
    # The reason on the line after ": Skipped" (scripts/test prints it with the count).
    echo "$0: Skipped"
    echo "Slurm could not start here: $(tail -n 1 "$work/start.err")"
    exit 77
fi
trap '"$here/local-slurm.sh" stop "$work/cluster" >/dev/null 2>&1 || true' EXIT
eval "$(tail -n 1 <<<"$started")"  # export SLURM_CONF=...

# Every shard takes the whole node (one at a time), with the thread count of the local run.
cpus=$(nproc)
cat >sweep.json <<EOF
{"session": "slurm", "models": ["$model"],
 "tasks": [{"kind": "niah", "lengths": [2048], "depths": [0, 25, 50, 75, 100], "new_tokens": 8}],
 "methods": ["full", "snapkv", {"method": "streamingllm", "sinks": 8}],
 "budgets": [64, 128], "threads": $cpus}
EOF

# wait_job ID: until the job has ended; prints its state.
wait_job() {
    local state=""
    for _ in $(seq 600); do
        state=$(scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2)
        case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) echo "$state"; return 0 ;; esac
        sleep 0.5
    done
    fail "job $1 did not end in 300 s (state '$state'); squeue: $(squeue -h | tr '\n' ';')"
}

"$kvlens" sweep slurm sweep.json --shards 3 --out out --cpus "$cpus" --time 10:00 --submit >submit1.txt 2>&1 ||
    fail "sweep slurm --submit failed: $(cat submit1.txt)"
array=$(grep -o 'as job array [0-9]*' submit1.txt | grep -o '[0-9]*$') || fail "no array job in: $(cat submit1.txt)"
merge=$(grep -o 'merge as job [0-9]*' submit1.txt | grep -o '[0-9]*$') || fail "no merge job in: $(cat submit1.txt)"
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
# Shard 3 is still pending (one shard at a time): cancelled before it starts. Shard 1 is
# cancelled once its store holds its first sample's runs, while it runs the second (if it
# has not finished by then): the second submit resumes it from there.
scancel "${array}_3"
"$python" - out/shard-1.db <<'EOF'
import os, sqlite3, sys, time
end = time.time() + 300
while time.time() < end:
    try:
        if os.path.exists(sys.argv[1]):
            db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=5)
            if db.execute("SELECT count(*) FROM niah_runs").fetchone()[0] > 0:
                break
            db.close()
    except sqlite3.Error:
        pass  # the store is being created
    time.sleep(0.01)
EOF
scancel "${array}_1"
killed=$([[ -e out/shard-1.done ]] && echo "after it completed" || echo "while it ran")
state=$(wait_job "$merge")
[[ "$state" == FAILED ]] || fail "the merge job after cancelled shards ended $state, not FAILED"
grep -q 'did not complete' out/merge.status || fail "merge.status does not name the shards: $(cat out/merge.status)"
if [[ "$killed" == "while it ran" ]]; then
    grep -q 'shards 1 3 of 3 did not complete' out/merge.status || fail "merge.status: $(cat out/merge.status)"
fi
[[ -e out/shard-2.done ]] || fail "shard 2 did not complete: $(tail -n 3 out/logs/shard-2.log)"

# Again: only the shards not complete run, each resuming from its own store.
out/submit >submit2.txt || fail "submit failed: $(cat submit2.txt)"
grep -q "submit: shards $([[ "$killed" == "while it ran" ]] && echo 1,3 || echo 3) as job array" submit2.txt ||
    fail "the second submit ran other shards: $(cat submit2.txt)"
state=$(wait_job "$(cat out/merge.job)")
[[ "$state" == COMPLETED ]] || fail "the merge job ended $state: $(cat out/logs/merge.log)"
[[ -f out/merged.db && -f out/report/niah.html ]] || fail "no merged store or report: $(cat out/logs/merge.log)"
if [[ "$killed" == "while it ran" ]]; then
    grep -q 'already saved' out/logs/shard-1.log || fail "shard 1 did not resume: $(cat out/logs/shard-1.log)"
fi

# The same sweep here, unsharded, and the two stores' needle runs compared row by row.
"$kvlens" sweep run sweep.json --store local.db 2>local.err || fail "the local run failed: $(cat local.err)"
"$kvlens" sessions export slurm merged.jsonl --format jsonl --store out/merged.db >/dev/null
"$kvlens" sessions export slurm local.jsonl --format jsonl --store local.db >/dev/null
"$python" - merged.jsonl local.jsonl <<'EOF' || exit 1
import json, sys
def rows(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        for k in ("id", "created_ms", "model_id"):
            r.pop(k)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)
merged, local = rows(sys.argv[1]), rows(sys.argv[2])
if len(merged) != 25 or len(set(merged)) != 25:
    sys.exit("slurm-sweep-test: the merged store holds %d runs (%d distinct), not the grid's 25" %
             (len(merged), len(set(merged))))
if merged != local:
    sys.exit("slurm-sweep-test: the merged runs differ from the unsharded run's")
EOF
echo "slurm-sweep-test: 3 shards on Slurm (shard 1 cancelled $killed, shard 3 before it ran), submitted again," \
     "merged: the grid's 25 runs once each, equal to the unsharded run"
