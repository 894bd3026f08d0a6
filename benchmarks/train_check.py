"""Do ResNet-50's training gradients on tileconv match PyTorch's? A GPU diagnostic for the
training run of ``bench --train`` (which found tileconv's loss trailing PyTorch's).

1. One forward + backward from the same weights on the same batch, bf16 autocast, for
   PyTorch and for tileconv.convert(fuse=False), each parameter's gradient against a float64
   PyTorch reference: relative error ||g - g64|| / ||g64||. tileconv's error should be of
   PyTorch's own order on every layer; the worst ratios are printed.
2. Five SGD steps in strict float32 (no autocast) from the same weights: the losses of
   both, step by step. Updates in place change the weights each step; a kernel reading a
   stale copy of a weight would show here as a growing gap.

    python benchmarks/train_check.py [model]     (default resnet50; 'tiny' for a CPU smoke run)
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tileconv.bench import train as tr  # noqa: E402

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
initial, size, classes = tr.initial_model(sys.argv[1] if len(sys.argv) > 1 else "resnet50", tr.SEED)
images, labels = tr.fixed_batches(1, 32, size, classes, tr.SEED + 1, device)[0]


def grads(kind: str, amp: torch.dtype | None, dtype=torch.float32) -> tuple[float, dict[str, torch.Tensor]]:
    model = tr.prepare(initial, kind, device).to(dtype)
    with torch.autocast(device.type, dtype=amp or torch.bfloat16, enabled=amp is not None):
        loss = F.cross_entropy(model(images.to(dtype)), labels)
    loss.backward()
    return loss.item(), {name: p.grad.double() for name, p in model.named_parameters() if p.grad is not None}


loss64, ref = grads("pytorch", None, torch.float64)
AMP = None if os.environ.get("CHECK_FP32") == "1" else torch.bfloat16
rows = []
for kind in ("pytorch", "tileconv"):
    loss, got = grads(kind, AMP)
    print(f"{kind:9s} {'fp32' if AMP is None else 'bf16'} loss {loss:.7f} (float64 {loss64:.7f})", flush=True)
    for name, g in got.items():
        rel = ((g - ref[name]).norm() / ref[name].norm().clamp_min(1e-30)).item()
        rows.append((kind, name, rel))
errors = {(kind, name): rel for kind, name, rel in rows}
ratios = sorted(((errors[("tileconv", name)] / max(errors[("pytorch", name)], 1e-12), name)
                 for kind, name, _ in rows if kind == "pytorch"), reverse=True)
print("worst tileconv/pytorch gradient-error ratios (vs float64):")
for ratio, name in ratios[:12]:
    print(f"  {name:40s} tileconv {errors[('tileconv', name)]:.3e}  pytorch {errors[('pytorch', name)]:.3e}  "
          f"ratio {ratio:.2f}")
conv_names = [name for _, name in ratios if "conv" in name or "downsample.0" in name]
mean = sum(errors[("tileconv", n)] for n in conv_names) / len(conv_names)
mean_pt = sum(errors[("pytorch", n)] for n in conv_names) / len(conv_names)
print(f"mean over conv weights: tileconv {mean:.3e}, pytorch {mean_pt:.3e}")

print("five SGD steps, strict float32:")
losses = {}
for kind in ("pytorch", "pytorch_nudged", "tileconv"):  # nudged: inputs moved by 1e-6, PyTorch's own sensitivity
    model = tr.prepare(initial, "pytorch" if kind == "pytorch_nudged" else kind, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0125, momentum=0.9, weight_decay=1e-4)
    batches = tr.fixed_batches(5, 32, size, classes, tr.SEED + 1, device)
    losses[kind] = []
    for x, y in batches:
        if kind == "pytorch_nudged":
            x = x * (1 + 1e-6)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses[kind].append(loss.item())
    del model, optimizer
for step, (a, n, b) in enumerate(zip(losses["pytorch"], losses["pytorch_nudged"], losses["tileconv"], strict=True)):
    print(f"  step {step}: pytorch {a:.6f}  tileconv {b:.6f}  diff {abs(a - b):.2e}  (pytorch nudged: diff {abs(a - n):.2e})")
