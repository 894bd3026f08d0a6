"""``tileconv.convert(model)``: a model whose convolutions run on tileconv, with fusions.

What a converted model computes is the original's function; what changes is where:

- every ``torch.nn.Conv2d`` (exactly that class: subclasses may override ``forward``) becomes a
  :class:`tileconv.nn.Conv2d` with the same parameters;
- an eval-mode ``BatchNorm2d`` that reads the convolution's output is folded into its weight
  and bias (``w' = w * gamma / sqrt(var + eps)``, ``b' = (b - mean) * gamma / sqrt(var + eps) + beta``,
  computed in float64 and stored in the weight's dtype);
- a residual add that reads the (folded) output, ``out + skip`` or ``skip + out``, becomes the
  kernel's ``residual=`` operand;
- a following ReLU / ReLU6 / SiLU / GELU (erf or tanh) / Hardswish (also LeakyReLU, Sigmoid,
  Tanh), as a module, a function or a tensor method, in-place or not, becomes the kernel's
  activation.

How: ``torch.fx.symbolic_trace``, then a walk over the graph matching
``conv -> [BatchNorm2d] -> [add] -> [activation]`` in which every intermediate value has
exactly one user (a value read elsewhere must stay in memory, so nothing after it fuses).
The chain's nodes are replaced by one call of the new convolution module, which keeps the
original convolution's name (state_dict keys ``<conv>.weight``, ``<conv>.bias``; folded
BatchNorms' entries disappear). The result is a ``torch.fx.GraphModule``: the original's
submodules and forward, but not its Python class or other methods.

Residual shapes: an add may broadcast (``out + bias_map``) or promote dtypes, which the
kernel's residual does not. With ``example_inputs=`` the graph's shapes are propagated on
them and an add is fused only where the other operand has the output's shape and dtype
(the report says why others were not). Without it, an add is fused into a
:class:`ResidualConv2d`, which checks at run time and, when the operand does not have the
output's shape and dtype, computes the unfused ``activation(conv(x) + skip)`` in PyTorch.

Not fused, and said so in the report: BatchNorm in training mode (its statistics come from
the batch; call ``model.eval()`` first), modules called from several places, values read by
several nodes. A model that cannot be traced (data-dependent control flow) falls back to
module-by-module replacement: every ``nn.Conv2d`` is replaced in place, and inside an
``nn.Sequential`` a Conv2d directly followed by an eval BatchNorm2d (and then an activation
module) is folded and fused, the folded modules becoming ``nn.Identity``; a warning lists what
could not be fused. Convolutions with ``padding_mode`` other than zeros are fused like the
others: :class:`tileconv.nn.Conv2d` pads explicitly before the convolution, so folding the
affine BatchNorm and the epilogue after it keeps the meaning.

The report is ``converted.tileconv_report`` (:class:`ConversionReport`); :func:`summary`
turns it into text. A converted model runs wherever tileconv runs: CUDA (the kernels), the
CPU (PyTorch's fallback, or the interpreter), and it pickles and round-trips its state_dict.
"""

from __future__ import annotations

import copy
import operator
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn

from . import nn as tnn
from .epilogue import Activation, ActivationArg
from .functional import conv2d

__all__ = ["ConversionReport", "ResidualConv2d", "convert", "summary"]


# --------------------------------------------------------------------- the report
@dataclass
class ConversionReport:
    """What :func:`convert` did: counts, one line per fused chain, and what it left alone and why."""

    traced: bool = False  # True: torch.fx graph rewrite; False: module-by-module fallback
    convs_replaced: int = 0
    bn_folded: int = 0
    activations_fused: int = 0
    residual_adds_fused: int = 0
    fused: list[str] = field(default_factory=list)  # 'layer1.0.conv3 + bn3 + add + relu'
    not_fused: list[tuple[str, str]] = field(default_factory=list)  # (where, why)

    def summary(self) -> str:
        return summary(self)


def summary(report: ConversionReport) -> str:
    """``report`` as a few lines of text: the counts, then each thing left unfused and why."""
    how = "torch.fx graph rewrite" if report.traced else "module-by-module replacement (not traced)"
    lines = [
        f"tileconv.convert ({how}): {report.convs_replaced} convolutions replaced, "
        f"{report.bn_folded} BatchNorms folded, {report.activations_fused} activations fused, "
        f"{report.residual_adds_fused} residual adds fused"
    ]
    if report.not_fused:
        lines.append(f"not fused ({len(report.not_fused)}):")
        lines += [f"  {where}: {why}" for where, why in report.not_fused]
    return "\n".join(lines)


# --------------------------------------------------------------------- the modules made
class ResidualConv2d(tnn.Conv2d):
    """A :class:`tileconv.nn.Conv2d` whose ``residual`` was fused without knowing its shape.

    ``forward(input, residual)`` fuses the residual when it has the output's shape and
    dtype (tileconv checks both before computing anything); otherwise it computes what the
    original graph did, ``activation(conv(input) + residual)``, with PyTorch's broadcasting
    and type promotion for the add.
    """

    def forward(self, input: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        if residual is None or not isinstance(residual, torch.Tensor):
            return self._unfused(input, residual)
        try:
            return super().forward(input, residual)
        except (ValueError, TypeError):  # residual shape or dtype differs: not fusable here
            return self._unfused(input, residual)

    def _unfused(self, input: torch.Tensor, residual) -> torch.Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        else:
            padding = self.padding
        out = conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)
        if residual is not None:
            out = out + residual
        return self.activation.torch_apply(out)


def _folded_parameters(conv: nn.Conv2d, bn: nn.BatchNorm2d | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weight, bias) of ``bn(conv(x))`` as one convolution, in the conv weight's dtype."""
    weight, bias = conv.weight.detach(), None if conv.bias is None else conv.bias.detach()
    if bn is None:
        return weight.clone(), None if bias is None else bias.clone()
    f64 = torch.float64
    scale = torch.rsqrt(bn.running_var.detach().to(f64) + bn.eps)
    if bn.weight is not None:
        scale = scale * bn.weight.detach().to(f64)
    shift = -bn.running_mean.detach().to(f64) * scale
    if bias is not None:
        shift = shift + bias.to(f64) * scale
    if bn.bias is not None:
        shift = shift + bn.bias.detach().to(f64)
    new_weight = (weight.to(f64) * scale.view(-1, 1, 1, 1)).to(weight.dtype)
    return new_weight, shift.to(weight.dtype)


def _tileconv_conv(
    conv: nn.Conv2d, bn: nn.BatchNorm2d | None, activation: ActivationArg, residual_guard: bool
) -> tnn.Conv2d:
    """A tileconv convolution computing ``activation(bn(conv(x)) [+ residual])``, on conv's device and dtype."""
    weight, bias = _folded_parameters(conv, bn)
    cls = ResidualConv2d if residual_guard else tnn.Conv2d
    new = cls(
        conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride, padding=conv.padding,
        dilation=conv.dilation, groups=conv.groups, bias=bias is not None, padding_mode=conv.padding_mode,
        device="meta", activation=activation,
    )  # on 'meta': no initialisation of parameters that are replaced next
    new.weight = nn.Parameter(weight, requires_grad=conv.weight.requires_grad)
    if bias is not None:
        grad = conv.bias.requires_grad if conv.bias is not None else conv.weight.requires_grad
        new.bias = nn.Parameter(bias, requires_grad=grad)
    new.train(conv.training)
    return new


def _bn_foldable(bn: nn.Module, conv: nn.Conv2d) -> str | None:
    """None when ``bn`` can be folded into ``conv``, else why not."""
    if type(bn) is not nn.BatchNorm2d:
        return f"{type(bn).__name__} is not BatchNorm2d"
    if bn.training:
        return "BatchNorm2d in training mode normalises with batch statistics: not folded (call model.eval() first)"
    if bn.running_mean is None or bn.running_var is None:
        return "BatchNorm2d without running statistics (track_running_stats=False): not folded"
    if bn.num_features != conv.out_channels:
        return f"BatchNorm2d has {bn.num_features} features, the convolution {conv.out_channels} channels"
    return None


# --------------------------------------------------------------------- activations
_MODULE_ACTIVATIONS: dict[type, str] = {
    nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu", nn.Hardswish: "hardswish",
    nn.Sigmoid: "sigmoid", nn.Tanh: "tanh",
}
_FUNCTION_ACTIVATIONS: dict[object, str] = {
    F.relu: "relu", F.relu_: "relu", torch.relu: "relu", torch.relu_: "relu",
    F.relu6: "relu6", F.silu: "silu", F.hardswish: "hardswish", F.gelu: "gelu",
    F.leaky_relu: "leaky_relu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
    torch.tanh: "tanh", F.tanh: "tanh",
}
_METHOD_ACTIVATIONS: dict[str, str] = {
    "relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "sigmoid_": "sigmoid", "tanh": "tanh", "tanh_": "tanh",
}
_NOT_AN_ACTIVATION = object()


def _module_activation(module: nn.Module) -> ActivationArg | object:
    kind = type(module)
    if kind in _MODULE_ACTIVATIONS:
        return _MODULE_ACTIVATIONS[kind]
    if kind is nn.GELU:
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(module.approximate, _NOT_AN_ACTIVATION)
    if kind is nn.LeakyReLU:
        return ("leaky_relu", float(module.negative_slope))
    return _NOT_AN_ACTIVATION


def _node_activation(node: fx.Node, value: fx.Node, modules: dict[str, nn.Module]) -> ActivationArg | object:
    """The activation ``node`` applies to ``value``, or _NOT_AN_ACTIVATION."""
    if node.op == "call_module":
        if len(node.args) != 1 or node.kwargs or node.args[0] is not value:
            return _NOT_AN_ACTIVATION
        return _module_activation(modules[node.target])
    if node.op == "call_method":
        if node.target in _METHOD_ACTIVATIONS and node.args == (value,) and not node.kwargs:
            return _METHOD_ACTIVATIONS[node.target]
        return _NOT_AN_ACTIVATION
    if node.op != "call_function" or not node.args or node.args[0] is not value:
        return _NOT_AN_ACTIVATION
    try:
        name = _FUNCTION_ACTIVATIONS.get(node.target)
    except TypeError:  # an unhashable target
        return _NOT_AN_ACTIVATION
    if name is None:
        return _NOT_AN_ACTIVATION
    extra = dict(node.kwargs)
    positional = {"relu": ["inplace"], "relu6": ["inplace"], "silu": ["inplace"], "hardswish": ["inplace"],
                  "gelu": ["approximate"], "leaky_relu": ["negative_slope", "inplace"]}.get(name, [])
    if len(node.args) - 1 > len(positional):
        return _NOT_AN_ACTIVATION
    extra.update(zip(positional, node.args[1:], strict=False))  # positional is the longer
    if set(extra) - {"inplace", "approximate", "negative_slope"} or any(isinstance(v, fx.Node) for v in extra.values()):
        return _NOT_AN_ACTIVATION
    if name == "gelu":
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(extra.get("approximate", "none"), _NOT_AN_ACTIVATION)
    if name == "leaky_relu":
        return ("leaky_relu", float(extra.get("negative_slope", 0.01)))
    return name


# --------------------------------------------------------------------- residual adds
_ADDS = {operator.add, operator.iadd, torch.add}


def _residual_operand(node: fx.Node, value: fx.Node) -> fx.Node | None:
    """The other operand when ``node`` is ``value + other`` or ``other + value`` (a tensor node)."""
    if node.op == "call_function" and node.target in _ADDS:
        if set(node.kwargs) - {"alpha"} or node.kwargs.get("alpha", 1) != 1:
            return None
    elif node.op == "call_method" and node.target in ("add", "add_"):
        if set(node.kwargs) - {"alpha"} or node.kwargs.get("alpha", 1) != 1:
            return None
        if node.target == "add_" and node.args[0] is not value:
            return None  # other.add_(value) writes into the residual, which other nodes may read
    else:
        return None
    if len(node.args) != 2:
        return None
    first, second = node.args
    other = second if first is value else first if second is value else None
    if not isinstance(other, fx.Node) or other is value:
        return None
    return other


def _same_shape(a: fx.Node, b: fx.Node) -> bool | None:
    """Shape and dtype equal (from shape propagation), or None when unknown."""
    meta_a, meta_b = a.meta.get("tensor_meta"), b.meta.get("tensor_meta")
    if meta_a is None or meta_b is None:
        return None
    if not hasattr(meta_a, "shape") or not hasattr(meta_b, "shape"):
        return False
    return tuple(meta_a.shape) == tuple(meta_b.shape) and meta_a.dtype == meta_b.dtype


# --------------------------------------------------------------------- the fx path
class _Tracer(fx.Tracer):
    """symbolic_trace's tracer, with tileconv's own convolutions kept as leaves."""

    def is_leaf_module(self, module: nn.Module, qualified_name: str) -> bool:
        return isinstance(module, tnn.Conv2d) or super().is_leaf_module(module, qualified_name)


def _trace(model: nn.Module) -> fx.GraphModule:
    tracer = _Tracer()
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph, type(model).__name__)


def _propagate_shapes(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> None:
    """Each node's output shape in ``node.meta['tensor_meta']``, from a run in eval mode
    (so that training-mode BatchNorms do not update their statistics on the example)."""
    from torch.fx.passes.shape_prop import ShapeProp

    modes = {name: module.training for name, module in gm.named_modules()}
    gm.eval()
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*example_inputs)
    finally:
        for name, module in gm.named_modules():
            module.training = modes[name]


def _set_submodule(root: nn.Module, qualified_name: str, module: nn.Module) -> None:
    parent_name, _, child = qualified_name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, child, module)


def _single_user(node: fx.Node) -> fx.Node | None:
    """The one node reading ``node``; None when it is read by several nodes or none."""
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _is_batchnorm_call(node: fx.Node, value: fx.Node, modules: dict[str, nn.Module]) -> bool:
    return (node.op == "call_module" and isinstance(modules.get(node.target), nn.modules.batchnorm._BatchNorm)
            and node.args == (value,) and not node.kwargs)


def _convert_graph(gm: fx.GraphModule, report: ConversionReport, shapes_known: bool) -> None:
    modules = dict(gm.named_modules())
    call_sites = Counter(node.target for node in gm.graph.nodes if node.op == "call_module")
    folded_bns: set[str] = set()
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or type(modules.get(node.target)) is not nn.Conv2d:
            continue
        conv = modules[node.target]
        where = node.target
        shared = call_sites[node.target] > 1
        if shared or len(node.args) != 1 or node.kwargs:
            why = "called from several places" if shared else "called with extra arguments"
            report.not_fused.append((where, f"convolution module {why}: replaced, nothing fused"))
            new = _tileconv_conv(conv, None, None, residual_guard=False)
            _set_submodule(gm, node.target, new)
            modules[node.target] = new
            call_sites[node.target] = 0  # replaced once for all its calls
            report.convs_replaced += 1
            continue
        chain, value, parts = [node], node, [where]
        bn = activation = residual = None
        nxt = _single_user(value)
        if nxt is not None and _is_batchnorm_call(nxt, value, modules):
            why = _bn_foldable(modules[nxt.target], conv)
            if why is None and call_sites[nxt.target] > 1:
                why = "BatchNorm2d module called from several places: not folded"
            if why is not None:
                report.not_fused.append((nxt.target, why))
                nxt = None  # the BatchNorm stays between the convolution and what follows
            else:
                bn = modules[nxt.target]
                folded_bns.add(nxt.target)
                chain.append(nxt)
                value = nxt
                parts.append(nxt.target.rpartition(".")[2])
                nxt = _single_user(value)
        other = None if nxt is None else _residual_operand(nxt, value)
        if other is not None:
            if shapes_known and not _same_shape(other, value):
                report.not_fused.append((f"{where} -> {nxt.name}", "the add's other operand does not have the "
                                         "convolution output's shape and dtype: add not fused"))
                nxt = None
            else:
                residual = other
                chain.append(nxt)
                value = nxt
                parts.append("add")
                nxt = _single_user(value)
        act = _NOT_AN_ACTIVATION if nxt is None else _node_activation(nxt, value, modules)
        if act is not _NOT_AN_ACTIVATION:
            activation = act
            chain.append(nxt)
            parts.append(str(Activation.parse(act)))
        new = _tileconv_conv(conv, bn, activation, residual_guard=residual is not None and not shapes_known)
        _set_submodule(gm, node.target, new)
        modules[node.target] = new
        report.convs_replaced += 1
        report.bn_folded += bn is not None
        report.activations_fused += activation is not None
        report.residual_adds_fused += residual is not None
        if len(chain) > 1:
            report.fused.append(" + ".join(parts))
        last = chain[-1]
        with gm.graph.inserting_before(last):
            kwargs = {} if residual is None else {"residual": residual}
            fused = gm.graph.call_module(node.target, args=(node.args[0],), kwargs=kwargs)
        fused.meta = dict(last.meta)
        last.replace_all_uses_with(fused)
        for old in reversed(chain):
            gm.graph.erase_node(old)
    still_called = {node.target for node in gm.graph.nodes if node.op == "call_module"}
    for name in folded_bns - still_called:
        parent_name, _, child = name.rpartition(".")
        parent = gm.get_submodule(parent_name) if parent_name else gm
        delattr(parent, child)
    for node in gm.graph.nodes:
        if isinstance(node.type, str):  # a postponed annotation ('torch.Tensor'): FX cannot pickle it
            node.type = None
    gm.graph.lint()
    gm.recompile()


# --------------------------------------------------------------------- the fallback path
def _convert_modules(model: nn.Module, report: ConversionReport, fuse: bool) -> None:
    """Replace every nn.Conv2d in place; in nn.Sequential, fold Conv2d -> BatchNorm2d [-> activation]."""
    for parent_name, parent in list(model.named_modules()):
        children = list(parent.named_children())
        prefix = f"{parent_name}." if parent_name else ""
        for index, (child_name, child) in enumerate(children):
            if type(child) is not nn.Conv2d:
                continue
            where = prefix + child_name
            bn = activation = None
            parts = [where]
            if fuse and isinstance(parent, nn.Sequential):
                following = [module for _, module in children[index + 1: index + 3]]
                if following and isinstance(following[0], nn.modules.batchnorm._BatchNorm):
                    why = _bn_foldable(following[0], child)
                    if why is None:
                        bn = following[0]
                        setattr(parent, children[index + 1][0], nn.Identity())
                        parts.append(children[index + 1][0])
                        following = following[1:]
                    else:
                        report.not_fused.append((prefix + children[index + 1][0], why))
                        following = []
                if following:
                    act = _module_activation(following[0])
                    if act is not _NOT_AN_ACTIVATION:
                        activation = act
                        name = children[index + 1 + (bn is not None)][0]
                        setattr(parent, name, nn.Identity())
                        parts.append(str(Activation.parse(act)))
            setattr(parent, child_name, _tileconv_conv(child, bn, activation, residual_guard=False))
            report.convs_replaced += 1
            report.bn_folded += bn is not None
            report.activations_fused += activation is not None
            if len(parts) > 1:
                report.fused.append(" + ".join(parts))


def _count_unfused_module_bns(model: nn.Module, report: ConversionReport) -> None:
    for name, module in model.named_modules():
        if type(module) is nn.BatchNorm2d and not any(name == where for where, _ in report.not_fused):
            report.not_fused.append((name, "BatchNorm2d not folded (the model could not be traced)"))


# --------------------------------------------------------------------- the entry
def convert(
    model: nn.Module,
    *,
    inplace: bool = False,
    fuse: bool = True,
    example_inputs: torch.Tensor | Sequence[torch.Tensor] | None = None,
) -> nn.Module:
    """A model computing what ``model`` computes, with its convolutions on tileconv.

    - ``inplace=False`` converts a deep copy and leaves ``model`` as it was; ``inplace=True``
      saves the copy: the result shares tensors with ``model``, whose modules may be replaced
      (use the returned module, not ``model``).
    - ``fuse=False`` only swaps each ``nn.Conv2d`` for a :class:`tileconv.nn.Conv2d`, nothing else.
    - ``example_inputs``: a tensor or tuple of tensors ``model`` accepts; when given, shapes
      are propagated on it (in eval mode, without gradients) and a residual add is fused only
      where the operand is known to have the output's shape and dtype. Without it, adds are
      fused into :class:`ResidualConv2d`, which checks the shape at run time.

    Returns a ``torch.fx.GraphModule`` when ``model`` could be traced, else ``model`` (or its
    copy) with its convolutions replaced (a bare ``nn.Conv2d`` gives a :class:`tileconv.nn.Conv2d`);
    either way with ``.tileconv_report``, a :class:`ConversionReport` (``tileconv.convert.summary(report)`` renders it). Warns when
    the model could not be traced, listing what was not fused. Eval-mode BatchNorm only is
    folded: convert after ``model.eval()`` for inference.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    report = ConversionReport()
    source = model if inplace else copy.deepcopy(model)
    if type(source) is nn.Conv2d:  # the model is one convolution: it has no parent to swap it in
        converted = _tileconv_conv(source, None, None, residual_guard=False)
        report.convs_replaced = 1
        converted.tileconv_report = report
        return converted
    if fuse:
        try:
            gm = _trace(source)
        except Exception as error:  # noqa: BLE001 - any tracing failure means: no graph
            trace_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        else:
            report.traced = True
            if example_inputs is not None:
                _propagate_shapes(gm, example_inputs)
            _convert_graph(gm, report, shapes_known=example_inputs is not None)
            gm.tileconv_report = report
            return gm
    _convert_modules(source, report, fuse)
    if fuse:
        _count_unfused_module_bns(source, report)
        report.not_fused.insert(0, ("<model>", f"not traceable by torch.fx ({trace_error}): residual adds and "
                                    "activations outside nn.Sequential not fused"))
        warnings.warn(summary(report), stacklevel=2)
    source.tileconv_report = report
    return source


convert.summary = summary  # tileconv.convert is this function once the package exports it
