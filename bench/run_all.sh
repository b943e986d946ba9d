#!/usr/bin/env bash
# Every number in the README's Benchmarks section, measured on this machine with the offline default.
# Reads ConfQuestions from ../shared/confquestions; writes JSON reports to bench-out/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
T=.venv/bin/threadwise
OUT=bench-out
mkdir -p "$OUT"
export THREADWISE_DATA_DIR="$OUT/data"

# Retrieval, answers and explanations (the first run builds the eval index: its index_seconds is the indexing time)
$T eval --questions completed --lang en --answers --explain --out "$OUT/completed-en.json"
$T eval --questions completed --lang de --answers --explain --out "$OUT/completed-de.json"
$T eval --questions conversational --lang en --answers --out "$OUT/conversational-en.json"
$T eval --questions conversational --lang de --answers --out "$OUT/conversational-de.json"

# Ablations (like the paper's Tables 2 and 4); each context/linearizer/table setting indexes its own collection
for lang in en de; do
  for mode in lexical dense; do $T eval --mode "$mode" --lang "$lang" --out "$OUT/mode-$mode-$lang.json"; done
  # the fast embedder instead of E5 (its own collection)
  for mode in dense hybrid; do
    $T eval --embedder use --mode "$mode" --lang "$lang" --out "$OUT/use-$mode-$lang.json"
  done
done
for ctx in NONE TTL HDR BEF AFT; do $T eval --context "$ctx" --out "$OUT/context-$ctx.json"; done
for lin in piped markdown html plaintext; do $T eval --linearizer "$lin" --out "$OUT/linearizer-$lin.json"; done
for tables in rows tables; do $T eval --tables "$tables" --out "$OUT/tables-$tables.json"; done

# Confluence sync through HTTP, the Slack bot under load
.venv/bin/python bench/sync_bench.py --json "$OUT/sync.json"
.venv/bin/python bench/slack_bench.py --out "$OUT/slack.json"
.venv/bin/python bench/teams_bench.py --out "$OUT/teams.json"
.venv/bin/python bench/reliability.py > "$OUT/reliability.json"
.venv/bin/python bench/explain_llm_bench.py --latency 0.5 > "$OUT/explain-llm.json"

# indexing through an embeddings server vs in-process, same model, concurrency 1/4/8
for spec in "e5 12" "use 40"; do
  set -- $spec
  .venv/bin/python bench/embeddings_server_bench.py --embedder "$1" --pages "$2" --concurrency 1,4,8 \
    --batch-size 8 --out "$OUT/embeddings-server-$1.json"
done

# a replica following another's edit: BM25 rebuilt from the Chroma server vs a shared snapshot (PostgreSQL + chroma run)
.venv/bin/python bench/replica_bm25_bench.py --sizes 215 2150 --json "$OUT/replica-bm25.json"

# per replica from 215 to 2,150 pages: start-up, retrieval latency and memory, in-process vs chroma run + PostgreSQL
.venv/bin/python bench/replica_scale_bench.py --sizes 215 2150 --queries 100 --json "$OUT/replica-scale.json"
