"""Which torch operators compute the problem: the one operator-role table (any process).

Two rules ask the same question, "does this operator compute the problem's values from
its inputs?", in two spellings:

* the static precheck reads Python source, where an operator is spelled
  ``torch.movedim`` (a top-level function) or ``Tensor.movedim`` (a method);
* the runtime provenance detector (RH-31) reads a ``torch.profiler`` trace, where the
  same operator is spelled ``aten::movedim``.

Each row of :data:`OPERATORS` names one operator, its role and every spelling it has,
so both rules read one vocabulary.  The roles:

``compute``
    computes values from the inputs (``matmul``, ``sum``, ``exp``, ...).
``allocate``
    allocates or fills memory; the values are constants (``empty``, ``zeros``, ``full``,
    ``fill_``, ``torch.tensor``).
``generate``
    produces values, but not from the inputs: random generators and their in-place
    samplers (``rand``, ``randn``, ``normal``, ``bernoulli``, ``uniform_``, ...) and
    ``arange``.  A candidate that returns generated values instead of the problem's
    result fails the output comparison; what matters here is only that generating
    them is not *computing the problem*, so neither rule credits it as compute.  (The
    static precheck always read them this way; the runtime rule used to count their
    CPU time as compute.)
``layout``
    views, copies, moves or concatenates data without arithmetic on it (``view``,
    ``movedim``, ``swapaxes``, ``broadcast_to``, ``cat``, ``clone``, ``to``, ``pad``).
    The composite ones (``movedim``, ``swapaxes``, ``unflatten``, ``tensor_split``,
    ``concat``) are layout in both spellings, as their decompositions (``permute``,
    ``transpose``, ``view``, ``slice``, ``cat``) always were.
``metadata``
    reads shapes, dtypes, flags or a scalar (``size``, ``numel``, ``is_floating_point``,
    ``result_type``, ``item``).
``runtime``
    the runtime's own state and objects: seeds, autograd modes, devices, dtypes,
    streams, generators (``manual_seed``, ``no_grad``, ``Stream``, ``record_stream``).

Every role but ``compute`` is non-compute.  An operator that is not in the table is
compute in both rules (deny by default), except a *method* call on an arbitrary
receiver: the static rule cannot tell a tensor from any other object there, so it
counts only the methods listed here as ``compute`` (:data:`TENSOR_COMPUTE_METHODS`).
Compute rows therefore carry only their ``Tensor.`` spelling.

Derived views: :data:`TORCH_NONCOMPUTE` (the names ``X`` of non-compute ``torch.X``),
:data:`NON_COMPUTE_PYTHON` (every non-compute Python spelling),
:data:`TENSOR_COMPUTE_METHODS` and :data:`NON_COMPUTE_ATEN` (every non-compute ATen
spelling).  :data:`NON_COMPUTE_NAMESPACES` and :data:`NN_CONTAINERS` are the
static-only namespace vocabulary (whole ``torch.*`` namespaces, ``torch.nn``
containers) that has no ATen counterpart.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMPUTE", "NN_CONTAINERS", "NON_COMPUTE_ATEN", "NON_COMPUTE_NAMESPACES", "NON_COMPUTE_PYTHON",
           "OPERATORS", "ROLES", "TENSOR_COMPUTE_METHODS", "TORCH_NONCOMPUTE", "Operator", "role_of"]

COMPUTE = "compute"
ROLES = (COMPUTE, "allocate", "generate", "layout", "metadata", "runtime")

# role, then every spelling of the operator: torch.X (function), Tensor.X (method),
# torch.nn.functional.X, aten::X (a profiler event).  The operator's name is the
# last component of its first spelling.
_TABLE = """
allocate  torch.empty aten::empty
allocate  torch.empty_like aten::empty_like
allocate  torch.empty_strided aten::empty_strided
allocate  torch.empty_permuted aten::empty_permuted
allocate  torch.zeros aten::zeros
allocate  torch.zeros_like aten::zeros_like
allocate  torch.ones aten::ones
allocate  torch.ones_like aten::ones_like
allocate  torch.full aten::full
allocate  torch.full_like aten::full_like
allocate  torch.fill_ Tensor.fill_ aten::fill_
allocate  torch.zero_ Tensor.zero_ aten::zero_
allocate  Tensor.new_empty aten::new_empty
allocate  Tensor.new_empty_strided aten::new_empty_strided
allocate  Tensor.new_zeros aten::new_zeros
allocate  torch.tensor
allocate  aten::lift_fresh
allocate  torch.as_tensor
allocate  torch.asarray
allocate  torch.from_numpy
allocate  torch.from_dlpack
allocate  Tensor.resize_ aten::resize_
allocate  Tensor.set_ aten::set_

generate  torch.arange aten::arange
generate  torch.rand aten::rand
generate  torch.rand_like aten::rand_like
generate  torch.randn aten::randn
generate  torch.randn_like aten::randn_like
generate  torch.randint aten::randint
generate  torch.randint_like aten::randint_like
generate  torch.randperm aten::randperm
generate  torch.normal aten::normal
generate  torch.bernoulli Tensor.bernoulli aten::bernoulli
generate  Tensor.bernoulli_ aten::bernoulli_
generate  Tensor.uniform_ aten::uniform_
generate  Tensor.normal_ aten::normal_
generate  Tensor.random_ aten::random_
generate  Tensor.exponential_ aten::exponential_
generate  Tensor.cauchy_ aten::cauchy_
generate  Tensor.log_normal_ aten::log_normal_
generate  Tensor.geometric_ aten::geometric_

layout    torch.reshape Tensor.reshape aten::reshape
layout    Tensor.view aten::view
layout    Tensor.view_as aten::view_as
layout    aten::_reshape_alias
layout    aten::_unsafe_view
layout    aten::alias
layout    torch.as_strided Tensor.as_strided aten::as_strided
layout    Tensor.contiguous aten::contiguous
layout    torch.clone Tensor.clone aten::clone
layout    Tensor.copy_ aten::copy_
layout    Tensor.to aten::to
layout    aten::_to_copy
layout    torch.detach Tensor.detach aten::detach
layout    torch.detach_ Tensor.detach_ aten::detach_
layout    torch.resolve_conj Tensor.resolve_conj aten::resolve_conj
layout    torch.resolve_neg Tensor.resolve_neg aten::resolve_neg
layout    torch.t Tensor.t aten::t
layout    torch.transpose Tensor.transpose aten::transpose
layout    torch.swapaxes Tensor.swapaxes aten::swapaxes
layout    torch.permute Tensor.permute aten::permute
layout    torch.movedim Tensor.movedim aten::movedim
layout    Tensor.expand aten::expand
layout    Tensor.expand_as aten::expand_as
layout    torch.broadcast_to Tensor.broadcast_to aten::broadcast_to
layout    torch.squeeze Tensor.squeeze aten::squeeze
layout    torch.unsqueeze Tensor.unsqueeze aten::unsqueeze
layout    torch.flatten Tensor.flatten aten::flatten
layout    torch.unflatten Tensor.unflatten aten::unflatten
layout    torch.select Tensor.select aten::select
layout    aten::slice
layout    torch.narrow Tensor.narrow aten::narrow
layout    torch.split Tensor.split aten::split
layout    torch.tensor_split Tensor.tensor_split aten::tensor_split
layout    torch.chunk Tensor.chunk aten::chunk
layout    torch.unbind Tensor.unbind aten::unbind
layout    Tensor.unfold aten::unfold
layout    torch.view_as_real aten::view_as_real
layout    torch.view_as_complex aten::view_as_complex
layout    torch.cat aten::cat
layout    torch.concat aten::concat
layout    torch.concatenate aten::concatenate
layout    torch.stack aten::stack
layout    torch.nn.functional.pad aten::pad
layout    torch.constant_pad_nd aten::constant_pad_nd

metadata  torch.is_tensor
metadata  torch.is_storage
metadata  torch.is_floating_point Tensor.is_floating_point aten::is_floating_point
metadata  torch.is_complex Tensor.is_complex aten::is_complex
metadata  torch.is_nonzero Tensor.is_nonzero aten::is_nonzero
metadata  torch.numel Tensor.numel aten::numel
metadata  Tensor.size aten::size
metadata  Tensor.stride aten::stride
metadata  Tensor.dim aten::dim
metadata  Tensor.is_contiguous aten::is_contiguous
metadata  Tensor.item aten::item
metadata  aten::_local_scalar_dense
metadata  torch.result_type aten::result_type
metadata  torch.promote_types aten::promote_types
metadata  torch.can_cast aten::can_cast
metadata  torch.broadcast_shapes
metadata  torch.get_default_dtype
metadata  torch.finfo
metadata  torch.iinfo
metadata  torch.typename
metadata  torch.get_device Tensor.get_device

runtime   torch.manual_seed
runtime   torch.seed
runtime   torch.initial_seed
runtime   torch.no_grad
runtime   torch.inference_mode
runtime   torch.enable_grad
runtime   torch.set_grad_enabled
runtime   torch.is_grad_enabled
runtime   torch.is_inference_mode_enabled
runtime   torch.set_printoptions
runtime   torch.device
runtime   torch.dtype
runtime   torch.Size
runtime   torch.contiguous_format
runtime   torch.Generator
runtime   torch.Tensor
runtime   torch.Stream
runtime   torch.Event
runtime   Tensor.record_stream aten::record_stream
"""

# Tensor methods that compute (the static rule's method vocabulary; see the module docstring)
_COMPUTE_METHODS = """
matmul mm bmm mv dot vdot addmm addmm_ addbmm baddbmm addmv addr outer ger sum nansum mean nanmean prod cumsum
cumprod cummax cummin logcumsumexp logsumexp max min amax amin aminmax argmax argmin std var norm renorm softmax
log_softmax relu relu_ sigmoid sigmoid_ tanh tanh_ exp exp_ expm1 log log_ log1p log2 log10 sqrt sqrt_ rsqrt pow
pow_ abs abs_ neg reciprocal clamp clamp_ clip clip_ clamp_min clamp_max sin cos erf add add_ sub sub_ mul mul_ div
div_ true_divide floor_divide fmod remainder addcmul addcdiv lerp maximum minimum masked_fill masked_fill_ triu tril
sort topk kthvalue median mode square sign round floor ceil diag trace cross scatter_add scatter_add_ index_add
index_add_ gather index_select matrix_power matrix_exp inverse cholesky det logdet einsum hardtanh silu gelu mish
softplus square_ __matmul__ __rmatmul__ conv2d conv1d conv3d linear layer_norm group_norm batch_norm instance_norm
tensordot kron cumulative_trapezoid trapz histc
"""

# Whole torch namespaces (and prefixes) whose callables are not the problem's compute
# (static rule only: these have no single ATen spelling)
NON_COMPUTE_NAMESPACES = (
    "torch.cuda", "torch.backends", "torch.utils", "torch.library", "torch.autograd", "torch.jit", "torch.compile",
    "torch._dynamo", "torch._inductor", "torch.export", "torch.compiler", "torch.distributed", "torch.testing",
    "torch.nn.init", "torch.nn.Parameter", "torch.nn.parameter", "torch.nn.Module", "torch.nn.ModuleList",
    "torch.nn.ModuleDict", "torch.nn.ParameterList", "torch.nn.ParameterDict", "torch.nn.Identity",
    "torch.nn.Buffer", "torch.nn.utils", "torch.types", "torch.version", "torch.hub", "torch.multiprocessing",
    "torch.profiler", "torch.overrides", "torch.amp", "torch.cpu", "torch.mps", "torch.xpu", "torch.random",
    "torch.fx", "torch.futures", "torch.classes", "torch.serialization", "torch.load", "torch.save", "torch.set_",
    "torch.get_", "torch.use_deterministic_algorithms", "torch.are_deterministic", "torch.is_", "torch.dtype",
    "torch.float", "torch.half", "torch.bfloat16", "torch.int", "torch.long", "torch.bool", "torch.double")
# torch.nn classes that hold modules and parameters rather than compute
NN_CONTAINERS = frozenset({"Module", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict",
                           "Identity", "Buffer", "UninitializedParameter", "UninitializedBuffer"})


@dataclass(frozen=True)
class Operator:
    name: str
    role: str
    python: tuple[str, ...]  # torch.X / Tensor.X / torch.nn.functional.X
    aten: tuple[str, ...]  # aten::X


def _parse() -> tuple[Operator, ...]:
    rows = [(line.split()[0], line.split()[1:]) for line in _TABLE.splitlines() if line.strip()]
    rows += [(COMPUTE, [f"Tensor.{m}"]) for m in _COMPUTE_METHODS.split()]
    ops, seen = [], set()
    for role, spellings in rows:
        name = spellings[0].replace("::", ".").split(".")[-1]
        if role not in ROLES or seen & set(spellings):  # one row per spelling: one role per operator
            raise ValueError(f"operator table: bad row {role} {' '.join(spellings)}")
        seen |= set(spellings)
        ops.append(Operator(name, role, tuple(s for s in spellings if not s.startswith("aten::")),
                            tuple(s for s in spellings if s.startswith("aten::"))))
    return tuple(ops)


OPERATORS: tuple[Operator, ...] = _parse()
NON_COMPUTE_PYTHON = frozenset(s for op in OPERATORS if op.role != COMPUTE for s in op.python)
TORCH_NONCOMPUTE = frozenset(s.split(".", 1)[1] for s in NON_COMPUTE_PYTHON if s.count(".") == 1
                             and s.startswith("torch."))
TENSOR_COMPUTE_METHODS = frozenset(s.split(".", 1)[1] for op in OPERATORS if op.role == COMPUTE for s in op.python)
NON_COMPUTE_ATEN = frozenset(s for op in OPERATORS if op.role != COMPUTE for s in op.aten)
_BY_SPELLING = {s: op for op in OPERATORS for s in op.python + op.aten}


def role_of(spelling: str) -> str | None:
    """The role of the operator spelled ``spelling`` (``torch.movedim``, ``aten::movedim``), or None."""
    op = _BY_SPELLING.get(spelling)
    return op.role if op is not None else None
