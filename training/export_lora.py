"""Export a finetune.py run for the runtime, which loads it with llama.cpp and numpy only (no torch).

    .venv/bin/python training/export_lora.py --run /tmp/ft-run          # -> /tmp/ft-run/export/

Writes, in --out (default RUN/export):
- writer-lora.gguf: the peft adapter (RUN/adapter) as a GGUF LoRA, for
  ``Llama(model_path=base, lora_path=..., embedding=True, pooling_type=LLAMA_POOLING_TYPE_NONE)``.
  Converted by llama.cpp's own convert_lora_to_gguf.py, taken from the sdist of the installed
  llama-cpp-python (same llama.cpp as the runtime): downloaded once with pip into --tools
  (default /tmp/gitmem-llama-cpp-<version>), only the converter, its conversion/ package and gguf-py/
  are extracted. The converter needs the base model's HF config (no weights): finetune.py saved
  the config of the model it loaded from the shipped GGUF in RUN/base-config; without it, it is
  read from the GGUF again by transformers. Nothing comes from a hub.
- writer-head.npz: the linear heads (float32 ``w`` [2*hidden], ``b``, ``wk`` [2*hidden, kinds], ``bk``)
  and ``meta`` (JSON): base-model file sha256, adapter sha256, hidden size, pooling version, kinds,
  LoRA settings and the training run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lora_common import POOLING_VERSION, base_model_path, save_base_config, sha256_file  # noqa: E402

LORA_FILE = "writer-lora.gguf"
HEAD_FILE = "writer-head.npz"
_MEMBERS = ("convert_lora_to_gguf.py", "convert_hf_to_gguf.py", "conversion/", "gguf-py/", "LICENSE")


def llama_cpp_version() -> str:
    from importlib.metadata import version

    return version("llama-cpp-python")


def converter(tools: Path | None = None) -> Path:
    """llama.cpp's convert_lora_to_gguf.py from the installed llama-cpp-python's sdist (cached)."""
    ver = llama_cpp_version()
    tools = tools or Path(tempfile.gettempdir()) / f"gitmem-llama-cpp-{ver}"
    script = tools / "convert_lora_to_gguf.py"
    if script.is_file() and (tools / "conversion" / "__init__.py").is_file():
        return script
    with tempfile.TemporaryDirectory() as dl:
        print(f"fetching llama-cpp-python=={ver} sdist for llama.cpp's converter", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={ver}", "-d", dl], check=True)
        sdist = next(Path(dl).glob("llama_cpp_python-*.tar.gz"))
        prefix = f"{sdist.name[: -len('.tar.gz')]}/vendor/llama.cpp/"
        staging = Path(tempfile.mkdtemp(dir=tools.parent, prefix=".gitmem-llama-cpp-"))
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                if not member.name.startswith(prefix) or not (member.isfile() or member.isdir()):
                    continue
                rel = member.name[len(prefix):]
                if not any(rel == m or (m.endswith("/") and rel.startswith(m)) for m in _MEMBERS):
                    continue
                member.name = rel
                tar.extract(member, staging, filter="data")
        shutil.rmtree(tools, ignore_errors=True)
        staging.rename(tools)
    return script


def write_base_config(model_path: Path, folder: Path, saved: Path | None = None) -> None:
    """config.json of the base model: the one finetune.py saved from the model it trained
    (RUN/base-config), else read by transformers from the GGUF (~35 s: it parses the whole file)."""
    if saved is not None and (saved / "config.json").is_file():
        shutil.copy(saved / "config.json", folder / "config.json")
        return
    from transformers import AutoConfig

    save_base_config(AutoConfig.from_pretrained(str(model_path.parent), gguf_file=model_path.name), folder)


def export_adapter(adapter_dir: Path, model_path: Path, out_file: Path, outtype: str, tools: Path | None,
                   saved_config: Path | None = None) -> None:
    script = converter(tools)
    with tempfile.TemporaryDirectory(prefix="gitmem-base-config-") as base:
        write_base_config(model_path, Path(base), saved_config)
        env = dict(os.environ)
        env.pop("NO_LOCAL_GGUF", None)  # use the converter's own gguf-py, matching its llama.cpp
        tmp = out_file.with_suffix(".tmp.gguf")
        proc = subprocess.run([sys.executable, str(script), "--base", base, "--outfile", str(tmp),
                               "--outtype", outtype, str(adapter_dir)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
            raise SystemExit(f"convert_lora_to_gguf.py failed ({proc.returncode})")
        tmp.replace(out_file)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="finetune.py --out folder (adapter/, heads.npz)")
    ap.add_argument("--adapter", default=None, help="peft adapter folder (default RUN/adapter)")
    ap.add_argument("--out", default=None, help="output folder (default RUN/export)")
    ap.add_argument("--outtype", default="f32", choices=("f32", "f16", "bf16", "q8_0"))
    ap.add_argument("--model", default=None, help="base GGUF (default: the embedded model)")
    ap.add_argument("--tools", default=None, help="where llama.cpp's converter is unpacked")
    args = ap.parse_args()

    run = Path(args.run)
    adapter = Path(args.adapter) if args.adapter else run / "adapter"
    out = Path(args.out) if args.out else run / "export"
    out.mkdir(parents=True, exist_ok=True)
    model_path = base_model_path(args.model)

    t0 = time.time()
    lora = out / LORA_FILE
    export_adapter(adapter, model_path, lora, args.outtype, Path(args.tools) if args.tools else None,
                   run / "base-config")
    t_lora = time.time() - t0

    base_sha = sha256_file(model_path)
    lora_sha = sha256_file(lora)
    data = np.load(run / "heads.npz", allow_pickle=False)
    meta = json.loads(str(data["meta"]))
    if meta.get("base_sha256") not in (None, base_sha):
        raise SystemExit("the run was trained on another base model file")
    adapter_cfg = json.loads((adapter / "adapter_config.json").read_text())
    meta.update({"base_sha256": base_sha, "base_file": model_path.name, "adapter_sha256": lora_sha,
                 "adapter_file": LORA_FILE, "adapter_outtype": args.outtype, "pooling_version": POOLING_VERSION,
                 "llama_cpp_python": llama_cpp_version(), "lora_r": adapter_cfg.get("r"),
                 "lora_alpha": adapter_cfg.get("lora_alpha"),
                 "targets": sorted(adapter_cfg.get("target_modules") or [])})
    meta.setdefault("threshold", 0.5)
    head = out / HEAD_FILE
    arrays = {k: np.asarray(data[k], dtype=np.float32) for k in ("w", "b", "wk", "bk")}
    assert arrays["w"].shape == (meta["feature_dim"],) and arrays["wk"].shape[0] == meta["feature_dim"]
    with open(head, "wb") as handle:
        np.savez(handle, **arrays, meta=np.asarray(json.dumps(meta, sort_keys=True)))
    total = time.time() - t0
    print(json.dumps({"lora": str(lora), "lora_bytes": lora.stat().st_size, "lora_sha256": lora_sha,
                      "head": str(head), "head_bytes": head.stat().st_size, "convert_seconds": round(t_lora, 1),
                      "export_seconds": round(total, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
