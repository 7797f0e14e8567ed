#!/usr/bin/env bash
# Writes the seed corpus of fuzz_timing_trace: timing/worker-<r>.trace files
# of tiny real runs (20 steps, a 1-layer GPT on the Brown corpus), one per
# kind of trace: folded DDP steps with a bucket list, measured compute (no
# folds), DiLoCo's periodic all-reduce, asynchronous calls and their waits
# (SPARTA's gossip, Streaming DiLoCo), an island's own group (channel 1),
# all-gather (DeMo), exchanges with peers (Local SGD ring, NoLoCo), PALSGD's
# switch from DDP, and a rejoin broadcast (DiLoCo with an absent worker).
#   fuzz/make_trace_seeds.sh build/atoll fuzz/corpus/fuzz_timing_trace [--data.dir=...]
# Extra arguments go to every `atoll train` (e.g. where the Brown data is).
set -euo pipefail
if (( $# < 2 )); then
  sed -n '2,10p' "$0"
  exit 2
fi
atoll=$1 out=$2
shift 2
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
mkdir -p "$out"

tiny=(--model.n_layer=1 --model.n_head=2 --model.n_embd=16 --model.block_size=16 --train.batch_size=4
      --train.steps=20 --train.eval_every=10 --train.eval_batches=2 --train.log_every=5 --run.progress=false
      --network.bandwidth=20Mbit/s --network.latency=3ms --run.out_dir="$runs")
# H = 5 for the methods that read diloco.inner_steps (atoll refuses an
# override the chosen method does not read).
h5=--diloco.inner_steps=5

# seed NAME RANK SETTINGS...: one run, its worker RANK's trace as fuzz/corpus/.../NAME
seed() {
  local name=$1 rank=$2
  shift 2
  "$atoll" train "${tiny[@]}" --run.name="$name" "$@" > "$runs/$name.log" 2>&1 || {
    tail -n 20 "$runs/$name.log"
    echo "make_trace_seeds: the run for $name failed" >&2
    exit 1
  }
  cp "$runs/$name/timing/worker-$rank.trace" "$out/$name"
}

seed ddp_overlap_buckets 0 --strategy.name=ddp --strategy.workers=3 --ddp.bucket_mb=0.005 --ddp.first_bucket_mb=0.002 "$@"
seed ddp_measured 1 --strategy.name=ddp --strategy.workers=2 --network.compute_time=measured "$@"
seed diloco 0 --strategy.name=diloco --strategy.workers=3 $h5 "$@"
seed sparta_gossip_async 2 --strategy.name=sparta --strategy.workers=4 --sparta.delay=2 --strategy.topology=gossip "$@"
seed streaming_async 0 --strategy.name=streaming --strategy.workers=2 --streaming.fragment_blocks=1 --model.n_layer=2 \
     --streaming.overlap=2 --diloco.inner_steps=6 "$@"
seed diloco_islands 0 --strategy.name=diloco --strategy.workers=4 $h5 --islands.devices=2 --islands.exchange=leader "$@"
seed demo 0 --strategy.name=demo --strategy.workers=3 "$@"
seed localsgd_ring 0 --strategy.name=localsgd --strategy.workers=3 $h5 --strategy.topology=ring "$@"
seed noloco 3 --strategy.name=noloco --strategy.workers=4 --noloco.inner_steps=5 "$@"
seed palsgd 0 --strategy.name=palsgd --strategy.workers=2 --palsgd.ddp_warmup_steps=2 --palsgd.inner_steps=4 "$@"
seed diloco_rejoin 1 --strategy.name=diloco --strategy.workers=3 $h5 --faults.absent=1@6-14 --faults.drop_prob=0.3 "$@"
ls -l "$out"
