"""The two models of the example, written as a PyTorch user writes them.

MnistCnn: a small convolutional classifier (no BatchNorm: atoll does not
synchronise running statistics; LayerNorm/GroupNorm are fine).
TinyGPT: a decoder-only transformer with nanoGPT's structure and parameter
names, so it also loads the weights `atoll export` writes for atoll's
built-in GPT.

Both follow atoll's TorchScript contract: forward(inputs) returns logits and
atoll scores them with cross-entropy (model.loss = auto).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5)   # 28 -> 24, pooled to 12
        self.conv2 = nn.Conv2d(16, 32, 5)  # 12 -> 8, pooled to 4
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))

    @staticmethod
    def flops_per_sample():
        # Training FLOPs of one image: 3 x (2 x multiply-adds of the forward pass).
        macs = 24 * 24 * 16 * 25 + 8 * 8 * 32 * 16 * 25 + 512 * 10
        return 3 * 2 * macs


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's; PyTorch 1.13's has no bias=False)."""

    def __init__(self, ndim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, bias: bool):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Mlp(nn.Module):
    def __init__(self, n_embd: int, bias: bool):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, bias: bool):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = Mlp(n_embd, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab_size: int, block_size: int, n_layer: int = 2, n_head: int = 2, n_embd: int = 64,
                 bias: bool = False):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, bias) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as in GPT-2 and nanoGPT
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def flops_per_sample(self):
        # 6 x parameters per token plus attention, as atoll's built-in GPT counts it. atoll's
        # count of this module is lower by 6 per parameter that is only added (position
        # embedding, norms): docs/PYTORCH.md.
        n = sum(p.numel() for p in self.parameters())
        layers = len(self.transformer.h)
        C = self.transformer.wte.weight.size(1)
        return (6 * n + 12 * layers * self.block_size * C) * self.block_size
