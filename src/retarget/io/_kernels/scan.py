"""The compiled kernels of :mod:`retarget.io._scan` (numba; private).

Loaded on first use (:mod:`retarget.core.lazy`): a fresh process pays numba's import
only when it reads a file with them. ``_scan._scan_kernel`` and the others stay
reachable from :mod:`retarget.io._scan` by name.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._scan_codes import TOKEN_BAD, TOKEN_END, TOKEN_SLOW

__all__: list[str] = []

_DEG = math.pi / 180.0
# Taylor coefficients of sin (x^1 .. x^17) and cos (x^0 .. x^16).
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8 = (
    (-1) ** k / math.factorial(2 * k + 1) for k in range(9)
)
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8 = ((-1) ** k / math.factorial(2 * k) for k in range(9))


# fastmath lets LLVM vectorise the loop; callers pass finite values only (the
# scanner rejects NaN and inf), which is all it assumes.
@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _sincos_half(theta, s_out, c_out):  # pragma: no cover - jitted
    for i in range(theta.shape[0]):
        phi = 0.5 * theta[i]
        k = math.floor(phi * (1.0 / 90.0) + 0.5)  # nearest quarter turn
        x = (phi - 90.0 * k) * _DEG  # exact reduction in degrees, |x| <= π/4
        x2 = x * x
        s = x * (
            _S0
            + x2
            * (
                _S1
                + x2
                * (_S2 + x2 * (_S3 + x2 * (_S4 + x2 * (_S5 + x2 * (_S6 + x2 * (_S7 + x2 * _S8))))))
            )
        )
        c = _C0 + x2 * (
            _C1
            + x2 * (_C2 + x2 * (_C3 + x2 * (_C4 + x2 * (_C5 + x2 * (_C6 + x2 * (_C7 + x2 * _C8))))))
        )
        m = k - 4.0 * math.floor(k * 0.25)  # quadrant 0..3
        swap = (m == 1.0) | (m == 3.0)
        ss = c if swap else s
        cc = s if swap else c
        s_out[i] = -ss if m >= 2.0 else ss
        c_out[i] = -cc if (m == 1.0) | (m == 2.0) else cc


@numba.njit(cache=True, nogil=True)
def _frame_quats(vals, sin_half, cos_half, cols, axes, counts, out):  # pragma: no cover
    """One frame: out[j] = product of the axis quaternions of joint j's channels."""
    _sincos_half(vals, sin_half, cos_half)
    for j in range(cols.shape[0]):
        w = 1.0
        x = 0.0
        y = 0.0
        z = 0.0
        if counts[j] > 0:  # start from the first axis quaternion
            a = axes[j, 0]
            w = cos_half[cols[j, 0]]
            s = sin_half[cols[j, 0]]
            x = s if a == 0 else 0.0
            y = s if a == 1 else 0.0
            z = s if a == 2 else 0.0
        for k in range(1, counts[j]):
            s = sin_half[cols[j, k]]
            c = cos_half[cols[j, k]]
            a = axes[j, k]
            # (w, v) ⊗ (c, s e_a)
            if a == 0:
                w, x, y, z = w * c - x * s, x * c + w * s, y * c + z * s, z * c - y * s
            elif a == 1:
                w, x, y, z = w * c - y * s, x * c - z * s, y * c + w * s, z * c + x * s
            else:
                w, x, y, z = w * c - z * s, x * c + y * s, y * c - x * s, z * c + w * s
        out[j, 0] = w
        out[j, 1] = x
        out[j, 2] = y
        out[j, 3] = z


@numba.njit(cache=True, nogil=True)
def _compose(values, cols, axes, counts, out):  # pragma: no cover - jitted
    n_chan = values.shape[1]
    sin_half = np.empty(n_chan)  # one frame's worth, reused: stays in cache
    cos_half = np.empty(n_chan)
    for f in range(values.shape[0]):
        _frame_quats(values[f], sin_half, cos_half, cols, axes, counts, out[f])


@numba.njit(cache=True, nogil=True)
def _scan_kernel(  # pragma: no cover - jitted
    buf, out, slow, frame0, targets, cols, axes, counts, root, trans, rot, pow10
):
    """Parse the decimals of ``buf``.

    Generic mode (``targets`` empty): value k goes to ``out[k]`` while room
    lasts; tokens for Python's float are recorded in ``slow`` as
    ``(byte offset, index)``.

    Fused mode: the values form frames of ``len(targets)`` channels, numbered
    from ``frame0``; ``targets[c]`` is -1 for a rotation channel, 0-2 for a
    root position axis, ``3 + 3j + axis`` for joint j's translation. Each
    completed frame f < len(rot) fills ``root[f]``, ``trans[f]`` and ``rot[f]``;
    the scan stops at the first token the fast path cannot take.

    Returns ``(count, kind, offset, n_slow)``: tokens read, how the scan
    stopped (TOKEN_END, TOKEN_SLOW in fused mode, TOKEN_BAD) and the byte
    offset of the token that stopped it (-1 at the end).
    """
    n = buf.shape[0]
    cap = out.shape[0]
    n_chan = targets.shape[0]
    fused = n_chan > 0
    vals = np.empty(max(n_chan, 1))
    sin_half = np.empty(max(n_chan, 1))
    cos_half = np.empty(max(n_chan, 1))
    n_frames = rot.shape[0]
    ch = 0
    f = frame0
    i = 0
    count = 0
    n_slow = 0
    while i < n:
        c = buf[i]
        if c == 32 or (9 <= c <= 13):
            i += 1
            continue
        start = i
        neg = c == 45
        neg_or_plus = 1 if (c == 45 or c == 43) else 0  # '-' '+'
        i += neg_or_plus
        mant = 0  # exact up to 18 digits; longer tokens are slow ones
        exp10 = 0
        while i < n:
            d = np.uint8(buf[i] - np.uint8(48))  # wraps below '0': one comparison
            if d > 9:
                break
            mant = mant * 10 + d
            i += 1
        digits = i - start - neg_or_plus
        if i < n and buf[i] == 46:  # '.'
            i += 1
            frac_start = i
            while i < n:
                d = np.uint8(buf[i] - np.uint8(48))
                if d > 9:
                    break
                mant = mant * 10 + d
                i += 1
            digits += i - frac_start
            exp10 -= i - frac_start
        if digits == 0:
            return count, TOKEN_BAD, start, n_slow
        if i < n and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
            i += 1
            eneg = False
            if i < n and (buf[i] == 45 or buf[i] == 43):
                eneg = buf[i] == 45
                i += 1
            edigits = 0
            e = 0
            while i < n and 48 <= buf[i] <= 57:
                if e < 100000:
                    e = e * 10 + (np.int64(buf[i]) - 48)
                edigits += 1
                i += 1
            if edigits == 0:
                return count, TOKEN_BAD, start, n_slow
            exp10 += -e if eneg else e
        if i < n and not (buf[i] == 32 or (9 <= buf[i] <= 13)):
            return count, TOKEN_BAD, start, n_slow
        if mant == 0:
            v = 0.0
        elif digits <= 18 and mant <= 9007199254740992 and -22 <= exp10 <= 22:  # m <= 2^53
            v = float(mant)
            if exp10 >= 0:
                v = v * pow10[exp10]
            else:
                v = v / pow10[-exp10]
        else:
            if fused:
                return count, TOKEN_SLOW, start, n_slow
            if n_slow < slow.shape[0]:
                slow[n_slow, 0] = start
                slow[n_slow, 1] = count
            n_slow += 1
            v = 0.0
        if neg:
            v = -v
        if not fused:
            if count < cap:
                out[count] = v
        else:
            vals[ch] = v
            ch += 1
            if ch == n_chan:
                if f < n_frames:
                    for k in range(n_chan):
                        t = targets[k]
                        if t >= 3:
                            trans[f, (t - 3) // 3, (t - 3) % 3] = vals[k]
                        elif t >= 0:
                            root[f, t] = vals[k]
                    _frame_quats(vals, sin_half, cos_half, cols, axes, counts, rot[f])
                ch = 0
                f += 1
        count += 1
    return count, TOKEN_END, -1, n_slow


@numba.njit(cache=True, nogil=True)
def count_lines(buf):  # pragma: no cover - jitted
    """Number of newline bytes in ``buf`` (vectorised)."""
    count = 0
    for i in range(buf.shape[0]):
        count += buf[i] == 10
    return count


# -- AMC lines (retarget.io.asf_amc) ---------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _scan_amc_lines(
    buf, clean, names, name_len, kind, code, ntok, first_start, first_end
):  # pragma: no cover - jitted
    """One pass over AMC body bytes: per line, the kind of its first token
    (blank / frame number / bone / unknown), ``code`` (frame number or bone
    index), the token count and the first token's byte range. In ``clean`` (a
    copy of ``buf``) first tokens and ``#`` comments are blanked, leaving only
    the numbers of bone lines for :func:`parse_floats`."""
    n = buf.shape[0]
    n_names = names.shape[0]
    line = 0
    count = 0
    guess = 0
    i = 0
    while i < n:
        c = buf[i]
        if c == 10:
            ntok[line] = count
            line += 1
            count = 0
            i += 1
            continue
        if c == 32 or (9 <= c <= 13):
            i += 1
            continue
        if c == 35:  # '#': a comment to the end of the line
            while i < n and buf[i] != 10:
                clean[i] = 32
                i += 1
            continue
        start = i
        while i < n:
            c = buf[i]
            if c == 32 or (9 <= c <= 13) or c == 35:
                break
            i += 1
        if count == 0:
            first_start[line] = start
            first_end[line] = i
            length = i - start
            digits = length <= 18
            value = 0
            for k in range(start, i):
                d = np.int64(buf[k]) - 48
                if d < 0 or d > 9:
                    digits = False
                    break
                value = value * 10 + d
            if digits:
                kind[line] = 1
                code[line] = value
            else:
                kind[line] = 3
                code[line] = -1
                for t in range(n_names):
                    b = (guess + t) % n_names  # bones usually come in the same order every frame
                    if name_len[b] == length:
                        same = True
                        for k in range(length):
                            if names[b, k] != buf[start + k]:
                                same = False
                                break
                        if same:
                            kind[line] = 2
                            code[line] = b
                            guess = b + 1
                            break
            for k in range(start, i):
                clean[k] = 32
        count += 1
    ntok[line] = count
