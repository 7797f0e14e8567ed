#!/usr/bin/python3
"""Your PyTorch model and data, trained by atoll, and back in PyTorch.

For each of two models (models.py) the script
  1. writes the data as .npy files (atoll's data.dataset = npy),
  2. scripts the model and saves it (atoll's model.kind = torchscript),
  3. trains it with atoll: DiLoCo on 4 simulated workers over a 100 Mbit/s network,
  4. exports the trained weights (atoll export -> model.safetensors, and
     --format=torchscript -> trained.pt),
  5. loads them back into the PyTorch class and evaluates them on the
     validation split, which must give atoll's final evaluation loss.
A third part trains atoll's built-in GPT and loads its export into the
nanoGPT-style TinyGPT class, by nanoGPT's parameter names.

  /usr/bin/python3 examples/pytorch/example.py --atoll build/atoll --out /tmp/atoll-example
Real data when atoll has prepared it (scripts/setup): --mnist data/mnist --text-data data/brown.
Exits 1 if a loss PyTorch computes differs from atoll's by more than --tolerance, or if the
training FLOPs atoll counts for the CNN differ from its closed form.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MnistCnn, TinyGPT  # noqa: E402
from safetensors_io import load_safetensors  # noqa: E402


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


# --- data -------------------------------------------------------------------

def mnist_split(path):
    """atoll's prepared MNIST (scripts/setup): "ATMN", uint32 count, labels, pixels."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] != b"ATMN":
        raise SystemExit(path + " is not an atoll MNIST file")
    (n,) = struct.unpack("<I", blob[4:8])
    labels = np.frombuffer(blob, np.uint8, n, 8).astype(np.int64)
    images = np.frombuffer(blob, np.uint8, n * 784, 8 + n).reshape(n, 1, 28, 28).astype(np.float32) / 255
    return images, labels


def synthetic_images(n, rng):
    """Ten noisy templates, one per class: a stand-in for MNIST that needs no download."""
    templates = np.random.default_rng(0).random((10, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, n)
    images = templates[labels] * 0.6 + rng.random((n, 1, 28, 28), dtype=np.float32) * 0.4
    return images.astype(np.float32), labels.astype(np.int64)


def synthetic_text(rng, words=60000):
    vocab = ("the island sends a small update over slow links and every worker learns from its shard "
             "while gradients wait for the network").split()
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), words))


def text_tokens(args, rng):
    """(train ids, val ids, vocab size): atoll's prepared text, or generated text with a char vocabulary."""
    if args.text_data:
        meta = json.load(open(os.path.join(args.text_data, "meta.json")))
        read = lambda name: np.fromfile(os.path.join(args.text_data, name), dtype="<u2").astype(np.int64)
        return read("train.bin"), read("val.bin"), int(meta["vocab_size"])
    text = synthetic_text(rng)
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    cut = len(ids) * 9 // 10
    return ids[:cut], ids[cut:], len(chars)


def windows(ids, block, step):
    """Windows of `block` tokens starting every `step`; targets are the inputs shifted by one."""
    both = np.lib.stride_tricks.sliding_window_view(ids, block + 1)[::step]
    return np.ascontiguousarray(both[:, :-1]), np.ascontiguousarray(both[:, 1:])


def save_npy(folder, train, val):
    os.makedirs(folder, exist_ok=True)
    for split, (x, y) in (("train", train), ("val", val)):
        np.save(os.path.join(folder, split + "_inputs.npy"), np.ascontiguousarray(x))
        np.save(os.path.join(folder, split + "_targets.npy"), np.ascontiguousarray(y))


# --- evaluation in PyTorch ----------------------------------------------------

@torch.no_grad()
def evaluate(model, x, y, batch=256):
    """Mean cross-entropy over every example (each example's mean over its tokens), and accuracy."""
    model.eval()
    losses, correct, count = [], 0, 0
    for i in range(0, len(x), batch):
        xb, yb = torch.from_numpy(x[i:i + batch]), torch.from_numpy(y[i:i + batch])
        logits = model(xb)
        per = F.cross_entropy(logits.reshape(-1, logits.size(-1)), yb.reshape(-1), reduction="none")
        losses.append(per.view(len(xb), -1).mean(1).double())
        correct += (logits.argmax(-1) == yb).sum().item()
        count += yb.numel()
    return torch.cat(losses).mean().item(), correct / count


# --- one model through atoll ------------------------------------------------------

def through_atoll(args, name, model, train, val, settings):
    folder = os.path.join(args.out, name)
    save_npy(os.path.join(folder, "data"), train, val)
    module_path = os.path.join(folder, "model.pt")
    torch.jit.script(model).save(module_path)
    run([args.atoll, "train", "--data.dataset=npy", "--data.dir=" + os.path.join(folder, "data"),
         "--model.kind=torchscript", "--model.path=" + module_path,
         "--strategy.name=diloco", "--strategy.workers=4", "--diloco.inner_steps=%d" % args.inner_steps,
         "--train.steps=%d" % args.steps, "--network.bandwidth=100Mbit/s", "--network.latency=10ms",
         "--run.out_dir=" + folder, "--run.name=diloco", "--run.overwrite=true", "--run.progress=false"]
        + settings)
    run_dir = os.path.join(folder, "diloco")
    weights = os.path.join(folder, "model.safetensors")
    trained = os.path.join(folder, "trained.pt")
    run([args.atoll, "export", run_dir, "-o", weights, "--overwrite"])
    run([args.atoll, "export", run_dir, "-o", trained, "--format=torchscript", "--overwrite"])
    tensors, _ = load_safetensors(weights)
    model.load_state_dict(tensors, strict=True)
    loss, acc = evaluate(model, *val)
    script_loss, _ = evaluate(torch.jit.load(trained), *val)
    r = row(name, run_dir, loss, acc, script_loss)
    # atoll counted the module's training FLOPs (no --model.flops_per_sample): next to the model's own formula.
    r["flops_counted"], r["flops_formula"] = start_event(run_dir)["flops_per_example"], model.flops_per_sample()
    return r


def start_event(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return next(e for e in map(json.loads, f) if e["event"] == "start")


def row(name, run_dir, loss, acc, script_loss):
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    atoll_loss = summary["final_val_loss"]
    return dict(model=name, steps=summary["steps"], workers=summary["workers"], params=summary["params"],
                atoll=atoll_loss, pytorch=loss, torchscript=script_loss, accuracy=acc,
                diff=max(abs(loss - atoll_loss), abs(script_loss - atoll_loss)),
                sim_time=summary["sim_time_s"], sent=summary["bytes_sent_per_worker"], wall=summary["wall_s"])


def builtin_gpt(args, train_ids, val_ids, vocab):
    """atoll's built-in GPT, exported with nanoGPT's names, evaluated by TinyGPT."""
    folder = os.path.join(args.out, "builtin_gpt")
    data = os.path.join(folder, "data")
    os.makedirs(data, exist_ok=True)
    for split, ids in (("train", train_ids), ("val", val_ids)):
        ids.astype("<u2").tofile(os.path.join(data, split + ".bin"))
    run([args.atoll, "train", "--data.dataset=bin", "--data.dir=" + data, "--data.vocab_size=%d" % vocab,
         "--model.n_layer=2", "--model.n_head=2", "--model.n_embd=64", "--model.block_size=%d" % args.block,
         "--strategy.name=diloco", "--strategy.workers=4", "--diloco.inner_steps=%d" % args.inner_steps,
         "--train.steps=%d" % args.steps, "--train.batch_size=16", "--train.eval_every=0",
         "--run.out_dir=" + folder, "--run.name=diloco", "--run.overwrite=true", "--run.progress=false"])
    run_dir = os.path.join(folder, "diloco")
    weights = os.path.join(folder, "model.safetensors")
    run([args.atoll, "export", run_dir, "-o", weights, "--overwrite"])
    model = TinyGPT(vocab, args.block, n_layer=2, n_head=2, n_embd=64)
    tensors, _ = load_safetensors(weights)
    model.load_state_dict(tensors, strict=True)
    # atoll's full evaluation: every non-overlapping window of the validation split.
    loss, acc = evaluate(model, *windows(val_ids, args.block, args.block))
    return row("built-in GPT -> nanoGPT names", run_dir, loss, acc, loss)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--atoll", default="build/atoll", help="the atoll binary")
    p.add_argument("--out", default="/tmp/atoll-pytorch-example", help="folder for data, models and runs")
    p.add_argument("--steps", type=int, default=200, help="inner steps per worker")
    p.add_argument("--inner-steps", type=int, default=20, help="DiLoCo's H")
    p.add_argument("--block", type=int, default=32, help="tokens per GPT example")
    p.add_argument("--mnist", help="atoll's prepared MNIST folder (else generated images)")
    p.add_argument("--text-data", help="atoll's prepared text folder, e.g. data/brown (else generated text)")
    p.add_argument("--tolerance", type=float, default=1e-5, help="largest |PyTorch loss - atoll loss| accepted")
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    start = time.time()
    rows = []

    if args.mnist:
        train, val = mnist_split(os.path.join(args.mnist, "train.bin")), mnist_split(os.path.join(args.mnist, "test.bin"))
    else:
        train, val = synthetic_images(4000, rng), synthetic_images(1000, rng)
    rows.append(through_atoll(args, "cnn", MnistCnn(), train, val,
                              ["--train.batch_size=32", "--optim.lr=2e-3", "--train.eval_every=0"]))

    train_ids, val_ids, vocab = text_tokens(args, rng)
    gpt = TinyGPT(vocab, args.block)
    rows.append(through_atoll(args, "tinygpt", gpt, windows(train_ids, args.block, args.block // 2),
                              windows(val_ids, args.block, args.block), ["--train.batch_size=16", "--train.eval_every=0"]))
    rows.append(builtin_gpt(args, train_ids, val_ids, vocab))

    print("\n| model | workers x steps | params | atoll final eval loss | PyTorch on the export | "
          "TorchScript re-save | accuracy | simulated time | sent per worker |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d x %d | %d | %.6f | %.6f | %.6f | %.3f | %.1f s | %.1f MB |" % (
            r["model"], r["workers"], r["steps"], r["params"], r["atoll"], r["pytorch"], r["torchscript"],
            r["accuracy"], r["sim_time"], r["sent"] / 1e6))
    print("\n| model | training FLOPs per example: counted by atoll | the model's formula |")
    print("|---|---|---|")
    for r in rows:
        if "flops_counted" in r:
            print("| %s | %.6g | %.6g |" % (r["model"], r["flops_counted"], r["flops_formula"]))
    # The CNN's formula is exact (its convolutions' and its Linear's multiply-adds); the
    # GPT's, 6 x parameters per token plus attention, also counts the parameters only added.
    if rows[0]["flops_counted"] != rows[0]["flops_formula"]:
        print("FAILED: atoll's FLOP count of the CNN differs from its closed form")
        return 1
    worst = max(r["diff"] for r in rows)
    print("\nlargest |PyTorch - atoll| = %.2e (tolerance %.0e); %.0f s in all" % (worst, args.tolerance,
                                                                            time.time() - start))
    if worst > args.tolerance:
        print("FAILED: the exported weights do not give atoll's evaluation loss")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
