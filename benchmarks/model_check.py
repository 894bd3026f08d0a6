"""Find the convolution of a converted model that faults or goes wrong on the GPU.

    CUDA_LAUNCH_BLOCKING=1 python benchmarks/model_check.py convnext_tiny --batch 32

Converts torchvision's model (random weights, fp16 channels_last, as ``bench --model``
does), tunes it unless ``--no-tune``, then runs it with every tileconv convolution checked
against ``F.conv2d`` on the same input (and the device synchronised after each, so that a
kernel fault is reported at the layer that caused it), then the way ``bench`` times it:
back-to-back calls (replays), then a CUDA graph of the whole model, replayed. Prints the
layer, its problem and its algorithm and config when something fails; exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tileconv  # noqa: E402
from tileconv.bench.models import build_torchvision_model, calibrate_batchnorm, cuda_graph_call  # noqa: E402
from tileconv.dispatch import select  # noqa: E402
from tileconv.problem import problem_from_arguments  # noqa: E402


def _describe(name: str, module: torch.nn.Module, x: torch.Tensor) -> str:
    args = (x, module.weight, module.bias, module.stride, module.padding, module.dilation, module.groups)
    problem = problem_from_arguments(*args)
    algorithm, config = select(problem)
    return f"{name}: {problem.describe()} {problem.layout} strides {x.stride()} -> {algorithm.name} {config}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--calls", type=int, default=200, help="back-to-back calls after the checked one")
    parser.add_argument("--no-tune", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build_torchvision_model(args.model).cuda().to(memory_format=torch.channels_last)

    def make_input() -> torch.Tensor:
        return torch.randn(args.batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)

    calibrate_batchnorm(model, make_input)
    model = model.half()
    x = make_input().half()
    with torch.no_grad():
        converted = tileconv.convert(model, example_inputs=(x,))
        if not args.no_tune:
            tileconv.tune_model(converted, (x,), progress=False)
        failures = []

        def check(module, inputs, kwargs, output, name=""):
            torch.cuda.synchronize()  # a fault surfaces here, at its layer
            # convert passes a fused residual by keyword (a plain forward hook never sees it)
            residual = inputs[1] if len(inputs) > 1 else kwargs.get("residual")
            inp = inputs[0]
            ref = F.conv2d(inp.float(), module.weight.float(), None if module.bias is None else module.bias.float(),
                           module.stride, module.padding, module.dilation, module.groups)
            if isinstance(residual, torch.Tensor):
                ref = ref + residual.float()
            ref = module.activation.torch_apply(ref)
            err = (output.float() - ref).abs().max().item()
            if not err <= 0.02 * max(ref.abs().max().item(), 1.0):  # fp16 rounding is ~1e-3 of the scale
                failures.append(f"{_describe(name, module, inp)}: max error {err:.3g}")
            print("ok", _describe(name, module, inp), flush=True)

        handles = [m.register_forward_hook(lambda mod, i, kw, o, name=n: check(mod, i, kw, o, name), with_kwargs=True)
                   for n, m in converted.named_modules() if isinstance(m, tileconv.nn.Conv2d)]
        converted(x)
        for handle in handles:
            handle.remove()
        print(f"checked {len(handles)} convolutions; {len(failures)} wrong", flush=True)
        for line in failures:
            print("WRONG", line)
        for call in range(args.calls):
            converted(x)
            if call % 20 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        print(f"{args.calls} back-to-back calls ok", flush=True)
        replay, out = cuda_graph_call(converted, x)
        for _ in range(args.calls):
            replay()
        torch.cuda.synchronize()
        print(f"CUDA graph: {args.calls} replays ok; output finite: {bool(torch.isfinite(out).all())}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
