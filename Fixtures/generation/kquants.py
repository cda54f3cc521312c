"""Simple Q4_K, Q5_K and Q6_K quantizers that write ggml's block layouts.

They are not llama.cpp's quantizers (no search for the best scales): each sub-block's scale (and
min) comes straight from its range. What matters for the fixtures is that the blocks are valid and
that the dequantized weights stay close to the float weights they came from; the fixtures are
computed from the dequantized weights, as every reader of the file sees them.

Block layouts (QK_K = 256 weights a block; "f16" is IEEE half, little-endian):

* Q4_K, 144 bytes: d f16, dmin f16, scales[12], qs[128]. Eight sub-blocks of 32 with a 6-bit
  scale sc[j] and a 6-bit min m[j]; weight = d * sc[j] * q - dmin * m[j], q in 0..15. For j < 4,
  sc[j] = scales[j] & 63 and m[j] = scales[j + 4] & 63; for j >= 4, sc[j] = (scales[j + 4] & 15) |
  ((scales[j - 4] >> 6) << 4) and m[j] = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4). qs holds
  four 32-byte groups; group g gives sub-block 2g from its low nibbles and 2g + 1 from its high ones.
* Q5_K, 176 bytes: d, dmin, scales[12] as Q4_K, qh[32], qs[128]; q in 0..31 is the Q4_K nibble plus
  16 * bit j of qh[l] for weight l of sub-block j.
* Q6_K, 210 bytes: ql[128], qh[64], scales[16] (int8), d f16. Sixteen sub-blocks of 16; weight =
  d * scales[j] * (q - 32), q in 0..63. Each half n (128 weights) uses ql[64n:64n+64],
  qh[32n:32n+32]; for l in 0..31: weight l <- low nibble of ql[l] | (qh[l] & 3) << 4, weight l + 32
  <- low nibble of ql[l + 32] | ((qh[l] >> 2) & 3) << 4, weight l + 64 <- high nibble of ql[l] |
  ((qh[l] >> 4) & 3) << 4, weight l + 96 <- high nibble of ql[l + 32] | ((qh[l] >> 6) & 3) << 4.
"""

import numpy as np

QK_K = 256


def _f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def _pack_scales_mins(sc, m):
    """sc, m: (n, 8) ints in 0..63 -> (n, 12) bytes."""
    out = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    for j in range(4):
        out[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
        out[:, j + 4] = (m[:, j] & 63) | ((m[:, j + 4] >> 4) << 6)
        out[:, j + 8] = (sc[:, j + 4] & 15) | ((m[:, j + 4] & 15) << 4)
    return out


def _affine_blocks(x, levels):
    """Q4_K / Q5_K style: returns d, dmin (f16), sc, m (n, 8), q (n, 256)."""
    n = x.shape[0]
    sub = x.reshape(n, 8, 32)
    lo = np.minimum(sub.min(axis=2), 0.0)
    hi = sub.max(axis=2)
    scale = (hi - lo) / levels
    mins = -lo
    d = _f16(scale.max(axis=1) / 63.0)
    dmin = _f16(mins.max(axis=1) / 63.0)
    d32 = d.astype(np.float32)[:, None]
    dmin32 = dmin.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32 > 0, np.rint(scale / d32), 0).clip(0, 63).astype(np.int64)
        m = np.where(dmin32 > 0, np.rint(mins / dmin32), 0).clip(0, 63).astype(np.int64)
        step = (d32 * sc)[:, :, None]
        offset = (dmin32 * m)[:, :, None]
        q = np.where(step > 0, np.rint((sub + offset) / step), 0).clip(0, levels).astype(np.int64)
    return d, dmin, sc, m, q.reshape(n, 256)


def quantize_q4_k(x):
    x = np.asarray(x, dtype=np.float32).reshape(-1, QK_K)
    d, dmin, sc, m, q = _affine_blocks(x, 15)
    n = x.shape[0]
    qs = np.zeros((n, 128), dtype=np.uint8)
    for g in range(4):
        lo = q[:, 64 * g:64 * g + 32]
        hi = q[:, 64 * g + 32:64 * g + 64]
        qs[:, 32 * g:32 * g + 32] = (lo | (hi << 4)).astype(np.uint8)
    return np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                           _pack_scales_mins(sc, m), qs], axis=1)


def quantize_q5_k(x):
    x = np.asarray(x, dtype=np.float32).reshape(-1, QK_K)
    d, dmin, sc, m, q = _affine_blocks(x, 31)
    n = x.shape[0]
    qs = np.zeros((n, 128), dtype=np.uint8)
    qh = np.zeros((n, 32), dtype=np.uint8)
    for g in range(4):
        lo = q[:, 64 * g:64 * g + 32]
        hi = q[:, 64 * g + 32:64 * g + 64]
        qs[:, 32 * g:32 * g + 32] = ((lo & 15) | ((hi & 15) << 4)).astype(np.uint8)
        qh |= (((lo >> 4) & 1) << (2 * g)).astype(np.uint8)
        qh |= (((hi >> 4) & 1) << (2 * g + 1)).astype(np.uint8)
    return np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                           _pack_scales_mins(sc, m), qh, qs], axis=1)


def quantize_q6_k(x):
    x = np.asarray(x, dtype=np.float32).reshape(-1, QK_K)
    n = x.shape[0]
    sub = x.reshape(n, 16, 16)
    amax = np.abs(sub).max(axis=2)
    scale = amax / 31.0
    d = _f16(scale.max(axis=1) / 127.0)
    d32 = d.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32 > 0, np.rint(scale / d32), 0).clip(-128, 127).astype(np.int64)
        step = (d32 * sc)[:, :, None]
        q = np.where(step != 0, np.rint(sub / step), 0).clip(-32, 31).astype(np.int64) + 32
    q = q.reshape(n, 256)
    ql = np.zeros((n, 128), dtype=np.uint8)
    qh = np.zeros((n, 64), dtype=np.uint8)
    for h in range(2):
        b = q[:, 128 * h:128 * h + 128]
        q1, q2, q3, q4 = b[:, 0:32], b[:, 32:64], b[:, 64:96], b[:, 96:128]
        ql[:, 64 * h:64 * h + 32] = ((q1 & 15) | ((q3 & 15) << 4)).astype(np.uint8)
        ql[:, 64 * h + 32:64 * h + 64] = ((q2 & 15) | ((q4 & 15) << 4)).astype(np.uint8)
        qh[:, 32 * h:32 * h + 32] = ((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)).astype(np.uint8)
    return np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), d.view(np.uint8).reshape(n, 2)], axis=1)


QUANTIZERS = {"Q4_K": quantize_q4_k, "Q5_K": quantize_q5_k, "Q6_K": quantize_q6_k}


def quantize(weights, qtype):
    """(rows, cols) float weights -> (rows, cols // 256 * block_bytes) uint8 blocks."""
    rows, cols = weights.shape
    assert cols % QK_K == 0
    blocks = QUANTIZERS[qtype](weights.reshape(-1, QK_K))
    return blocks.reshape(rows, -1)
